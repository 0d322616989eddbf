"""YAML front matter of a markdown file (skills' SKILL.md, sub-agents' NAME.md), read with PyYAML."""

from __future__ import annotations

from typing import Any

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
