"""Walking the project the way git sees it: .gitignore rules honoured, VCS and swecli internals skipped.

The rules mirror what ripgrep does with `--hidden --no-require-git --no-ignore-dot --no-ignore-global`,
so `grep`'s two engines and `list_files` agree on which files exist:

- every `.gitignore` from the top of the git work tree (or, outside git, the file system root) down to
  the file applies; deeper files win, and within a file the last matching line wins;
- `.git/info/exclude` (a linked worktree's: its common git directory's) applies at the top of the work tree,
  below the `.gitignore` there;
- hidden files are included; `.git`, `.hg`, `.svn` and `.swecli` directories are never descended into,
  nor are the user's credentials (the one list of `swecli/tools/protected.py`: the home's, and files that
  variables such as GOOGLE_APPLICATION_CREDENTIALS point to inside the project);
- symlinks are listed but never followed (no loops, no escaping the project root).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from swecli.records import datarecord
from swecli.tools.base import ToolError
from swecli.tools.protected import credential_locations, is_placeholder

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

ALWAYS_SKIP = frozenset({".git", ".hg", ".svn", ".swecli"})
"""Directory names never walked into: version-control internals and swecli's own state."""


@datarecord(frozen=True)
class Entry:
    """One directory entry as the walk found it (symlinks never followed)."""

    path: Path
    is_dir: bool
    """A real directory; a symlink to a directory counts as a file (it is never followed)."""
    is_symlink: bool
    is_file: bool = False
    """A regular file (not a symlink, FIFO, socket or device): the only kind worth opening."""


