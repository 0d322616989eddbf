"""What a swecli start costs before it does its work, in instructions (which no load changes): the main
thread's and all threads' user-space instructions (millions) of `swecli -p` to its first chat request, of
the REPL to its first drawn prompt, of a whole `-p` run to its exit in a fresh copy of the project (what each
of the test suite's e2e processes pays: a cold map and index), and of the floor (`start_floor.py`: typer +
pydantic + httpx alone on the same path), each tree beside the others, runs interleaved, medians. The 2-file
sample project of `latency_bench.py` (warm: its map and index are built by a first run that is not counted),
the scripted server on loopback, a fresh HOME per tree.

    python bench/start_instructions.py [--old DIR ...] [--runs 3]

A tree is a checkout with its own `.venv` (the newest, this one, is always measured). Counts start at the
probe (`start_probe.py`), so the interpreter's own start (~60 M) is not in them; within one tree they
repeat to ~0.5% on the main thread, ~3% over all threads.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import pexpect  # noqa: E402
from latency_bench import TASK, Tree, fresh_copy, sample_project, wait_for_builders  # noqa: E402

from swecli.testing.server import Reply, ScriptedLLM  # noqa: E402

PROBE = ROOT / "bench" / "start_probe.py"
FLOOR = ROOT / "bench" / "start_floor.py"
CASES = {
    "p": "`-p`, to its first request",
    "repl": "REPL, to its prompt",
    "fresh": "`-p`, whole run to its exit, in a fresh copy of the project",
    "whole": "the same, children included (`perf stat -e instructions:u`, all threads from the interpreter's start)",
    "floor": "floor: typer + pydantic + httpx alone, to the request",
}


def probe(tree: Tree, project: Path, case: str) -> dict[str, float]:
    """One run of `case`: {"main": M, "all": M}."""
    if case in ("fresh", "whole"):
        project = fresh_copy(project, project.parent, f"fresh-{tree.label}")
    if case == "whole":
        return perf_stat(tree, project)
    with tempfile.NamedTemporaryFile(prefix="start-", suffix=".json") as log, \
            ScriptedLLM([Reply("done")], strict=False) as llm:
        argv = tree.argv(llm, *(["-p", TASK] if case != "repl" else []))
        argv[1:3] = [str(PROBE)]  # `python -m swecli` -> `python start_probe.py`
        until = {"repl": "prompt", "fresh": "exit"}.get(case, "request")
        env = tree.env(PROBE_LOG=log.name, PROBE_UNTIL=until, COLUMNS="160", LINES="50")
        if case == "floor":
            env["PROBE_SCRIPT"] = str(FLOOR)
        if case == "repl":
            child = pexpect.spawn(argv[0], argv[1:], cwd=str(project), env=env, dimensions=(50, 160), timeout=300)
            child.expect(pexpect.EOF)
        else:
            subprocess.run(argv, cwd=project, env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=300)
        text = Path(log.name).read_text()
    if case == "fresh":
        wait_for_builders(project)
    if not text:
        raise RuntimeError(f"{tree.label}: {case} did not reach its end point")
    found = json.loads(text)
    return {"main": found["main"], "all": found["main"] + sum(found["threads"].values())}


def perf_stat(tree: Tree, project: Path) -> dict[str, float]:
    """`perf stat -e instructions:u` of a whole `-p` run, children included (no per-thread split: "main" is
    left out of the table as 0)."""
    with tempfile.NamedTemporaryFile(prefix="perf-", suffix=".csv") as out, \
            ScriptedLLM([Reply("done")], strict=False) as llm:
        subprocess.run(["perf", "stat", "-x,", "-e", "instructions:u", "-o", out.name, *tree.argv(llm, "-p", TASK)],
                       cwd=project, env=tree.env(), capture_output=True, stdin=subprocess.DEVNULL, timeout=300,
                       check=True)
        counted = [line.split(",")[0] for line in Path(out.name).read_text().splitlines() if "instructions" in line]
    wait_for_builders(project)
    return {"main": 0.0, "all": float(counted[0]) / 1e6}


def warm_up(tree: Tree, project: Path) -> None:
    """One uncounted `-p` run: the project's map and index, and the compiled modules, are then in place."""
    subprocess.run([tree.python, "-m", "compileall", "-q", str(tree.root / "swecli")], check=True)
    # The decoded vocabulary, as every test's home has it: a run whose request outlives 50 ms starts its load.
    subprocess.run([tree.python, "-c", "from swecli.context import tokens; tokens._read_ranks('o200k_base')"],
                   env=tree.env(), capture_output=True, check=False)
    with ScriptedLLM([Reply("done")], strict=False) as llm:
        subprocess.run(tree.argv(llm, "-p", TASK), cwd=project, env=tree.env(), capture_output=True,
                       stdin=subprocess.DEVNULL, timeout=300)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", action="append", default=[], help="another checkout with its own .venv")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default=",".join(CASES), help=f"some of {','.join(CASES)}")
    args = parser.parse_args()
    cases = [case for case in CASES if case in args.only.split(",")]
    trees = [Tree(Path(old).name, Path(old).resolve()) for old in args.old] + [Tree("this", ROOT)]
    project = sample_project(Path(tempfile.mkdtemp(prefix="start-instructions-")))
    for tree in trees:
        warm_up(tree, project)
    found: dict[tuple[str, str], list[dict[str, float]]] = {}
    for _ in range(args.runs):
        for case in cases:
            for tree in trees if case != "floor" else trees[-1:]:
                found.setdefault((case, tree.label), []).append(probe(tree, project, case))
    print("| M instructions, main thread / all threads | " + " | ".join(t.label for t in trees) + " |")
    print("|---|" + "---|" * len(trees))
    for case in cases:
        label = CASES[case]
        cells = []
        for tree in trees:
            runs = found.get((case, tree.label)) or []
            main_thread = statistics.median(r["main"] for r in runs) if runs else 0.0
            every = f"{statistics.median(r['all'] for r in runs):,.0f}" if runs else ""
            cells.append(f"{main_thread:,.0f} / {every}" if main_thread else every)
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
