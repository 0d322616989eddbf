"""Make model calls with a provider alone and note when each began and when its `ResponseDone` came
(`transport_bench.py` runs it with each tree's interpreter; standard library and swecli's provider API only).

    python bench/transport_probe.py BASE_URL WIRE CALLS LOG
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    base_url, wire, calls, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    from swecli.llm.base import ModelRequest, ResponseDone
    from swecli.testing.shared import load_trajectory, trajectory_paths

    if wire == "anthropic":
        from swecli.llm.anthropic import AnthropicProvider as Provider
    else:
        from swecli.llm.openai import OpenAIProvider as Provider  # type: ignore[assignment]
    system, tools, history = load_trajectory(trajectory_paths()[0])
    cut = 60  # a point where every call has its results: the next message is no tool result
    while cut < len(history) and type(history[cut]).__name__ == "ToolMessage":
        cut += 1
    request = ModelRequest(system=system, messages=tuple(history[:cut]), tools=tools)
    provider = Provider(model="scripted-model", base_url=base_url, api_key="bench-key")
    marks = []
    for _ in range(calls):
        cpu, whole = time.thread_time(), time.process_time()
        send = time.monotonic()
        for event in provider.stream(request):
            if isinstance(event, ResponseDone):
                done = time.monotonic()
        marks.append({"send": send, "done": done, "cpu": time.thread_time() - cpu, "all": time.process_time() - whole})
    provider.close()
    with open(log, "w") as out:
        out.writelines(json.dumps(mark) + "\n" for mark in marks)


if __name__ == "__main__":
    main()
