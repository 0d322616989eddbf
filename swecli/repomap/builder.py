"""Cold builds of the repository map and its BM25 index, in a process of their own.

A session (REPL or `-p`) never parses a whole project itself: when more files changed than it parses on
the spot (`index.PARALLEL_FROM`), its background thread starts this module as a separate, detached
process and waits for it, then reads what it saved. Two things follow:

- the session's interpreter stays free: parsing results, building the graph and the BM25 term counts
  would otherwise hold its GIL for seconds while it prepares the first request;
- the work is kept: a `-p` run that has its answer exits at once, and the builder goes on until the map
  (`.swecli/repomap/index.json` and its side files) and the BM25 index are saved, so the next run starts
  warm. It runs at a lower priority (nice) and in its own session, so a Ctrl-C meant for swecli does not
  lose it.

One builder per project at a time: each holds an exclusive `flock` on `.swecli/repomap/build.lock` while
it builds; a second one waits for the lock and then finds the cache warm. The builder is started with
`python -P` (the project's directory is never on its import path), and reads the project only as data.

    python -P -m swecli.repomap.builder ROOT
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from swecli.repomap.index import CACHE_DIR

LOCK_NAME = "build.lock"
NICENESS = 5
"""How much lower the builder's priority is than the session's (the session has a person waiting)."""


def lock_path(root: Path) -> Path:
    return root / CACHE_DIR / LOCK_NAME


@contextlib.contextmanager
def build_lock(root: Path) -> Iterator[None]:
    """Held while a builder builds `root` (waits while another one does)."""
    path = lock_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_elsewhere(root: Path) -> bool:
    """Run the builder for `root` in its own process and wait for it (the wait leaves the GIL free).
    False when it could not start or failed: the caller then builds in-process as before."""
    command = [sys.executable, "-P", "-m", "swecli.repomap.builder", str(root.resolve())]
    try:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, cwd="/", start_new_session=True, close_fds=True)
    except OSError:
        return False
    return process.wait() == 0


def build(root: Path) -> None:
    """Build and save `root`'s map, then its BM25 index (the builder process's work)."""
    from swecli.repomap.lexical import Lexical
    from swecli.repomap.repomap import RepoMap

    with build_lock(root):
        rmap = RepoMap.build(root)
        Lexical.build(rmap)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not os.path.isdir(argv[0]):
        sys.stderr.write("usage: python -P -m swecli.repomap.builder ROOT\n")
        return 2
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    build(Path(argv[0]).resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
