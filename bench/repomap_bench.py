"""Repository map speed and size: cold and warm builds, files parsed per second, map tokens per budget.

    python bench/repomap_bench.py ROOT [ROOT ...] [--warm-runs N] [--workers N]

For each ROOT: the cache under ROOT/.swecli/repomap is deleted, one cold build runs (parsing in worker
processes, progress printed to stderr after a second), then N warm builds (nothing changed; the median
is shown), then one build after touching a single file. Map tokens are counted with o200k_base for
`--symbols` maps at 1k/2k/4k budgets. The goals (issue 12): warm under 0.2 s; 10k files cold under
10 s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from swecli.context.tokens import Tokenizer
from swecli.repomap.index import CACHE_DIR
from swecli.repomap.repomap import RepoMap


def progress(done: int, total: int) -> None:
    sys.stderr.write(f"  parsed {done:,} of {total:,}\r" if done < total else f"  parsed {total:,} files\n")


def source_bytes(rmap: RepoMap) -> int:
    return sum(rmap.index.stats[rel].size for rel in rmap.index.facts)


def measure(root: Path, warm_runs: int, workers: int | None, count: Tokenizer) -> list[str]:
    shutil.rmtree(root / CACHE_DIR, ignore_errors=True)
    start = time.perf_counter()
    cold = RepoMap.build(root, progress=progress, workers=workers)
    cold_s = time.perf_counter() - start
    warm = []
    for _ in range(warm_runs):
        start = time.perf_counter()
        RepoMap.build(root)
        warm.append(time.perf_counter() - start)
    touched = next(iter(cold.index.facts))
    os.utime(root / touched)
    start = time.perf_counter()
    one = RepoMap.build(root)
    one_s = time.perf_counter() - start
    parsed = len(cold.index.facts)
    tokens = [count(cold.render(budget, count)) for budget in (1_000, 2_000, 4_000)]
    return [root.name, f"{len(cold.index.stats):,}", f"{parsed:,}", f"{source_bytes(cold) / 1e6:.1f} MB",
            f"{cold_s:.2f} s", f"{parsed / cold_s:,.0f}", f"{statistics.median(warm):.3f} s",
            f"{one_s:.2f} s ({one.index.parsed})", " / ".join(f"{t:,}" for t in tokens)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("roots", nargs="+", type=Path)
    parser.add_argument("--warm-runs", type=int, default=5)
    parser.add_argument("--workers", type=int, default=None, help="parse processes (default: cores, up to 4)")
    args = parser.parse_args()
    count = Tokenizer("o200k_base")
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.1f}")
    head = ["repository", "files", "parsed", "source", "cold", "files/s", "warm (median)", "one file changed",
            "map tokens at 1k / 2k / 4k"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for root in args.roots:
        print("| " + " | ".join(measure(root.resolve(), args.warm_runs, args.workers, count)) + " |", flush=True)


if __name__ == "__main__":
    main()
