"""The ignore files ripgrep would open, checked before it runs: a repository must not be able to hang it.

ripgrep opens and reads whole every `.gitignore` and `.rgignore` in each directory it enters, in each
directory it then skips (it reads a directory's ignore files before deciding to skip it: a gitignored
`vendor/`, even `.git/` itself) and in each parent of the directory it starts in, and `.git/info/exclude`
wherever a `.git` is, with no check of what the file is (ripgrep 13; `--no-ignore-parent` did not stop the
parents' being read, and only `--no-ignore` stops `.rgignore`). A FIFO there (`mkfifo .gitignore`, one
command of the model's) makes it wait for a writer forever; a link to `/dev/zero` (a `git clone` of a
hostile repository makes one) makes it read until memory runs out (951 MB in 2 s, measured). `--no-ignore`
would close both, but then ripgrep walks every ignored directory (`node_modules`, `.venv`) and swecli would
have to filter its output: many times slower.

So before ripgrep starts, `plan_ripgrep` walks the directories it will enter (swecli's own rules, walk.py,
decide which: a gitignored directory is not entered) and looks at, never opens, each ignore file there and
in the parents. Any that is not a plain file of at most `IGNORE_FILE_LIMIT` bytes (or a link to one inside
the project) is named in `unsafe`, and the caller does not run ripgrep (grep searches with its Python
engine, which reads ignore files without blocking; the map lists with walk.py). Every directory the walk
did not enter is passed to ripgrep as an exclusion (`excludes`), so ripgrep cannot enter a directory whose
ignore files were not looked at, even where its reading of a .gitignore differs from walk.py's.

A `.git` that is a file (a linked worktree's, or one the model writes: `gitdir: /tmp/x`) is followed as
ripgrep 13 follows it: it reads the file's first line, then `commondir` in the directory it names, then that
common directory's `info/exclude`, each opened as it is. A `commondir` FIFO there hung ripgrep forever
(measured), so each link of that chain is checked like an ignore file (`_check_git_file`).

Left open: a file swapped for a FIFO between the check and ripgrep's reading it (milliseconds; the
model's commands do not run while a tool does).
"""

from __future__ import annotations

import os
import stat
from dataclasses import field
from pathlib import Path

from swecli.records import datarecord
from swecli.tools.walk import ALWAYS_SKIP, IGNORE_FILE_LIMIT, IgnoreRules

RIPGREP_IGNORE_FILES = (".gitignore", ".rgignore")
"""Read by ripgrep in every directory it enters and every parent (`.ignore` is off: `--no-ignore-dot`)."""
EXCLUDE_FILE = (".git", "info", "exclude")


@datarecord
class RipgrepPlan:
    """How ripgrep is run so that it opens no ignore file it must not."""

    unsafe: list[str] = field(default_factory=list)
    """Ignore files ripgrep must not open, each as `path (what it is)`, paths relative to the project."""
    excludes: list[str] = field(default_factory=list)
    """`--glob` exclusions (relative to the start directory) of the directories ripgrep must not enter."""

    def glob_args(self) -> list[str]:
        return [arg for glob in self.excludes for arg in ("--glob", glob)]


def plan_ripgrep(root: Path, start: Path) -> RipgrepPlan:
    """What ripgrep started in `start` (a directory under `root`) may be run with; see the module docstring."""
    root, start = root.resolve(), start.resolve()
    plan = RipgrepPlan()
    for parent in start.parents:
        _check_directory(parent, root, plan, has_git=True, cwd=start)
    rules = IgnoreRules(root)
    stack = [start]
    while stack:
        directory = stack.pop()
        entered = _scan(directory, root, start, rules, plan)
        stack.extend(reversed(entered))
    return plan


def _scan(directory: Path, root: Path, start: Path, rules: IgnoreRules, plan: RipgrepPlan) -> list[Path]:
    """Check `directory`'s ignore files; its subdirectories ripgrep will enter (the others are excluded)."""
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return []  # ripgrep cannot read it either
    names = {entry.name for entry in entries}
    _check_directory(directory, root, plan, has_git=".git" in names, cwd=start)
    entered = []
    for entry in entries:
        if not _is_real_dir(entry):
            continue  # symlinks are not followed
        path = directory / entry.name
        if entry.name in ALWAYS_SKIP or rules.ignored(path, is_dir=True):
            # Skipped, but ripgrep reads its ignore files first. ALWAYS_SKIP has its own exclusions.
            _check_directory(path, root, plan, has_git=os.path.lexists(path / ".git"), cwd=start)
            if entry.name not in ALWAYS_SKIP:
                plan.excludes.append(f"!/{_glob_escape(path.relative_to(start).as_posix())}/")
        else:
            entered.append(path)
    return entered


