"""The files of a project as the tools see them: .gitignore honoured, VCS and swecli internals skipped.

ripgrep's `--files` with the flags walk.py mirrors lists a 10k-file tree in tens of milliseconds; without
ripgrep, walk.py itself gives the same list (a test holds the two to agreement). Symlinks are never
followed and not listed, so the map cannot escape the project.

`start_listing` runs ripgrep in the background, so a run reads its cache and stats the files it knows
while the listing is made (`Listing.files()` collects it). A warm run need not list at all: `snapshot`
records what a listing depends on (every directory's mtime, the ignore files) and `unchanged` checks it
with a stat per directory, a tenth of what listing costs.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

from swecli.tools.ignorecheck import plan_ripgrep
from swecli.tools.own_process import helper_environment, trusted_program
from swecli.tools.walk import ALWAYS_SKIP, IgnoreRules, exclude_file, walk

RG_FLAGS = ("--files", "--no-config", "--hidden", "--no-require-git", "--no-ignore-dot", "--no-ignore-global",
            "--no-messages")
RG_TIMEOUT = 60.0


class Listing:
    """One listing of a project's files, under way (ripgrep) or done (the Python walk)."""

    def __init__(self, root: Path, engine: str = "auto") -> None:
        self.root = root.resolve()
        self._process: subprocess.Popen[bytes] | None = None
        self._done: list[str] | None = None
        rg = trusted_program("rg", self.root) if engine != "python" else None
        # An ignore file that is a FIFO or a link to /dev/zero would hang ripgrep: walk.py lists instead.
        plan = plan_ripgrep(self.root, self.root) if rg is not None else None
        if rg is not None and plan is not None and not plan.unsafe:
            command = [rg, *RG_FLAGS, *(arg for name in sorted(ALWAYS_SKIP) for arg in ("--glob", f"!{name}/")),
                       *plan.glob_args(), "--null"]
            try:
                self._process = subprocess.Popen(command, cwd=self.root, stdin=subprocess.DEVNULL,
                                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                                 env=helper_environment())
            except OSError:
                self._process = None

    def files(self) -> list[str]:
        """Root-relative POSIX paths of the regular files, sorted."""
        if self._done is None:
            listed = self._collect() if self._process is not None else None
            self._done = listed if listed is not None else _walked(self.root)
        return self._done

    def _collect(self) -> list[str] | None:
        assert self._process is not None
        try:
            out, _ = self._process.communicate(timeout=RG_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.communicate()
            return None
        if self._process.returncode not in (0, 1):  # 1: no files at all
            return None
        # ripgrep does not list symlinks without --follow; the index lstat()s the files it parses anyway
        names = out.decode("utf-8", errors="surrogateescape").split("\0")
        return sorted(name.removeprefix("./") if name.startswith("./") else name for name in names if name)


def start_listing(root: Path, engine: str = "auto") -> Listing:
    """Start listing `root`'s files; `engine` is auto, rg or python."""
    return Listing(root, engine)


def project_files(root: Path, engine: str = "auto") -> list[str]:
    """Root-relative POSIX paths of the regular files, sorted; `engine` is auto, rg or python."""
    return Listing(root, engine).files()


def _walked(root: Path) -> list[str]:
    return sorted(entry.path.relative_to(root).as_posix() for entry in walk(root, IgnoreRules(root))
                  if entry.is_file)


# --- knowing that a listing still holds, without making it again ---------------------------------------

MAX_SNAPSHOT_DIRS = 20_000
"""Directories beyond which a tree is listed afresh every run (checking them would cost as much)."""
RACY_NS = 2_000_000_000
"""A directory changed this recently may change again within its timestamp's resolution: not trusted."""


def snapshot(root: Path) -> dict[str, Any] | None:
    """What a listing of `root` depends on, cheap to check again (`unchanged`): the mtime of every directory
    under it (a directory's mtime changes whenever an entry is added, removed or renamed in it; ignored
    directories count too, so nothing can appear unseen) and of every ignore file that applies.

    Take it before listing: a change made in between then shows as a change next time. None for trees
    with more than MAX_SNAPSHOT_DIRS directories, or changed within the last RACY_NS."""
    root = root.resolve()
    dirs: list[str] = []
    mtimes: list[int] = []
    ignores = _outer_ignore_files(root)
    stack = [(str(root), "")]
    while stack:
        path, rel = stack.pop()
        try:
            mtime = os.lstat(path).st_mtime_ns  # before reading it: a later change shows as a change
            with os.scandir(path) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in ALWAYS_SKIP:
                            stack.append((entry.path, f"{rel}{entry.name}/"))
                    elif entry.name == ".gitignore":
                        ignores.append(entry.path)
        except OSError:
            continue  # unreadable: ripgrep cannot list it either
        dirs.append(rel)
        mtimes.append(mtime)
        if len(dirs) > MAX_SNAPSHOT_DIRS:
            return None
    stats = [_stat_or_none(path) for path in ignores]
    newest = max([*mtimes, *(s[0] for s in stats if s)], default=0)
    if time.time_ns() - newest < RACY_NS:
        return None
    return {"dirs": dirs, "mtimes": mtimes, "ignores": ignores, "ignore_stats": stats}


def unchanged(root: Path, taken: Any) -> bool:
    """Whether nothing a `snapshot` recorded has changed since (a damaged one counts as changed)."""
    try:
        base = str(root.resolve()) + os.sep
        for rel, mtime in zip(taken["dirs"], taken["mtimes"], strict=True):
            if os.lstat(base + rel).st_mtime_ns != mtime:
                return False
        return all(_stat_or_none(path) == stats
                   for path, stats in zip(taken["ignores"], taken["ignore_stats"], strict=True))
    except (OSError, KeyError, TypeError, ValueError):
        return False


def _outer_ignore_files(root: Path) -> list[str]:
    """The ignore files outside the walk that may shape `root`'s listing: each parent's .gitignore and each
    enclosing work tree's info/exclude, a linked worktree's in its common git directory (more than ripgrep may
    read: an extra one only costs a relisting)."""
    found = [str(parent / ".gitignore") for parent in root.parents]
    found += [str(exclude_file(top)) for top in (root, *root.parents) if (top / ".git").exists()]
    return found


def _stat_or_none(path: str) -> list[int]:
    """[mtime_ns, size], or [] for a file that is not there (its appearing is a change too)."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    return [st.st_mtime_ns, st.st_size]
