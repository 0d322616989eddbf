"""How long a sandboxed bash call takes once its spare is ready: this tree beside another build, each in
its own process, interleaved, medians.

    python bench/command_end_bench.py --old /var/tmp/percall3-base [--runs 8] [--calls 10]

Each run starts one process per build that prepares a spare sandbox (`swecli/tools/spare.py`), waits until
it is started and 0.3 s more (as while a model thinks), then times the bash tool's `run_command("true")`
in it, `--calls` times: the layout checked again, the command handed over, bash run, its end seen, the
checks after it. Printed per build: the wall median (p25, p75), the calling thread's CPU, and the parts
inside `run_command` (`_supervise`: hand-over to the end seen; `_run`: that and the clean-up), beside
`bash -c true` forked alone (the command's own time). The project is a git repository with a fake home,
as `sandbox_bench.py` makes it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ONE_BUILD = r"""
import json, sys, tempfile, time
from pathlib import Path
tree = sys.argv[1]
sys.path[:0] = [tree, tree + "/bench"]
from sandbox_bench import make_place
import swecli.tools.bash as bash
from swecli.tools.base import ToolContext
from swecli.tools.sandbox import Sandbox
from swecli.tools.spare import Spares

base = Path(tempfile.mkdtemp(prefix="command-end-", dir="/var/tmp"))
home, project = make_place(base)
box = Sandbox.for_project(project, home=home, env={"HOME": str(home)})
ctx = ToolContext(root=project, sandbox=box)
spares = Spares(take_wait=600, quick_answer=0)
parts = {}

def timed(name, fn):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            parts[name] = (time.perf_counter() - start) * 1000
    return wrapper

bash._supervise, bash._run = timed("supervise", bash._supervise), timed("run", bash._run)
rows = []
for call in range(int(sys.argv[2]) + 1):  # the first warms the filter and the caches
    spares.prepare(box, bash.command_environment(ctx))
    assert spares.wait_started(600)
    time.sleep(0.3)
    start, cpu = time.perf_counter(), time.thread_time()
    outcome = bash.run_command("true", ctx, 60, box, spares)
    rows.append([(time.perf_counter() - start) * 1000, (time.thread_time() - cpu) * 1000, parts["supervise"],
                 parts["run"]])
    assert outcome.exit_code == 0
spares.close()
assert spares.used == len(rows), "a spare was not used"
print(json.dumps(rows[1:]))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", required=True, help="a checkout of the build to compare with (with its own .venv)")
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args()
    trees = {"old": Path(args.old).resolve(), "new": ROOT}
    rows: dict[str, list[list[float]]] = {name: [] for name in trees}
    alone: list[float] = []
    for run in range(args.runs):
        for name in list(trees) if run % 2 == 0 else list(trees)[::-1]:
            tree = trees[name]
            done = subprocess.run([str(tree / ".venv" / "bin" / "python"), "-c", ONE_BUILD, str(tree), str(args.calls)],
                                  capture_output=True, text=True, check=True)
            rows[name] += json.loads(done.stdout)
        for _ in range(args.calls):
            start = time.perf_counter()
            subprocess.run(["/bin/bash", "-c", "true"], check=True)
            alone.append((time.perf_counter() - start) * 1000)
        print(f"run {run + 1}/{args.runs} done", file=sys.stderr)
    print(f"load average {os.getloadavg()[0]:.1f}; `bash -c true` alone {statistics.median(alone):.2f} ms; "
          f"{args.runs} runs x {args.calls} calls per build, interleaved\n")
    print("| build | run_command in a spare, wall median (p25-p75) | calling thread's CPU | hand-over to end seen "
          "(`_supervise`) | `_run` |")
    print("|---|---|---|---|---|")
    for name, values in rows.items():
        wall = [v[0] for v in values]
        p25, _, p75 = statistics.quantiles(wall, n=4)
        print(f"| {name} | {statistics.median(wall):.2f} ms ({p25:.1f}-{p75:.1f}) | "
              f"{statistics.median(v[1] for v in values):.2f} ms | {statistics.median(v[2] for v in values):.2f} ms | "
              f"{statistics.median(v[3] for v in values):.2f} ms |")


if __name__ == "__main__":
    main()
