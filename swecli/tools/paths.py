"""Confinement: every path a file tool touches must resolve inside the project root, and never into
the user's credentials (`SECRET_PATHS`, when the project holds the home directory).

Paths are resolved with symlinks followed, so a link inside the project that points elsewhere
cannot be used to read or write outside it, or into `~/.ssh`. The file tools then open what they
checked through `confined_folder`, never through a link, so a folder of the path swapped for a link
after the check (by a command running beside the tool: a sub-agent's) leads nowhere.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from swecli.tools.base import ToolError
from swecli.tools.protected import secret_location


def resolve_in_root(root: Path, path: str | os.PathLike[str]) -> Path:
    """The real location of `path` (relative to `root`, or absolute inside it); ToolError if outside."""
    real_root = Path(root).resolve()
    raw = os.fspath(path)
    if "\0" in raw:
        raise ToolError(f"path {raw!r} contains a NUL byte; pass a plain file path.")
    candidate = Path(raw).expanduser()
    target = real_path(candidate if candidate.is_absolute() else real_root / candidate, raw)
    if target == real_root or target.is_relative_to(real_root):
        secret = secret_location(target)
        if secret:
            raise ToolError(f"path {raw!r} is in {secret}, which holds credentials: swecli's file tools do not read, "
                            "list, search or change credential files. If the task needs something from it, ask the "
                            "user for it.")
        return target
    via_link = "" if _lexically_outside(Path(root), real_root, candidate) else (
        f" (it resolves to {target} through a symlink)")
    raise ToolError(f"path {raw!r} is outside the project root {real_root}{via_link}; the file tools only work "
                    "inside the project. Use a path relative to the project root.")


def read_confined(root: Path, path: Path, limit: int) -> bytes | None:
    """Up to `limit` + 1 bytes of a file swecli reads on its own from the project (a memory file such as
    AGENTS.md), or None when it is missing or not a regular file. The repository decides what such a path is:
    `OPENCLI.md -> ~/.ssh/id_rsa` put the user's key into every request's system prompt. So it must resolve
    inside the project and outside the credential locations (ToolError otherwise, as for the file tools),
    and it is opened without blocking (a FIFO) and read only so far (a link to /dev/zero)."""
    from swecli.frontmatter import read_regular

    target = resolve_in_root(root, path)
    try:
        return read_regular(target, limit)
    except OSError:
        return None


def real_path(path: Path, raw: str) -> Path:
    """`path` with its symlinks followed; ToolError for a symlink loop (or a path too long to follow)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError) as exc:  # Python 3.11 raises RuntimeError for a loop
        raise ToolError(f"path {raw!r} cannot be followed: {exc}. A symlink in it points back to itself; "
                        "give another path.") from None


def display_path(root: Path, path: Path) -> str:
    """How a resolved path is shown to the model: relative to the root, `.` for the root itself."""
    rel = path.relative_to(Path(root).resolve())
    return rel.as_posix() if rel.parts else "."


def _lexically_outside(root: Path, real_root: Path, candidate: Path) -> bool:
    """True when the path itself points outside (`..`, `/etc`), as opposed to a symlink inside the root."""
    joined = candidate if candidate.is_absolute() else real_root / candidate
    normalized = Path(os.path.normpath(joined))
    return not any(normalized == base or normalized.is_relative_to(base) for base in (root.absolute(), real_root))


def resolve_readable(root: Path, path: str | os.PathLike[str], extra: tuple[Path, ...] = ()) -> Path:
    """Like `resolve_in_root`, but an absolute path inside one of the `extra` read-only folders (a
    user-level skill's folder) is allowed too."""
    try:
        return resolve_in_root(root, path)
    except ToolError:
        candidate = Path(os.fspath(path)).expanduser()
        if candidate.is_absolute():
            target = real_path(candidate, os.fspath(path))
            if any(target.is_relative_to(folder.resolve()) for folder in extra):
                return target
        raise


def shown_path(root: Path, path: Path) -> str:
    """`display_path` inside the project; the absolute path for a file outside it (an extra read root)."""
    return display_path(root, path) if path.is_relative_to(Path(root).resolve()) else str(path)


@contextmanager
def confined_folder(root: Path, folder: Path, create: bool = False) -> Iterator[int]:
    """A descriptor of `folder` (resolved, inside the resolved `root`), reached from `root` one name at a time
    without following a link: OSError (ELOOP, ENOTDIR) when a folder on the way is not a real folder now.
    `resolve_in_root` checked the path, but a command running beside the tool (a sub-agent's bash) can swap
    a folder of it for a link to outside between that check and the open: a loop doing so put write_file's
    content outside the project and read_file's answer from outside, several times in 10 s (measured).
    With `create`, missing folders are made on the way (a new file's parents)."""
    fd = os.open(root.resolve(), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in () if folder == root else folder.relative_to(root.resolve()).parts:
            if create:
                with suppress(FileExistsError):
                    os.mkdir(name, dir_fd=fd)
            inner = _open_folder(name, fd)
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


class SwappedPath(OSError):
    """A folder of a checked path is a link now (`confined_folder`)."""


def _open_folder(name: str, parent: int) -> int:
    try:
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP) and stat.S_ISLNK(os.lstat(name, dir_fd=parent).st_mode):
            raise SwappedPath(errno.ELOOP, "a folder on its path became a symlink after it was checked, and the "
                                           "file tools never go through one") from None
        raise


def open_confined(root: Path, target: Path) -> BinaryIO:
    """`target` (resolved, inside the resolved `root`) opened for reading through `confined_folder`, itself not
    followed if a link, and without blocking: OSError for anything but a regular file."""
    if target == root.resolve():
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(target))
    with confined_folder(root, target.parent) as folder:
        fd = os.open(target.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = (IsADirectoryError(errno.EISDIR, "is a directory", str(target)) if stat.S_ISDIR(mode)
                else OSError(errno.EINVAL, "not a regular file", str(target)))
        raise kind
    return os.fdopen(fd, "rb")
