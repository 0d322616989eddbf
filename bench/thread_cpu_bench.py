"""Each thread's CPU time when `-p`'s first chat request connects, this tree beside another, interleaved.

    python bench/thread_cpu_bench.py --old /var/tmp/s11-base [--runs 30] [--task "fix the greeting typo in greet"]

Every thread's time on a CPU comes from `/proc/self/task/TID/schedstat` (nanoseconds, not the 10 ms ticks of
`stat`), read at the `swecli-stream` thread's first connect: threads still running then, and threads that had
ended (their time noted as they end: `Thread.run` is wrapped in the measured process, nothing in swecli is).
On two cores under the GIL, every ms a thread beside the main one spends in the interpreter before the request
is a ms the main thread may wait; this is where `latency_bench.py`'s "CPU when it is sent" goes, thread by
thread. The project is `latency_bench.sample_project` (2 files, warm after the first run); medians.

Run with `--probe ARGS...` it is the measured process itself (`python -m swecli ARGS...`, the result written
to `$THREAD_CPU_OUT`): standard library only, so the other tree's interpreter runs it unchanged.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _on_cpu_ms(tid: int | str) -> float | None:
    try:
        with open(f"/proc/self/task/{tid}/schedstat") as handle:
            return int(handle.read().split()[0]) / 1e6
    except OSError:
        return None


def probe(argv: list[str]) -> None:
    """Run swecli with `argv`, writing each thread's CPU ms at the chat request's connect to $THREAD_CPU_OUT."""
    import runpy

    out, start, ended = os.environ.pop("THREAD_CPU_OUT"), time.monotonic(), {}
    run = threading.Thread.run

    def timed_run(self: threading.Thread) -> None:
        try:
            run(self)
        finally:
            ended[f"{self.name}#{threading.get_native_id()}"] = _on_cpu_ms(threading.get_native_id())

    threading.Thread.run = timed_run  # type: ignore[method-assign]
    written: list[bool] = []

    def note(event: str, args: tuple[Any, ...]) -> None:
        if event != "socket.connect" or threading.current_thread().name != "swecli-stream" or written:
            return
        written.append(True)
        names = {t.native_id: t.name for t in threading.enumerate()}
        live = {f"{names.get(int(tid), tid)}#{tid}": _on_cpu_ms(tid) for tid in os.listdir("/proc/self/task")}
        with open(out, "w") as handle:
            json.dump({"t": (time.monotonic() - start) * 1000, "cpu": time.process_time() * 1000,
                       "threads": {**ended, **live}}, handle)

    sys.addaudithook(note)
    sys.argv = ["swecli", *argv]
    runpy.run_module("swecli", run_name="__main__", alter_sys=True)


def measure(trees: list[Path], runs: int, task: str) -> dict[Path, dict[str, list[float]]]:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    from latency_bench import sample_project

    from swecli.testing.server import Reply, ScriptedLLM

    base = Path(tempfile.mkdtemp(prefix="thread-cpu-"))
    project, found = sample_project(base), {tree: collections.defaultdict(list) for tree in trees}
    out = base / "threads.json"
    for run in range(runs + 1):  # the first round warms the caches and is not counted
        for tree in trees if run % 2 else trees[::-1]:
            home = base / f"home-{trees.index(tree)}"
            env = {k: v for k, v in os.environ.items() if not k.startswith("SWECLI_") and not k.endswith("_API_KEY")}
            env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), XDG_CONFIG_HOME=str(home / ".config"),
                       TERM="xterm-256color", THREAD_CPU_OUT=str(out))
            with ScriptedLLM([Reply("done")]) as llm:
                start = time.monotonic()
                done = subprocess.run([str(tree / ".venv/bin/python"), __file__, "--probe", "--provider",
                                       "openai-compatible", "--base-url", llm.base_url, "--model", "scripted-model",
                                       "-p", task], cwd=project, env=env, capture_output=True, text=True,
                                      stdin=subprocess.DEVNULL, timeout=300)
                ended = time.monotonic() - start
                if done.returncode != 0 or not llm.times:
                    raise RuntimeError(f"{tree}: swecli -p failed: {done.stderr[-2000:]}")
            if run:
                _add(found[tree], json.loads(out.read_text()), (llm.times[0] - start) * 1000, ended * 1000)
    return found


def _add(rows: dict[str, list[float]], sample: dict[str, Any], first: float, ended: float) -> None:
    by_name: dict[str, float] = collections.Counter()
    for key, ms in sample["threads"].items():
        by_name[key.rsplit("#", 1)[0]] += ms or 0.0
    rows["first request, wall"].append(first)
    rows["exit, wall"].append(ended)
    rows["process CPU at the request"].append(sample["cpu"])
    rows["main thread"].append(by_name.pop("MainThread", 0.0))
    rows["other threads"].append(sum(by_name.values()))
    for name, ms in by_name.items():
        rows[f"thread {name}"].append(ms)


def main() -> None:
    if sys.argv[1:2] == ["--probe"]:
        probe(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", required=True, type=Path, help="the other tree (with its own .venv)")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--task", default="fix the greeting typo in greet")
    args = parser.parse_args()
    trees = [args.old.resolve(), ROOT]
    found = measure(trees, args.runs, args.task)
    names = list(dict.fromkeys(name for tree in trees for name in found[tree]))
    print(f"| CPU ms at the first request's connect (median of {args.runs}) | old | new |\n|---|---|---|")
    for name in names:
        cells = [f"{statistics.median(found[tree][name]):.1f}" if found[tree].get(name) else "-" for tree in trees]
        print(f"| {name} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
