"""`@path` mentions: files the user names in a prompt are attached to it as context.

The attachment is one `UserMessage(kind="context")` placed just before the prompt, so the prompt
itself stays exactly what the person typed (transcripts, resume lists and compaction see the real
request), while the context engine can treat the attached text like any other bulky context.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from swecli.messages import UserMessage
from swecli.tools.base import ToolError
from swecli.tools.images import is_image_path
from swecli.tools.paths import display_path, resolve_in_root

MENTION = re.compile(r"(?:^|(?<=\s))@([^\s@]+)")
MAX_FILE_CHARS = 60_000
"""A mention attaches at most this much of a file; the model can read the rest with read_file."""


def estimate_tokens(text: str) -> int:
    """Rough count (4 characters a token) for the attachment line; the context engine counts exactly."""
    return (len(text) + 3) // 4


@dataclass(frozen=True)
class Attachment:
    path: str
    content: str
    lines: int
    tokens: int
    truncated: bool = False


@dataclass
class Mentions:
    attachments: list[Attachment] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """One sentence per mention that could not be attached (missing, outside the project, binary)."""

    @property
    def tokens(self) -> int:
        return sum(a.tokens for a in self.attachments)

    def message(self) -> UserMessage | None:
        """The context message to place before the prompt (None when nothing was attached)."""
        if not self.attachments:
            return None
        parts = ["Files the user attached to the next message (with @ mentions):"]
        for a in self.attachments:
            note = f' truncated="first {MAX_FILE_CHARS} characters; read_file for the rest"' if a.truncated else ""
            parts.append(f'<file path="{a.path}" lines="{a.lines}"{note}>\n{a.content}\n</file>')
        return UserMessage(content="\n\n".join(parts), kind="context")


def mentioned_paths(text: str) -> list[str]:
    """The `@path` tokens in a prompt, in order, without duplicates (trailing punctuation dropped)."""
    seen: list[str] = []
    for raw in MENTION.findall(text):
        path = raw.rstrip(".,;:!?)\"'")
        if path and path not in seen:
            seen.append(path)
    return seen


def collect(root: Path, text: str, count: Callable[[str], int] = estimate_tokens) -> Mentions:
    """Read every file mentioned in `text`; mentions that are not readable files become problems."""
    found = Mentions()
    for raw in mentioned_paths(text):
        if is_image_path(raw):
            continue  # images are attached to the prompt itself (AgentSession.run, swecli.tools.images)
        try:
            found.attachments.append(_attach(root, raw, count))
        except ToolError as exc:
            found.problems.append(str(exc))
    return found


def _attach(root: Path, raw: str, count: Callable[[str], int]) -> Attachment:
    path = resolve_in_root(root, raw)
    if path.is_dir():
        raise ToolError(f"@{raw} is a directory; mention a file (the model can list directories itself).")
    if not path.is_file():
        raise ToolError(f"@{raw}: no such file in the project.")
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        raise ToolError(f"@{raw} looks like a binary file; it was not attached.")
    text = data.decode("utf-8", errors="replace")
    truncated = len(text) > MAX_FILE_CHARS
    if truncated:
        text = text[:MAX_FILE_CHARS]
    return Attachment(display_path(root, path), text, text.count("\n") + (not text.endswith("\n") and bool(text)),
                      count(text), truncated)
