"""Make model calls with a provider alone and note when each began and when its `ResponseDone` came
(`transport_bench.py` runs it with each tree's interpreter; standard library, swecli's provider API and
`thread_instructions.py` only): the clock at both ends, and the main thread's and all threads' CPU and
user-space instructions over the call.

    python bench/transport_probe.py BASE_URL WIRE CALLS LOG TRAJECTORY
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from thread_instructions import count_threads, instruction_counter, millions, per_thread

    count_threads()  # the request threads are started later, each with a counter
    main_counter = instruction_counter()

    def instructions() -> tuple[float, float]:
        own = millions(main_counter) or 0.0
        return own, own + sum(per_thread().values())

    base_url, wire, calls, log, trajectory = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
    from swecli.llm.base import ModelRequest, ResponseDone
    from swecli.testing.shared import load_trajectory

    if wire == "anthropic":
        from swecli.llm.anthropic import AnthropicProvider as Provider
    else:
        from swecli.llm.openai import OpenAIProvider as Provider  # type: ignore[assignment]
    system, tools, history = load_trajectory(Path(trajectory))  # given: an older tree may not find ../shared
    cut = 60  # a point where every call has its results: the next message is no tool result
    while cut < len(history) and type(history[cut]).__name__ == "ToolMessage":
        cut += 1
    request = ModelRequest(system=system, messages=tuple(history[:cut]), tools=tools)
    provider = Provider(model="scripted-model", base_url=base_url, api_key="bench-key")
    marks = []
    for _ in range(calls):
        cpu, whole = time.thread_time(), time.process_time()
        ins, ins_all = instructions()
        send = time.monotonic()
        for event in provider.stream(request):
            if isinstance(event, ResponseDone):
                done = time.monotonic()
        after, after_all = instructions()
        marks.append({"send": send, "done": done, "cpu": time.thread_time() - cpu, "all": time.process_time() - whole,
                      "ins": after - ins, "ins_all": after_all - ins_all})
    provider.close()
    with open(log, "w") as out:
        out.writelines(json.dumps(mark) + "\n" for mark in marks)


if __name__ == "__main__":
    main()
