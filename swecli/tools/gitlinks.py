"""What git runs later from inside the project, beyond `.git/hooks` and `.git/config`: submodules, a hooks
directory the config names (husky's `.husky/`), included config files, and a hook manager's settings.

Hooks elsewhere: `core.hooksPath` pointing into the work tree (husky sets `.husky/_`, whose stubs run
`.husky/<hook>`), `include.path` / `includeIf.*.path` naming a file in the project, and the settings file
of the hook manager whose hook is installed (pre-commit's `.pre-commit-config.yaml`, lefthook's
`lefthook.yml`, overcommit's `.overcommit.yml`: their `entry`/`run` lines are commands). `hook_paths`
lists them for the sandbox and the file tools, as for `.git/hooks`.

Submodules:

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
import os
from pathlib import Path

from swecli.lazy import regex

GITLINK = 0o160000
_GITLINK_BYTES = GITLINK.to_bytes(4, "big")
_FIXED = 40
"""Bytes of an index entry before its object name: ctime, mtime, dev, ino, mode, uid, gid, size."""
SAFE_KEYS = regex(
    r"core\.(?:repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks|"
    r"worktree|autocrlf|eol)|remote\.[^\n]+\.(?:url|pushurl|fetch|tagopt|prune)|branch\.[^\n]+\.(?:remote|merge|"
    r"rebase)|extensions\.objectformat|submodule\.[^\n]+\.(?:url|active)|user\.(?:name|email)|init\.defaultbranch|"
    r"fetch\.prune|pull\.rebase|gc\.auto")
"""Config keys a submodule's clone or `git init` writes, which make git run nothing. Any other key (fsmonitor,
hooksPath, pager, editor, sshCommand, aliases, filters, include.path, ...) counts as planted."""
_SECTION = regex(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\s*\]\s*(?:[#;].*)?')
_KEY = regex(r"([A-Za-z][A-Za-z0-9-]*)\s*(?:=.*)?")


INDEX_LIMIT = 1 << 30
"""An index larger than this is not read (a very large repository's is a few hundred MB)."""
CONFIG_LIMIT = 4 << 20
POINTER_LIMIT = 4096
"""A `.git` file (`gitdir: ...`) or `commondir`: one path."""


def _read(path: Path, limit: int, head: bool = False) -> bytes:
    """`path`'s bytes, opened without blocking. The model can replace `.git/index` (it must stay writable for
    `git add`) with a FIFO, which made the next command's check wait forever, or a link to /dev/zero, read
    until memory ran out; a repository unpacked from an archive can ship either. Not a regular file, or over
    `limit` (unless only its `head` is wanted): OSError."""
    from swecli.frontmatter import read_regular

    data = read_regular(path, limit)
    if data is None:
        raise OSError(f"{path} is not a regular file")
    if len(data) > limit and not head:
        raise OSError(f"{path} is over {limit:,} bytes")
    return data[:limit]


def _text(path: Path, limit: int = CONFIG_LIMIT, head: bool = False) -> str:
    return _read(path, limit, head).decode("utf-8", errors="replace")


def gitlinks(index: Path) -> frozenset[str]:
    """The paths (relative to the work tree) the index at `index` records as gitlinks; empty when it is missing
    or unreadable. The file is read every time; only what was found in the same bytes is kept (`_LAST`)."""
    try:
        data = _read(index, INDEX_LIMIT)  # a FIFO must not block, a link to /dev/zero must end
    except (OSError, ValueError):
        return frozenset()
    key = str(index)
    last = _LAST.get(key)
    if last is not None and last[0] == data:  # compared whole (memcmp): ~10 us for a 2,000-file index
        return last[1]
    found = _gitlinks_in(data, index.parent / "config")
    if len(_LAST) >= 16:
        _LAST.clear()
    _LAST[key] = (data, found)
    return found


_LAST: dict[str, tuple[bytes, frozenset[str]]] = {}
"""By index path: its bytes when last read, and the gitlinks found in them. Nothing is trusted by the file's
`stat`: a command may rewrite the index in place at the same size and set its modification time back (`touch
-r`: the owner may), and a write through a shared mapping of a page already written changes neither time. The
bytes are compared instead: looking for the gitlink mode in them (`_GITLINK_BYTES in data`: the index is mostly
zeros, which that search is slow on) cost ~0.6 ms for a 2,000-file index, comparing them ~10 us."""


def _gitlinks_in(data: bytes, config: Path) -> frozenset[str]:
    """The gitlinks of an index's bytes; its object names' size is the repository's (`config`: its object
    format is set when the repository is made, and the config is read-only to sandboxed commands)."""
    if data[:4] != b"DIRC" or _GITLINK_BYTES not in data:
        return frozenset()
    try:
        sha256 = "sha256" in _text(config).lower()
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
        text = _text(entry, POINTER_LIMIT).strip()
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
        entries = config_entries(config)
    except FileNotFoundError:
        return ""
    except OSError:
        return "an unreadable config"
    return next((name for name, _ in entries if not SAFE_KEYS.fullmatch(name)), "")


def config_entries(config: Path) -> list[tuple[str, str]]:
    """(`section.subsection.key` lower-cased but the subsection, value) of a git config file; a line this
    reader cannot follow (a continued value, no section) comes back whole as the name, with no value."""
    return list(_parsed_config(_text(config)))


@functools.lru_cache(maxsize=32)
def _parsed_config(text: str) -> tuple[tuple[str, str], ...]:
    """`config_entries` of a config's text. Kept by the text itself, which is read every time: every sandboxed
    command's layout asks for the project's config (`hook_paths`), and parsing it was most of that (~0.15 ms
    of the ~1 ms layout on `take`'s path); the same bytes give the same entries, so nothing read is trusted
    from before."""
    entries: list[tuple[str, str]] = []
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        header = _SECTION.fullmatch(line)
        if header and not line.endswith("\\"):
            section = header[1].lower() + (f".{header[2]}" if header[2] is not None else "")
            continue
        key = _KEY.fullmatch(line)
        if key is None or not section or line.endswith("\\"):
            entries.append((line, ""))
            continue
        entries.append((f"{section}.{key[1].lower()}", _value(line.partition("=")[2])))
    return tuple(entries)


def _value(text: str) -> str:
    """A config value without its quotes and trailing comment."""
    out, quoted = [], False
    for char in text.strip():
        if char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
    return "".join(out).strip()


HOOK_MANAGERS = (("File generated by pre-commit", (".pre-commit-config.yaml",)),
                 ("lefthook", ("lefthook.yml", ".lefthook.yml", "lefthook.yaml", ".lefthook.yaml", "lefthook-local.yml",
                               ".lefthook-local.yml")),
                 ("overcommit", (".overcommit.yml",)))
"""(a marker in an installed hook, the settings files in the work tree that hook runs commands from)."""


def hook_paths(git_dir: Path, work_tree: Path) -> tuple[list[Path], list[Path]]:
    """(directories, files) inside `work_tree` that git runs from on the next commit: the hooks directory
    `core.hooksPath` names (and husky's `.husky` around its `_`), included config files, and the settings of
    the hook manager whose hook is installed. Paths outside the work tree are left out (read-only anyway)."""
    try:
        entries = config_entries(git_dir / "config")
    except OSError:
        return [], []
    dirs: list[Path] = []
    files: list[Path] = []
    hooks = git_dir / "hooks"
    for name, value in entries:
        if name == "core.hookspath" and value:
            hooks = _under(work_tree, value)
            dirs += [hooks] + ([hooks.parent] if hooks.name == "_" and hooks.parent.name == ".husky" else [])
        elif (name == "include.path" or (name.startswith("includeif.") and name.endswith(".path"))) and value:
            files.append(_under(git_dir, value))
    files += _manager_settings(hooks, work_tree)
    if not dirs and not files:  # git's defaults, no hook manager: nothing to resolve (every layout asks)
        return [], []
    inside = work_tree.resolve()
    return ([d for d in dirs if d.resolve().is_relative_to(inside)],
            [f for f in files if f.resolve().is_relative_to(inside)])


def _under(base: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return Path(os.path.normpath(path if path.is_absolute() else base / path))


def _manager_settings(hooks: Path, work_tree: Path) -> list[Path]:
    try:
        # the name first: git's 14 .sample hooks are never read, so they need no stat (every layout asks)
        with os.scandir(hooks) as entries:
            texts = [_text(Path(entry.path), 4096, head=True) for entry in entries
                     if not entry.name.endswith(".sample") and entry.is_file()]
    except OSError:
        return []
    return [work_tree / name for marker, names in HOOK_MANAGERS if any(marker in t for t in texts) for name in names]



def linked_git_dirs(root: Path) -> list[Path]:
    """The git directory and common directory of a linked worktree (`.git` is a file pointing elsewhere)."""
    marker = root / ".git"
    if not marker.is_file():
        return []
    try:
        text = _text(marker, POINTER_LIMIT).strip()
    except OSError:
        return []
    if not text.startswith("gitdir:"):
        return []
    gitdir = (root / text.split(":", 1)[1].strip()).resolve()
    dirs = [gitdir] if gitdir.is_dir() else []
    common = gitdir / "commondir"
    try:
        shared = (gitdir / _text(common, POINTER_LIMIT).strip()).resolve() if common.is_file() else None
    except OSError:
        shared = None
    if shared is not None and shared.is_dir():
        dirs.append(shared)
    return dirs


def git_dirs(root: Path) -> list[Path]:
    """The project's git directories: `.git`, or a linked worktree's own and common ones."""
    linked = linked_git_dirs(root)
    return linked or ([root / ".git"] if (root / ".git").is_dir() else [])


def runs_later(root: Path, path: Path) -> str:
    """Why git runs the resolved `path` on the next commit (a hooks directory the config names, an included
    config file, a hook manager's settings), or ""."""
    for git_dir in git_dirs(root):
        if git_dir.parent.name == "worktrees":
            continue
        dirs, files = hook_paths(git_dir, root)
        for found in (*dirs, *files):
            real = found.resolve()
            if path == real or path.is_relative_to(real):
                return (f"{real.relative_to(root.resolve()) if real.is_relative_to(root.resolve()) else real} is "
                        "run by git on the next commit (its config names it, or an installed hook reads it)")
    return ""
