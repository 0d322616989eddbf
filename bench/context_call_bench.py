"""The context engine's own work per tool call, as the agent loop drives it: `prepare`, `request`, `observe`
and `tool_content` around one light bash call (`true`), in user-space instructions of the calling thread
(what a loaded machine inflates least) and thread CPU, this tree beside another build, interleaved.

    python bench/context_call_bench.py [--old /var/tmp/s9-base] [--runs 3] [--calls 200]

Each run is a child process of the tree's own interpreter (`<tree>/.venv/bin/python`, this file) that builds
the engine a session builds (`swecli.testing.replay.engine`: default settings, every mechanism on, a 200k
window), replays a history the way the loop does, then makes `--calls` light calls: a prompt, then per call
the assistant's bash call and its `exit code 0` result. Histories: `empty` (the prompt alone, as
`call_path_bench.py`'s session) and, from `../shared/trajectories`, `06` (mini-swe-agent, 376 messages, ~75k
tokens: the same calls at the end of a long real session). Medians per call, the first five left out; then
the median of the runs. `bench/call_path_bench.py` measures the whole loop in a real `swecli -p`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("prepare", "request", "observe", "tool_content")
HISTORIES = ("empty", "06")


def child(history: str, calls: int) -> dict[str, list[tuple[int, float]]]:
    """(instructions, thread CPU seconds) of each part, per light call, in this process."""
    from thread_instructions import instruction_counter

    from swecli.context.manager import has_open_calls
    from swecli.context.tokens import load_encoding
    from swecli.messages import AssistantMessage, Message, ToolCall, ToolMessage, Usage, UserMessage
    from swecli.testing.model import ScriptedSummarizer
    from swecli.testing.replay import engine
    from swecli.testing.shared import load_trajectory, trajectory_paths
    from swecli.tools.base import ToolResult

    load_encoding("o200k_base")
    fd = instruction_counter()
    assert fd is not None, "no instruction counter (perf_event_paranoid?)"

    def now() -> tuple[int, float]:
        return struct.unpack("q", os.read(fd, 8))[0], time.thread_time()

    paths = trajectory_paths()
    system, tools, source = load_trajectory(next(p for p in paths if p.name.startswith(history))
                                            if history != "empty" else paths[0])
    source = source if history != "empty" else []
    provider = ScriptedSummarizer()
    spent: dict[str, list[tuple[int, float]]] = {part: [] for part in PARTS}
    with tempfile.TemporaryDirectory() as root:
        context = engine(system, tools, 200_000, Path(root))
        live: list[Message] = []
        for message in source:  # the loop's own calls, the recorded answers standing in for the model's
            if isinstance(message, AssistantMessage) and live:
                live = context.prepare(live, provider)
                context.observe(context.request(live), Usage(input_tokens=context.meter.last_request_tokens))
            live.append(message)
        while has_open_calls(live):
            live.pop()
        live.append(UserMessage(content="Run the test suite and tell me whether it passes; fix what fails."))
        for n in range(calls):
            marks = [now()]
            live = context.prepare(live, provider)
            marks.append(now())
            request = context.request(live)
            marks.append(now())
            context.observe(request, Usage(input_tokens=context.meter.last_request_tokens, output_tokens=20))
            marks.append(now())
            call = ToolCall(id=f"call_light_{n}", name="bash", arguments=json.dumps({"command": "true"}))
            live.append(AssistantMessage(tool_calls=(call,)))
            marks.append(now())
            content = context.tool_content(call, ToolResult("exit code 0"))
            marks.append(now())
            live.append(ToolMessage(tool_call_id=call.id, name="bash", content=content))
            for part, (start, end) in zip(PARTS, [(0, 1), (1, 2), (2, 3), (4, 5)], strict=True):
                spent[part].append((marks[end][0] - marks[start][0], marks[end][1] - marks[start][1]))
        context.close()
    return spent


def one_run(tree: Path, history: str, calls: int) -> dict[str, tuple[float, float]]:
    """(median instructions, median CPU seconds) of each part, per call, in a child process of `tree`."""
    python = tree / ".venv" / "bin" / "python"
    done = subprocess.run([str(python), __file__, "--child", history, "--calls", str(calls)], cwd=tree,
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: {done.stderr[-2000:]}")
    spent: dict[str, list[list[float]]] = json.loads(done.stdout)
    return {part: (statistics.median(i for i, _ in values[5:]), statistics.median(c for _, c in values[5:]))
            for part, values in spent.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", help="a checkout of the build to compare with (with its own .venv)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        json.dump(child(args.child, args.calls), sys.stdout)
        return
    trees = ([("old", Path(args.old).resolve())] if args.old else []) + [("new", ROOT)]
    found: dict[tuple[str, str], list[dict[str, tuple[float, float]]]] = {}
    for run in range(args.runs):
        for label, tree in trees if run % 2 == 0 else trees[::-1]:
            for history in HISTORIES:
                found.setdefault((label, history), []).append(one_run(tree, history, args.calls))
        print(f"run {run + 1}/{args.runs} done", file=sys.stderr)
    print(f"per light call ({args.calls} calls a run, medians per call, median of {args.runs} runs): thousands of "
          "user-space instructions / thread CPU ms\n")
    print("| history | build | " + " | ".join(PARTS) + " | all four |")
    print("|---|---|" + "---|" * (len(PARTS) + 1))
    for history in HISTORIES:
        for label, _ in trees:
            runs = found[(label, history)]
            cells = [_cell(runs, part) for part in PARTS]
            total = _cell_sum(runs)
            print(f"| {history} | {label} | " + " | ".join(cells) + f" | {total} |")


def _cell(runs: list[dict[str, Any]], part: str) -> str:
    instructions = statistics.median(run[part][0] for run in runs)
    cpu = statistics.median(run[part][1] for run in runs)
    return f"{instructions / 1000:,.0f}k / {cpu * 1000:.2f}"


def _cell_sum(runs: list[dict[str, Any]]) -> str:
    instructions = statistics.median(sum(run[part][0] for part in PARTS) for run in runs)
    cpu = statistics.median(sum(run[part][1] for part in PARTS) for run in runs)
    return f"{instructions / 1000:,.0f}k / {cpu * 1000:.2f}"


if __name__ == "__main__":
    main()
