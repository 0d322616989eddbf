"""Nested repositories that git runs later: submodules inside the project.

The user's `git status` or `git diff` at the project's top also looks inside every submodule, that is
every path the index records as a gitlink (mode 160000) whose directory holds a `.git`, and that reads
the submodule's own config: its `core.fsmonitor` is a command git runs, outside any sandbox. A sandboxed
command can make one (`git init sub; git -C sub config core.fsmonitor CMD; git add sub`) because the
index is writable (it must be, for `git add`). So the sandbox

- keeps the config and hooks of the submodules that exist when a command starts read-only, like the
  project's own (`covered`), and
- after the command, looks at the submodules it could change: one whose config asks git to run
  anything, or whose hooks are more than git's samples (`planted`), has its `.git` moved aside.

The index is read here, not through `git` (swecli must not run repository-controlled configuration to
protect against it); only its gitlink entries matter, and an index without the gitlink mode anywhere in
its bytes is not parsed at all.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

GITLINK = 0o160000
_GITLINK_BYTES = GITLINK.to_bytes(4, "big")
_FIXED = 40
"""Bytes of an index entry before its object name: ctime, mtime, dev, ino, mode, uid, gid, size."""
SAFE_KEYS = re.compile(
    r"core\.(?:repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks|"
    r"worktree|autocrlf|eol)|remote\.[^\n]+\.(?:url|pushurl|fetch|tagopt|prune)|branch\.[^\n]+\.(?:remote|merge|"
    r"rebase)|extensions\.objectformat|submodule\.[^\n]+\.(?:url|active)|user\.(?:name|email)|init\.defaultbranch|"
    r"fetch\.prune|pull\.rebase|gc\.auto")
"""Config keys a submodule's clone or `git init` writes, which make git run nothing. Any other key (fsmonitor,
hooksPath, pager, editor, sshCommand, aliases, filters, include.path, ...) counts as planted."""
_SECTION = re.compile(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\s*\]\s*(?:[#;].*)?')
_KEY = re.compile(r"([A-Za-z][A-Za-z0-9-]*)\s*(?:=.*)?")


def gitlinks(index: Path) -> frozenset[str]:
    """The paths (relative to the work tree) the index at `index` records as gitlinks; empty when it is missing
    or unreadable. Cached per version of the file."""
    try:
        info = index.stat()
    except OSError:
        return frozenset()
    return _gitlinks(str(index), info.st_mtime_ns, info.st_size, info.st_ino)


@functools.lru_cache(maxsize=16)
def _gitlinks(index: str, _mtime: int, _size: int, _inode: int) -> frozenset[str]:
    try:
        data = Path(index).read_bytes()
    except OSError:
        return frozenset()
    if data[:4] != b"DIRC" or _GITLINK_BYTES not in data:
        return frozenset()
    config = Path(index).parent / "config"
    try:
        sha256 = "sha256" in config.read_text(encoding="utf-8", errors="replace").lower()
    except OSError:
        sha256 = False
    return frozenset(_entries(data, 32 if sha256 else 20))


def _entries(data: bytes, hash_size: int) -> list[str]:
    """The gitlink paths of an index (versions 2 to 4); stops quietly at anything malformed."""
    version, count = int.from_bytes(data[4:8], "big"), int.from_bytes(data[8:12], "big")
    found: list[str] = []
    position, previous = 12, b""
    for _ in range(count):
        start = position
        mode = int.from_bytes(data[start + 24:start + 28], "big")
        flags = int.from_bytes(data[start + _FIXED + hash_size:start + _FIXED + hash_size + 2], "big")
        position = start + _FIXED + hash_size + 2 + (2 if version >= 3 and flags & 0x4000 else 0)
        if version >= 4:
            strip, position = _varint(data, position)
            end = data.find(b"\0", position)
            if end < 0 or strip > len(previous):
                break
            path = previous[:len(previous) - strip] + data[position:end]
            position = end + 1
        else:
            end = data.find(b"\0", position)
            if end < 0:
                break
            path = data[position:end]
            position = start + ((end - start + 8) & ~7)
        previous = path
        if mode == GITLINK:
            found.append(path.decode("utf-8", errors="surrogateescape"))
    return found


def _varint(data: bytes, position: int) -> tuple[int, int]:
    """git's offset encoding (varint.c), as index version 4 uses it for the shared prefix's length."""
    byte = data[position] if position < len(data) else 0
    position += 1
    value = byte & 0x7F
    while byte & 0x80 and position < len(data):
        byte = data[position]
        position += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, position


def nested_git_dir(root: Path, rel: str) -> tuple[Path, Path] | None:
    """(the `.git` entry, the git directory it stands for) of the submodule at `rel`, when both are inside
    `root`; None when the submodule is not checked out or lives elsewhere (then commands cannot change it)."""
    entry = root / rel / ".git"
    try:
        if entry.is_symlink():
            return entry, entry  # a symlink where git expects a directory or a file: treat the link itself
        if entry.is_dir():
            return entry, entry
        if not entry.is_file():
            return None
        text = entry.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return entry, entry
    target = (entry.parent / text.split(":", 1)[1].strip()).resolve()
    return (entry, target) if target.is_relative_to(root) else None


def planted(git_dir: Path) -> str:
    """Why git would run something from this nested repository (a config key beyond a clone's, a hook, a
    common directory elsewhere), or "" for a repository as `git init` or a clone leaves it."""
    if git_dir.is_symlink() or not git_dir.is_dir():
        return "its .git is not a plain directory"
    if (git_dir / "commondir").exists():
        return "it takes its config from another directory (commondir)"
    for name in ("config", "config.worktree"):
        key = _unsafe_key(git_dir / name)
        if key:
            return f"its {name} sets {key}"
    hooks = git_dir / "hooks"
    try:
        hook = next((p.name for p in hooks.iterdir() if not p.name.endswith(".sample")), "") if hooks.is_dir() else ""
    except OSError:
        hook = ""
    return f"it has a hook ({hook})" if hook else ""


def _unsafe_key(config: Path) -> str:
    """The first key of a git config file outside SAFE_KEYS, or "" (a line this reader cannot follow counts)."""
    try:
        lines = config.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return ""
    except OSError:
        return "an unreadable config"
    section = ""
    for raw in lines:
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.endswith("\\"):
            return "a continued line"
        header = _SECTION.fullmatch(line)
        if header:
            section = header[1].lower() + (f".{header[2]}" if header[2] is not None else "")
            continue
        key = _KEY.fullmatch(line)
        name = f"{section}.{key[1].lower()}" if key and section else line
        if not SAFE_KEYS.fullmatch(name):
            return name
    return ""

