"""Markdown files with YAML front matter (skills' SKILL.md, sub-agents' NAME.md), read with PyYAML, and the
one loader both catalogs use: files in precedence order, each bad one skipped with a warning, the first of
a name kept."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from swecli.errors import SwecliError


class FrontMatterError(SwecliError):
    """The front matter is missing or unreadable; `str()` says why, as a clause ("it has no ...")."""


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(front matter as a mapping, body). The file must start with a `---` line and the front matter
    end with another; FrontMatterError otherwise."""
    import yaml

    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise FrontMatterError("it has no YAML front matter (the file must start with a `---` line)")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise FrontMatterError("its front matter is not closed by a `---` line")
    try:
        meta = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        raise FrontMatterError(f"its front matter is not valid YAML{where}") from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise FrontMatterError("its front matter must be a mapping of keys to values")
    return meta, "".join(lines[end + 1:])


def read_front_matter(path: Path) -> tuple[dict[str, Any], str]:
    """(front matter, body) of a file; FrontMatterError when it cannot be read or has no valid front matter."""
    try:
        data = read_regular(path, MAX_BYTES)
    except OSError as exc:
        raise FrontMatterError(f"cannot read it ({exc.strerror or exc})") from None
    if data is None:
        raise FrontMatterError("it is not a regular file (a FIFO, a device or a link to one)")
    if len(data) > MAX_BYTES:
        raise FrontMatterError(f"it is larger than {MAX_BYTES // 1_000_000} MB")
    return split_front_matter(data.decode("utf-8", errors="replace"))


MAX_BYTES = 1_000_000
"""A skill or agent file longer than this is refused: its body goes into a prompt whole."""


def read_regular(path: Path, limit: int) -> bytes | None:
    """Up to `limit` + 1 bytes of `path`, or None when it is not a regular file. A repository can ship
    `.claude/agents/x.md` as a FIFO (reading waits for a writer forever) or a link to /dev/zero (reading
    never ends): the file is opened without blocking and checked before anything is read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        chunks, left = [], limit + 1
        want = min(left, info.st_size + 1)  # `os.read` allocates what it is asked for: the size, not 1 MB
        while left > 0 and (chunk := os.read(fd, want)):
            chunks.append(chunk)
            left -= len(chunk)
            want = min(left, 1 << 20)
        return b"".join(chunks)
    finally:
        os.close(fd)


class Named(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def path(self) -> Path | None: ...


N = TypeVar("N", bound=Named)
S = TypeVar("S")


def load_named(files: Iterable[tuple[Path, S]], parse: Callable[[Path, S], N], what: str,
               known: Iterable[N] = ()) -> tuple[list[N], list[str]]:
    """Everything `parse` makes of `files` (each with where it was found), after the `known` ones: a file it
    rejects (any SwecliError, whose sentence is the reason) or whose name is taken is skipped with one
    warning; a file reached twice (a symlinked folder) counts once."""
    items, warnings, seen = list(known), [], set()
    for path, where in files:
        real = path.resolve()
        if real in seen:
            continue
        seen.add(real)
        try:
            item = parse(path, where)
        except SwecliError as exc:
            warnings.append(f"{what} skipped: {path}: {exc}")
            continue
        first = next((i for i in items if i.name == item.name), None)
        if first is not None:
            warnings.append(f"{what} skipped: {path}: the name {item.name!r} is already taken by "
                            f"{first.path or f'the built-in {what}'}")
            continue
        items.append(item)
    return items, warnings
