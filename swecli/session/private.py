"""swecli's own records under `.swecli/` belong to the user alone: the folder is 0700, its files 0600.

Transcripts, logs, saved tool outputs, compaction archives, notes, the input history and the map's
caches hold the project's code, the conversation and whatever a command printed. Every writer creates
its files 0600 (`write_private`, `PRIVATE_FILE`), and `ensure_private` makes the folder 0700 at the start
of every session, tightening what an earlier version left readable (its files were 0644 and the folder
0755). What is meant to be shared and committed keeps its modes: `config.toml`, `hooks/` (executable),
`skills/`, `agents/` and `.gitignore`.

The project's own files are none of this: what the agent writes into the project follows the user's umask.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
SHARED = frozenset({"config.toml", "hooks", "skills", "agents", ".gitignore"})
"""Entries of `.swecli/` that are the project's, not the user's records: left as they are."""


def make_private_dir(folder: Path) -> None:
    """Create `folder` and its missing parents with mode 0700 (`mkdir(parents=True)` gives parents the
    umask's mode); existing ones are left as they are."""
    missing = []
    while not folder.is_dir():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir(mode=PRIVATE_DIR, exist_ok=True)


def write_private(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically (temporary file + rename) with mode 0600. Raises OSError."""
    make_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # mkstemp: 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def open_private(path: Path, mode: str = "w") -> int:
    """A file descriptor for writing `path` ("w" truncates, "a" appends), created 0600. A link there is not
    followed (OSError): swecli makes none among its records (`unlink_planted_links`)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if mode == "a" else os.O_TRUNC)
    make_private_dir(path.parent)
    fd = os.open(path, flags, PRIVATE_FILE)
    os.fchmod(fd, PRIVATE_FILE)  # an existing file keeps its mode through os.open: tighten it too
    return fd


def ensure_private(folder: Path) -> int:
    """Make `folder` (a project's `.swecli/`) 0700 and every record below it 0700 (folders) / 0600 (files),
    the shared entries excepted. Returns how many modes were tightened. Symlinks are not followed."""
    tightened = _tighten(folder, PRIVATE_DIR)
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return tightened
    for entry in entries:
        if entry.name not in SHARED:
            tightened += _tighten_tree(entry)
    return tightened


def unlink_planted_links(folder: Path) -> list[str]:
    """Remove every symlink among the records under `folder` (a project's `.swecli/`; the shared entries are
    the project's and stay), returning each as `.swecli/REL (a link to TARGET)`. swecli never makes one: a
    link there came with the repository or from a command, and swecli's writes would follow it
    (`.swecli/logs -> /etc`), its reads too (a note linked to `~/.ssh/id_rsa` went into the prompt). The
    target is left alone; directories are not followed, so this costs one listing per directory."""
    removed: list[str] = []
    stack = _records(folder)
    while stack:
        entry = stack.pop()
        if entry.is_symlink():
            try:
                target = os.readlink(entry.path)
                os.unlink(entry.path)
            except OSError:
                continue  # gone already, or not ours to remove: the writers then fail on it
            removed.append(f"{folder.name}/{Path(entry.path).relative_to(folder).as_posix()} (a link to {target})")
        elif entry.is_dir(follow_symlinks=False):
            stack.extend(_records(Path(entry.path), skip_shared=False))
    return sorted(removed)


def _records(folder: Path, skip_shared: bool = True) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return [e for e in entries if not (skip_shared and e.name in SHARED)]
    except OSError:
        return []


def _tighten_tree(top: os.DirEntry[str]) -> int:
    tightened = 0
    stack = [top]
    while stack:
        entry = stack.pop()
        if entry.is_symlink():
            continue
        if entry.is_dir(follow_symlinks=False):
            tightened += _tighten(Path(entry.path), PRIVATE_DIR)
            try:
                stack.extend(os.scandir(entry.path))
            except OSError:
                continue
        else:
            tightened += _tighten(Path(entry.path), PRIVATE_FILE)
    return tightened


def _tighten(path: Path, wanted: int) -> int:
    """Drop the group's and others' bits (the owner keeps theirs, plus `wanted`: an executable stays so)."""
    try:
        mode = stat.S_IMODE(os.lstat(path).st_mode)
        if not mode & 0o7077:
            return 0
        os.chmod(path, (mode & 0o700) | wanted)
    except OSError:
        return 0  # not ours to change (another owner), or gone
    return 1
