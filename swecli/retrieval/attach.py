"""The one reader for files a prompt names: `@path` mentions and paths found by just-in-time retrieval.

Both go through `resolve` (inside the project, not gitignored, an existing regular file) and `read`
(bounded, binary files refused), so the REPL, `-p` and retrieval attach files by the same rules and
report a file they cannot attach in the same sentence. Rendering is one `<file>` element per file:
the whole text for a file the person attached, numbered line ranges for an excerpt.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from swecli.errors import SwecliError
from swecli.records import datarecord
from swecli.tools.base import ToolError
from swecli.tools.paths import display_path, resolve_in_root
from swecli.tools.protected import secret_location
from swecli.tools.text import decode_text, looks_binary
from swecli.tools.walk import ALWAYS_SKIP, IgnoreRules

MAX_READ_BYTES = 512_000
"""Only this much of a file is read: an attachment shows a part of it anyway."""
MAX_WHOLE_CHARS = 60_000
"""A file attached whole (an `@path` mention) is cut here; the model can read the rest with read_file."""


class AttachError(SwecliError):
    """A named file that cannot be attached; `str()` is one sentence saying why."""


@datarecord(frozen=True)
class FileText:
    """A file's text as read for an attachment (cut at the read limit)."""

    rel: str
    text: str
    cut: bool = False
    """True when the file is larger than what was read."""

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    @property
    def line_count(self) -> int:
        return self.text.count("\n") + (1 if self.text and not self.text.endswith("\n") else 0)


def resolve(root: Path, raw: str, rules: IgnoreRules | None = None) -> Path:
    """The file `raw` names inside `root`; AttachError (one sentence) when it is not an attachable file."""
    try:
        path = resolve_in_root(root, raw)
    except ToolError as exc:
        if "cannot be followed" in str(exc):  # a symlink loop
            raise AttachError(f"{raw} cannot be followed (a symlink loop); it was not attached.") from None
        secret = secret_location((Path(root) / raw).expanduser().resolve())
        if secret:
            raise AttachError(f"{raw} is in {secret}, which holds credentials; it was not attached.") from None
        raise AttachError(f"{raw} is outside the project; only files inside it are attached.") from None
    real_root = Path(root).resolve()
    if path.is_dir():
        raise AttachError(f"{raw} is a directory; name a file (the model can list directories itself).")
    if not path.is_file():
        raise AttachError(f"{raw}: no such file in the project.")
    if _hidden(real_root, path, rules or IgnoreRules(real_root)):
        raise AttachError(f"{raw} is ignored by .gitignore (or is swecli's own state); it was not attached.")
    return path


def _hidden(root: Path, path: Path, rules: IgnoreRules) -> bool:
    rel = path.relative_to(root)
    current = root
    for i, part in enumerate(rel.parts):
        current = current / part
        is_dir = i < len(rel.parts) - 1
        if (is_dir and part in ALWAYS_SKIP) or rules.ignored(current, is_dir):
            return True
    return False


def read(root: Path, path: Path) -> FileText:
    rel = display_path(root, path)
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_READ_BYTES + 1)
    except OSError as exc:
        raise AttachError(f"{rel} cannot be read ({exc.strerror or exc}).") from None
    if looks_binary(data[:8192]):
        raise AttachError(f"{rel} looks like a binary file; it was not attached.")
    cut = len(data) > MAX_READ_BYTES
    return FileText(rel, decode_text(data[:MAX_READ_BYTES], complete=not cut), cut)  # in the file's own encoding


def render_whole(file: FileText, count: Callable[[str], int]) -> tuple[str, int, bool]:
    """(element, tokens, truncated) for a file attached as it is."""
    text = file.text
    truncated = file.cut or len(text) > MAX_WHOLE_CHARS
    text = text[:MAX_WHOLE_CHARS]
    note = f' truncated="first {len(text):,} characters; read_file for the rest"' if truncated else ""
    element = f'<file path="{file.rel}" lines="{file.line_count}"{note}>\n{text}\n</file>'
    return element, count(element), truncated


def render_ranges(file: FileText, ranges: list[tuple[int, int]], why: str) -> str:
    """An excerpt: the given 1-based inclusive line ranges, numbered, with `…` between them."""
    lines = file.lines
    parts: list[str] = []
    shown: list[str] = []
    for first, last in merge(ranges, len(lines)):
        if parts:
            parts.append("    …")
        parts += [f"{n:>5}  {lines[n - 1]}" for n in range(first, last + 1)]
        shown.append(f"{first}-{last}")
    total = f"{len(lines)}" + ("+" if file.cut else "")
    head = f'<file path="{file.rel}" lines="{total}" shown="{", ".join(shown)}" why="{_attr(why)}">'
    return "\n".join([head, *parts, "</file>"])


def merge(ranges: list[tuple[int, int]], total: int, gap: int = 3) -> list[tuple[int, int]]:
    """Sorted, clamped to the file, and joined where they overlap or nearly touch."""
    out: list[tuple[int, int]] = []
    for first, last in sorted((max(1, a), min(total, b)) for a, b in ranges):
        if first > last:
            continue
        if out and first <= out[-1][1] + gap:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return out


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