class IgnoreRules:
    """Answers "is this path gitignored?" for paths under one root, caching each directory's rules."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._top = work_tree_top(self.root)
        self._specs: dict[Path, GitIgnoreSpec | None] = {}

    def ignored(self, path: Path, is_dir: bool) -> bool:
        decision = False
        for base in self._bases(path.parent):
            spec = self._spec(base)
            if spec is None:
                continue
            rel = path.relative_to(base).as_posix() + ("/" if is_dir else "")
            include = spec.check_file(rel).include
            if include is not None:
                decision = include
        return decision

    def _bases(self, directory: Path) -> list[Path]:
        """The directories whose ignore files apply inside `directory`, outermost first."""
        chain = [directory, *directory.parents]
        if self._top is not None and self._top in chain:
            chain = chain[: chain.index(self._top) + 1]
        return chain[::-1]

    def _spec(self, directory: Path) -> GitIgnoreSpec | None:
        """The rules of `directory`'s ignore files; None when they have none (blank and `#` lines only, as
        the `.git/info/exclude` of every `git init` has: pathspec's import, ~40 M instructions, is then
        not needed)."""
        if directory not in self._specs:
            lines = _read_lines(directory / ".gitignore")
            if directory == self._top:
                lines = _read_lines(exclude_file(directory)) + lines
            patterns = [line for line in lines if line and not line.startswith("#")]
            self._specs[directory] = _ignore_file_spec(tuple(lines)) if patterns else None
        return self._specs[directory]


class GlobFilter:
    """A user glob with ripgrep's `--glob` meaning, relative to the directory being searched.

    `*.py` matches at any depth, `src/*.py` only directly under src, `**/test_*.py` anywhere, and
    `*.{ts,tsx}` either extension. A leading `!` excludes instead. Directories are always descended
    unless an exclusion matches them.
    """

    def __init__(self, glob: str, base: Path) -> None:
        self.glob = glob
        self.base = base
        self.negated = glob.startswith("!")
        if not glob.removeprefix("!").strip():
            raise ToolError(f"Invalid glob {glob!r}: it is empty. Pass a pattern such as `*.py`, or no glob.")
        self._spec = _glob_spec(tuple(expand_braces(glob.removeprefix("!"))))

    def allows(self, path: Path, is_dir: bool) -> bool:
        rel = path.relative_to(self.base).as_posix() + ("/" if is_dir else "")
        matched = self._spec.match_file(rel)
        if self.negated:
            return not matched
        return matched or is_dir


def scan(directory: Path, rules: IgnoreRules) -> tuple[list[Entry], int]:
    """The visible children of `directory` sorted by name, and how many were hidden by .gitignore."""
    try:
        with os.scandir(directory) as it:
            raw = sorted(it, key=lambda e: e.name)
    except OSError:
        return [], 0  # unreadable directories are skipped, as ripgrep does
    entries: list[Entry] = []
    ignored = 0
    secrets = credential_locations()  # the walk stops at a credential directory, so its own path is enough
    for item in raw:
        is_dir = _is_real_dir(item)
        if is_dir and item.name in ALWAYS_SKIP:
            continue
        path = directory / item.name
        if str(path) in secrets or (is_dir and item.name.startswith(".") and is_placeholder(path)):
            continue  # credentials (the project holds the home, or a variable points here), or placeholders
        if rules.ignored(path, is_dir):
            ignored += 1
            continue
        entries.append(Entry(path, is_dir, item.is_symlink(), not is_dir and _is_regular_file(item)))
    return entries, ignored


def walk(start: Path, rules: IgnoreRules, glob: GlobFilter | None = None) -> Iterator[Entry]:
    """Depth-first, children sorted by name (ripgrep's `--sort path` order); directories are yielded too."""
    entries, _ = scan(start, rules)
    for entry in entries:
        if glob is not None and not glob.allows(entry.path, entry.is_dir):
            continue
        yield entry
        if entry.is_dir:
            yield from walk(entry.path, rules, glob)


def expand_braces(pattern: str) -> list[str]:
    """`*.{ts,tsx}` -> [`*.ts`, `*.tsx`] (nested braces work); gitignore patterns have no braces."""
    start = pattern.find("{")
    if start < 0:
        return [pattern]
    depth = 0
    parts: list[str] = []
    last = start + 1
    for i in range(start, len(pattern)):
        char = pattern[i]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                parts.append(pattern[last:i])
                head, tail = pattern[:start], pattern[i + 1:]
                return [expanded for part in parts for expanded in expand_braces(head + part + tail)]
        elif char == "," and depth == 1:
            parts.append(pattern[last:i])
            last = i + 1
    return [pattern]  # an unclosed brace is literal, as in ripgrep


def _is_real_dir(item: os.DirEntry[str]) -> bool:
    try:
        return item.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_regular_file(item: os.DirEntry[str]) -> bool:
    try:
        return item.is_file(follow_symlinks=False)
    except OSError:
        return False


def work_tree_top(root: Path) -> Path | None:
    """The innermost directory at or above `root` that holds a `.git`; None outside a git work tree."""
    for directory in (root, *root.parents):
        if (directory / ".git").exists():
            return directory
    return None


def exclude_file(top: Path) -> Path:
    """The `info/exclude` git reads for the work tree at `top`: in its common git directory, which for a linked
    worktree (`git worktree add`: `.git` is a file naming its own git directory) is the main one's."""
    from swecli.tools.gitlinks import git_dirs

    dirs = git_dirs(top)
    return (dirs[-1] if dirs else top / ".git") / "info" / "exclude"


IGNORE_FILE_LIMIT = 4_000_000
"""A .gitignore longer than this is read only this far."""


def _read_lines(path: Path) -> list[str]:
    """The lines of an ignore file; nothing when it is not a regular file (a model's `mkfifo .gitignore`
    made every listing wait forever, a cloned `.gitignore -> /dev/zero` read until memory ran out)."""
    from swecli.frontmatter import read_regular

    try:
        data = read_regular(path, IGNORE_FILE_LIMIT)
    except OSError:
        return []
    return (data or b"")[:IGNORE_FILE_LIMIT].decode("utf-8", errors="replace").splitlines()


@lru_cache(maxsize=256)
def _glob_spec(patterns: tuple[str, ...]) -> GitIgnoreSpec:
    import pathspec  # lazily: only the file tools need it

    try:
        return pathspec.GitIgnoreSpec.from_lines(patterns)
    except ValueError as exc:
        raise ToolError(f"Invalid glob {' or '.join(patterns)!r}: {exc}") from None


def _ignore_file_spec(lines: tuple[str, ...]) -> GitIgnoreSpec:
    """Like git, a malformed line in a .gitignore is skipped rather than breaking the whole file."""
    import pathspec

    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError:
        return pathspec.GitIgnoreSpec.from_lines([line for line in lines if _valid_ignore_line(line)])


def _valid_ignore_line(line: str) -> bool:
    import pathspec

    try:
        pathspec.GitIgnoreSpec.from_lines([line])
    except ValueError:
        return False
    return True
