"""grep's pure-Python engine (no ripgrep) on huge files: time and peak memory, old against new in one run.

    python bench/grep_python_bench.py [--old-ref 91a4a76] [--rounds 2]

The old engine is the project at `--old-ref` (default: the commit before the engine read in pieces, when
every file was read whole), unpacked with `git archive` into a temporary folder; the new one is this
checkout. Each search runs in its own Python process (peak RSS is that process's), old and new
interleaved; the table shows the median time and the largest peak RSS. Scenarios, made in /tmp and
deleted afterwards:

- a 2 GB sparse file: 1 MiB of text, then zeros (binary from its second MiB on);
- a 256 MiB text log (old: read whole; new: its first MAX_FILE_BYTES, and the output says so);
- swecli's own source tree (the everyday case: the new engine must not be slower on small files).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHILD = """
import json, resource, sys, time
from pathlib import Path
from swecli.tools.base import ToolContext
from swecli.tools.grep import GrepArgs, search
start = time.perf_counter()
found = search(GrepArgs(pattern=sys.argv[2]), ToolContext(root=Path(sys.argv[1])), engine="python")
print(json.dumps({"seconds": time.perf_counter() - start, "matches": found.total,
                  "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def unpack(ref: str, into: Path) -> Path:
    data = subprocess.run(["git", "-C", str(REPO), "archive", ref, "swecli"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as archive:
        archive.extractall(into, filter="data")
    return into


def sparse_project(base: Path) -> Path:
    root = base / "sparse"
    root.mkdir()
    with (root / "huge.bin").open("wb") as fh:
        fh.write(b"a line with a needle in it\n" * ((1 << 20) // 27))
        fh.truncate(2 << 30)  # 2 GiB, the rest a hole of zeros: no disk used
    return root


def log_project(base: Path) -> Path:
    root = base / "log"
    root.mkdir()
    line = b"2026-11-25 12:00:00 INFO worker 17 handled request /api/items in 12 ms\n"
    block = line * 8192
    with (root / "service.log").open("wb") as fh:
        for _ in range((256 << 20) // len(block)):
            fh.write(block)
        fh.write(b"2026-11-25 12:00:01 ERROR needle at the very end\n")
    return root


def run(checkout: Path, root: Path, pattern: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(root), pattern], cwd=checkout, check=True,
                         capture_output=True, text=True, env={"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin"})
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old-ref", default="91a4a76")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="swecli-grep-bench-", dir="/tmp"))
    try:
        old = unpack(args.old_ref, base / "old")
        scenarios = [("2 GB sparse file (1 MiB text, then zeros)", sparse_project(base), "needle"),
                     ("256 MiB text log", log_project(base), "needle"),
                     ("swecli source tree", REPO / "swecli", "def run")]
        print(f"grep, Python engine: old = {args.old_ref}, new = this checkout; median of {args.rounds} "
              "(time), max (peak RSS)\n")
        print(f"{'scenario':<44} {'engine':<4} {'seconds':>9} {'peak RSS MiB':>13} {'matches':>9}")
        for name, root, pattern in scenarios:
            rows: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
            for _ in range(args.rounds):
                for label, checkout in (("old", old), ("new", REPO)):
                    rows[label].append(run(checkout, root, pattern))
            for label, results in rows.items():
                seconds = statistics.median(r["seconds"] for r in results)
                rss = max(r["rss_mib"] for r in results)
                print(f"{name:<44} {label:<4} {seconds:>9.3f} {rss:>13.0f} {int(results[0]['matches']):>9,}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
