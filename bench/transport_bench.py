"""The transport's own latency per model call, this tree beside another build, interleaved run by run, medians.

    python bench/transport_bench.py --old /var/tmp/s10-base [--runs 3] [--calls 16] [--thinking 0.3]

A child process (`bench/transport_probe.py`, run by each tree's interpreter) makes `--calls` model calls with
the provider alone (no agent loop) against the scripted server on loopback, which runs in this process and
answers each after `--thinking` seconds with a tool call, as a model does. The request is the first 60
messages of a real session (`../shared/trajectories`, the first file), its system prompt and its tools.
Two windows per call, both between a clock read in one process and one read in the other (CLOCK_MONOTONIC
is the machine's):

- **send -> at server**: from the child's `provider.stream(request)` to the server accepting the connection
  (a new connection per request, the scripted server's default) or reading the request's first line (kept
  alive: the `-kept` cases of `--only`, run by default): encoding the body, building the request, handing it
  to the thread that sends it.
- **last byte -> done**: from the server's reply's last byte written to the child holding `ResponseDone`:
  the reading thread woken by the socket, the loop woken by it, the parse.

Both wires (`openai`, `anthropic`), with and without a kept-alive connection. Also the child's main-thread
and whole-process CPU per call, and the user-space instructions of its main thread and of all its threads
(`thread_instructions.py`; what a loaded machine does not change): the thinking is idle time, so this is
the transport's own work (and the main thread's polls of its cancel token while it waits).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from latency_bench import KeptAliveLLM, TimedLLM, Tree  # noqa: E402

from swecli.testing.server import Call, Reply, Step  # noqa: E402
from swecli.testing.shared import trajectory_paths  # noqa: E402

PROBE = ROOT / "bench" / "transport_probe.py"


def one_run(tree: Tree, wire: str, kept: bool, calls: int, thinking: float) -> list[tuple[float, ...]]:
    """Per call after the first: (send -> at server, last byte -> done, main CPU, process CPU) in seconds, then
    the main thread's and all threads' user-space instructions (millions)."""
    def think(body: dict[str, object]) -> Reply:
        time.sleep(thinking)
        return Reply(calls=[Call("bash", {"command": "true"})])

    steps: list[Step] = [think for _ in range(calls)]
    llm = (KeptAliveLLM if kept else TimedLLM)(steps)
    llm.wire = wire  # type: ignore[assignment]
    with llm, tempfile.NamedTemporaryFile(prefix="transport-", suffix=".jsonl") as log:
        done = subprocess.run([tree.python, str(PROBE), llm.base_url, wire, str(calls), log.name,
                               str(trajectory_paths()[0])],
                              env=tree.env(), capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"{tree.label}: the probe failed: {done.stderr[-2000:]}")
        marks = [json.loads(line) for line in Path(log.name).read_text().splitlines()]
    rows = []
    for i, mark in enumerate(marks):
        rows.append((llm.accepted[i] - mark["send"], mark["done"] - llm.written[i], mark["cpu"], mark["all"],
                     mark["ins"], mark["ins_all"]))
    return rows[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, required=True, help="a checkout with its own .venv")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=16)
    parser.add_argument("--thinking", type=float, default=0.3)
    parser.add_argument("--only", default="", help="comma-separated of openai,anthropic,openai-kept,anthropic-kept")
    args = parser.parse_args()
    trees = [Tree("old", args.old.resolve()), Tree("new", ROOT)]
    cases = [(wire, kept) for kept in (False, True) for wire in ("openai", "anthropic")]
    if args.only:
        wanted = args.only.split(",")
        cases = [c for c in cases if f"{c[0]}{'-kept' if c[1] else ''}" in wanted]
    results: dict[tuple[str, str, bool], list[list[float]]] = {}
    for run in range(args.runs):
        for wire, kept in cases:
            for tree in trees if run % 2 == 0 else trees[::-1]:
                rows = one_run(tree, wire, kept, args.calls, args.thinking)
                per_run = [statistics.median(r[k] for r in rows) for k in range(6)]
                results.setdefault((tree.label, wire, kept), []).append(per_run)
        print(f"run {run + 1}/{args.runs} done", file=sys.stderr)
    print(f"transport per model call ({args.calls} calls a run, the model thinking {args.thinking} s; medians of "
          f"{args.runs} runs of per-run medians, the first call left out)\n")
    print("| wire | connection | build | send -> at server | last byte -> done | main thread CPU | process CPU "
          "| M instructions, main thread | M instructions, all threads |")
    print("|---|---|---|---|---|---|---|---|---|")
    for wire, kept in cases:
        for tree in trees:
            runs = results[(tree.label, wire, kept)]
            cells = [statistics.median(r[k] for r in runs) * 1000 for k in range(4)]
            ins = [statistics.median(r[k] for r in runs) for k in (4, 5)]
            print(f"| {wire} | {'kept' if kept else 'new'} | {tree.label} | {cells[0]:.2f} ms | {cells[1]:.2f} ms | "
                  f"{cells[2]:.2f} ms | {cells[3]:.2f} ms | {ins[0]:.3f} | {ins[1]:.3f} |")


if __name__ == "__main__":
    main()