def _check_directory(directory: Path, root: Path, plan: RipgrepPlan, has_git: bool, cwd: Path) -> None:
    candidates = [directory / name for name in RIPGREP_IGNORE_FILES]
    if has_git:
        candidates.append(directory.joinpath(*EXCLUDE_FILE))
    for path in candidates:
        _check_file(path, root, plan)
    if has_git:
        _check_git_file(directory / ".git", root, plan, cwd)


def _check_file(path: Path, root: Path, plan: RipgrepPlan) -> bool:
    """Whether ripgrep may open `path`; when not, it is named in `plan.unsafe`."""
    what = _unsafe_kind(path, root)
    if what:
        plan.unsafe.append(f"{_shown(path, root)} ({what})")
    return not what


def _check_git_file(dot_git: Path, root: Path, plan: RipgrepPlan, cwd: Path) -> None:
    """The chain ripgrep 13 (the ignore crate's `resolve_git_commondir`) reads when `.git` is a file (links
    followed): its first line `gitdir: DIR` (a relative DIR is taken from ripgrep's working directory, `cwd`),
    `DIR/commondir`'s first line (relative to DIR when it starts with "."), then `COMMON/info/exclude`. It
    stops where a file is missing or a line is not what it expects; so does this check."""
    try:
        if not stat.S_ISREG(os.stat(dot_git).st_mode):
            return  # a directory is the usual case (its exclude is checked above); anything else ripgrep skips
    except OSError:
        return
    line = _first_line(dot_git, root, plan)
    if line is None or not line.startswith("gitdir: "):
        return
    git_dir = cwd / line.removeprefix("gitdir: ")
    common = _first_line(git_dir / "commondir", root, plan)
    if common is None:
        return
    common_dir = git_dir / common if common.startswith(".") else cwd / common
    _check_file(common_dir.joinpath("info", "exclude"), root, plan)


def _first_line(path: Path, root: Path, plan: RipgrepPlan) -> str | None:
    """`path`'s first line as Rust's `lines()` gives it, read without blocking; None when ripgrep would not get
    one (missing, unsafe: then named in `plan.unsafe`, not UTF-8)."""
    from swecli.frontmatter import read_regular

    if not _check_file(path, root, plan):
        return None
    try:
        data = read_regular(path, IGNORE_FILE_LIMIT)
        return data.split(b"\n", 1)[0].removesuffix(b"\r").decode("utf-8") if data else None
    except (OSError, UnicodeDecodeError):
        return None


def _unsafe_kind(path: Path, root: Path) -> str:
    """"" when ripgrep may read `path` (missing, unreadable, a directory, or a plain file of bounded size, or
    a link to one inside the project); otherwise what it is, for the message."""
    try:
        info = os.lstat(path)
    except OSError:
        return ""
    if stat.S_ISLNK(info.st_mode):
        target = os.path.realpath(path)
        try:
            info = os.stat(target)
        except OSError:
            return ""  # a dangling link: ripgrep's open fails
        if not Path(target).is_relative_to(root) and not stat.S_ISDIR(info.st_mode):
            return f"a link to {target} outside the project"
    if stat.S_ISDIR(info.st_mode):
        return ""  # opening a directory fails at once
    if not stat.S_ISREG(info.st_mode):
        return _kind(info.st_mode)
    if info.st_size > IGNORE_FILE_LIMIT:
        return f"{info.st_size:,} bytes, over {IGNORE_FILE_LIMIT:,}"
    return ""


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _shown(path: Path, root: Path) -> str:
    path = Path(os.path.normpath(path))  # a `.git` file's relative gitdir: `../x` from the project is not in it
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


def _is_real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


_GLOB_SPECIAL = frozenset("\\*?[]{}!")


def _glob_escape(text: str) -> str:
    """A path as a literal ripgrep glob (`\\` escapes a special character)."""
    return "".join(f"\\{char}" if char in _GLOB_SPECIAL else char for char in text)
