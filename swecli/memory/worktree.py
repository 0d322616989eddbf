"""The project's working tree as git sees it, to tell which files a shell command changed.

`Worktree.find(root)` is None outside a git work tree (or without git). `snapshot()` lists the files
under the root that differ from HEAD or are untracked (gitignored ones excluded, so `.swecli/` never
counts), each with its size and modification time; `changed_paths(before, after)` compares two
snapshots taken around a command. Comparing sizes and times too catches a file that was already
modified before the command (`sed -i` on a file the model edited earlier) and one the command put
back (`git checkout file`).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

GIT_TIMEOUT = 10.0
"""Seconds a `git status` may take before the snapshot is given up (a huge repository, a hung NFS)."""

Entry = tuple[str, int, int]
"""(git status code, mtime in ns, size), or size -1 for a file that no longer exists."""


@dataclass(frozen=True)
class Worktree:
    root: Path
    top: Path
    """The top of the git work tree (git reports paths relative to it)."""

    @staticmethod
    def find(root: Path) -> Worktree | None:
        out = _git(root, "rev-parse", "--show-toplevel")
        if out is None or not out.strip():
            return None
        return Worktree(root.resolve(), Path(out.strip()).resolve())

    def snapshot(self) -> dict[str, Entry] | None:
        """Changed and untracked files under the root, keyed by root-relative path; None if git failed."""
        out = _git(self.root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--", ".")
        if out is None:
            return None
        entries: dict[str, Entry] = {}
        for record in out.split("\0"):
            if len(record) < 4:
                continue
            status, name = record[:2], record[3:]
            path = self.top / name
            try:
                rel = path.relative_to(self.root).as_posix()
            except ValueError:
                continue
            entries[rel] = (status, *_stat(path))
        return entries


def changed_paths(before: dict[str, Entry], after: dict[str, Entry]) -> list[tuple[str, bool]]:
    """(path, still exists) for every file whose git status, size or time differs between the snapshots."""
    changed = []
    for path in sorted(set(before) | set(after)):
        if before.get(path) != after.get(path):
            entry = after.get(path)
            changed.append((path, entry is None or entry[2] >= 0))
    return changed


def _stat(path: Path) -> tuple[int, int]:
    try:
        info = path.stat()
    except OSError:
        return -1, -1
    return info.st_mtime_ns, info.st_size


def _git(cwd: Path, *args: str) -> str | None:
    # GIT_OPTIONAL_LOCKS=0: a status refresh must never hold index.lock while the model's own git runs.
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        done = subprocess.run(["git", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=GIT_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", errors="surrogateescape")
