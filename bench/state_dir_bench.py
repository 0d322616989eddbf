"""What the start's check of `.swecli/` for planted links costs (`session/store.py` `ensure_state_dir`, which
calls `session/private.py` `unlink_planted_links`): one listing per folder of the state tree, every start.

    python bench/state_dir_bench.py [--runs 9]

Trees: a new project's `.swecli/` (two empty folders) and one that a long use left (5,000 saved outputs, 500
transcripts, 500 logs, 200 compaction archives, 20 map caches: 6,220 records; nothing prunes them). Each is
built in a temporary directory; the check runs `--runs` times on it (it changes nothing when nothing is
planted); the table prints the median and the fastest, wall clock on this machine (the work is system calls
and directory entries: instruction counts would leave the kernel's part out).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TREES = {
    "a new project's": {"sessions": 0, "logs": 0},
    "after long use": {"tool_results": 5_000, "sessions": 500, "logs": 500, "compactions": 200, "repomap": 20},
}


def build(base: Path, folders: dict[str, int]) -> Path:
    state = base / ".swecli"
    for folder, records in folders.items():
        (state / folder).mkdir(parents=True)
        for n in range(records):
            (state / folder / f"record-{n}").write_bytes(b"x")
    return state


def timed(state: Path, runs: int) -> list[float]:
    from swecli.session.private import unlink_planted_links

    times = []
    for _ in range(runs):
        start = time.perf_counter()
        unlink_planted_links(state)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    print("| `.swecli/` | records | median | fastest |\n|---|---|---|---|")
    for label, folders in TREES.items():
        with tempfile.TemporaryDirectory() as base:
            times = timed(build(Path(base), folders), args.runs)
        print(f"| {label} | {sum(folders.values()):,} | {statistics.median(times) * 1000:.2f} ms | "
              f"{min(times) * 1000:.2f} ms |")


if __name__ == "__main__":
    main()
