"""What checking ripgrep's ignore files first (tools/ignorecheck.py) costs grep, old against new in one run.

    python bench/grep_ignorecheck_bench.py [--rounds 15]

The tree is real source: packages copied from this environment's site-packages (pygments, rich, pydantic,
mypy without typeshed's third-party stubs, _pytest, hypothesis) into a temporary git work tree, about 1,600
files searched, with nested .gitignore files and a gitignored `node_modules/` (a copy of the same
packages) that neither engine enters. Old is grep's ripgrep engine without the check (the plan replaced by an
empty one, as before the change); new is the shipped path. Old and new alternate in one process; the table
shows the median and the spread of each.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sysconfig
import tempfile
import time
from pathlib import Path

from swecli.tools import grep as grep_module
from swecli.tools.base import ToolContext
from swecli.tools.grep import GrepArgs, search
from swecli.tools.ignorecheck import RipgrepPlan, plan_ripgrep

PACKAGES = ("pygments", "rich", "pydantic", "mypy", "_pytest", "hypothesis")


def build_tree(base: Path) -> Path:
    site = Path(sysconfig.get_paths()["purelib"])
    root = base / "tree"
    (root / ".git" / "info").mkdir(parents=True)
    for name in PACKAGES:
        shutil.copytree(site / name, root / "lib" / name, ignore=shutil.ignore_patterns("__pycache__", "stubs"))
        shutil.copytree(site / name, root / "node_modules" / name, ignore=shutil.ignore_patterns("stubs"))
    (root / ".gitignore").write_text("node_modules/\n*.pyc\n__pycache__/\n")
    (root / "lib" / "mypy" / ".gitignore").write_text("typeshed/stdlib/*.pyi\n!typeshed/stdlib/builtins.pyi\n")
    (root / "lib" / "rich" / ".gitignore").write_text("/_*.py\n")
    return root


def timed(root: Path, pattern: str, check: bool) -> tuple[float, int]:
    start = time.perf_counter()
    found = search(GrepArgs(pattern=pattern), ToolContext(root=root), engine="rg")
    elapsed = time.perf_counter() - start
    assert found.engine == "rg" and check == (grep_module.plan_ripgrep is plan_ripgrep)
    return elapsed, found.total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as tmp:
        root = build_tree(Path(tmp))
        files = len(list(root.rglob("*")))
        times: dict[str, list[float]] = {"old (no check)": [], "new (checked)": [], "check alone": []}
        totals: dict[str, set[int]] = {"old (no check)": set(), "new (checked)": set()}
        for _ in range(rounds):
            grep_module.plan_ripgrep = lambda root, start: RipgrepPlan()  # type: ignore[assignment]
            seconds, total = timed(root, "def handle|import re$", check=False)
            times["old (no check)"].append(seconds)
            totals["old (no check)"].add(total)
            grep_module.plan_ripgrep = plan_ripgrep
            seconds, total = timed(root, "def handle|import re$", check=True)
            times["new (checked)"].append(seconds)
            totals["new (checked)"].add(total)
            start = time.perf_counter()
            plan = plan_ripgrep(root, root)
            times["check alone"].append(time.perf_counter() - start)
        print(f"tree: {files:,} entries; {len(plan.excludes)} ignored directories passed as exclusions; "
              f"{rounds} rounds, old and new alternating")
        print(f"{'':18}{'median ms':>10}{'min ms':>9}{'max ms':>9}  matches")
        for name, samples in times.items():
            found = ",".join(str(t) for t in sorted(totals.get(name, set()))) or "-"
            print(f"{name:18}{statistics.median(samples) * 1000:10.1f}{min(samples) * 1000:9.1f}"
                  f"{max(samples) * 1000:9.1f}  {found}")
        old, new = statistics.median(times["old (no check)"]), statistics.median(times["new (checked)"])
        print(f"new / old: {new / old:.2f}")


if __name__ == "__main__":
    main()
