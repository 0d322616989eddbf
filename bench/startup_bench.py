"""Start-up time of the `swecli` command: `--version`, `--help`, and the import of the full stack.

    python bench/startup_bench.py [--runs N]

Prints a table of the median and best wall time over N runs (fresh interpreter each run).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CASES = [
    ("swecli --version", [sys.executable, "-m", "swecli", "--version"]),
    ("swecli --help", [sys.executable, "-m", "swecli", "--help"]),
    ("python -c pass (interpreter floor)", [sys.executable, "-c", "pass"]),
    ("import the whole stack (REPL + providers)",
     [sys.executable, "-c", "import swecli.ui.repl, swecli.llm.openai, swecli.llm.anthropic, swecli.context.manager"]),
]


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    print(f"| command | median | best |  ({runs} runs each)")
    print("|---|---|---|")
    for label, cmd in CASES:
        timed(cmd)  # warm the file cache
        samples = [timed(cmd) for _ in range(runs)]
        print(f"| {label} | {statistics.median(samples) * 1000:.0f} ms | {min(samples) * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
