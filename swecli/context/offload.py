"""Reversible offload of large tool outputs: the full text goes to a file, the context gets a preview.

A tool result over the threshold (tokens, or more than `MAX_LINES` lines) is saved in full under
`<root>/.swecli/tool_results/<call id>.txt` (atomic write; the file's lines are the output's lines,
so line numbers in the preview are line numbers in the file) and the history gets a head+tail
preview instead: the size (lines, characters, tokens), the omitted line range and the exact calls
that fetch it (`read_file` with offset/limit, or `grep`). Nothing the model saw becomes unreachable.

`.swecli/` is inside the project root, so swecli's own read_file and grep reach these files (the
walk skips `.swecli/` when listing or searching a directory, never when a file is named).

Loops. Paging through an offload file with read_file must never produce another offload file (the
model would chase copies forever). A read_file whose path is inside `.swecli/tool_results/` is
therefore never saved again; when such a page is itself over the threshold (read_file returns up
to 2,000 lines / 100k characters by default) it is clipped at a line boundary to the threshold and
ends with the exact `offset`/`limit` that continues it: the source is already on disk, so nothing is
lost and every page the model gets is bounded. A grep or a bash `cat` of an offload file is a new,
different output: it follows the normal rule (and grep's output is bounded by its match limit).

Cut outputs. A tool that caps what it returns (bash over `tools.max_output_chars`, grep over its
match limit) hands its whole output along (`ToolResult.full`, see `swecli.tools.spool`);
`offload_full()` saves that whole output, always, and the model gets the preview built from it (or,
when the tool's own cut is small enough, that cut plus where the whole output is). The sizes shown are
those of the whole output, so the cap limits what the model sees, never what is saved.

Saved files are swecli's records: secrets are masked in them as in the transcript (`session.secrets`: the
environment's keys and the configured one), and they are written 0600 in a 0700 folder (`session.private`).

Effects: only `offload()` and `offload_full()` write (one file per offloaded result). Failures raise `OffloadError`;
the caller then keeps the full output in the context (nothing lost) and reports the message.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from swecli.errors import SwecliError
from swecli.lazy import regex
from swecli.records import datarecord
from swecli.session.private import make_private_dir, open_private, write_private
from swecli.session.secrets import Redactor
from swecli.tools.facts import facts_for

if TYPE_CHECKING:
    from swecli.tools.spool import FullOutput

OFFLOAD_DIR = ".swecli/tool_results"
"""Relative to the project root; always written with forward slashes in previews."""
MAX_LINES = 400
"""An output with more lines than this is offloaded even below the token threshold: a long listing or
log is mostly noise the model skims, and the preview's line ranges make the rest easy to page.
read_file pages are exempt (offloaded by tokens only)."""
PREVIEW_LINE_CHARS = 300
"""Lines of the preview are cut at this many characters (the file keeps them whole)."""
READ_LINE_CHARS = 2_000
"""read_file cuts lines longer than this; the preview says how to see such lines in full."""
PAGE_LINES = 200
"""The `limit` suggested for paging through an offload file: a page stays well under the threshold."""
OFFLOAD_MARKER = "[swecli: output offloaded"
_PATH_IN_PREVIEW = regex(r"full text: `([^`]+)`")
_UNSAFE = regex(r"[^A-Za-z0-9_.-]+")

CountTokens = Callable[[str], int]


class OffloadError(SwecliError):
    """The offload file could not be written; the caller keeps the full output in the context."""


@datarecord(frozen=True)
class Offloaded:
    """A big tool output saved to a file, and the preview that enters the context instead."""

    content: str
    """What enters the context instead of the full output."""
    path: str
    """The offload file, relative to the project root (forward slashes)."""
    lines: int
    chars: int
    tokens: int
    """Of the full output."""
    saved: bool = True
    """False for a clipped page of an existing offload file (nothing new was written)."""


def offload(
    root: Path,
    call_id: str,
    tool_name: str,
    content: str,
    count_tokens: CountTokens,
    threshold_tokens: int,
    preview_lines: int,
    *,
    arguments: str = "",
    max_lines: int = MAX_LINES,
    redactor: Redactor | None = None,
) -> Offloaded | None:
    """The preview to put in the context, or None when `content` is small enough to keep as is.

    `arguments` is the tool call's raw JSON arguments: it tells a read_file of an offload file apart
    (clipped, never saved again; see the module docstring). Raises OffloadError when the file cannot
    be written. `redactor` masks secrets in the saved file (default: those of the environment).
    """
    paging = _offload_file_read(root, tool_name, arguments)
    if paging is not None:
        return clip_page(paging, content, count_tokens, threshold_tokens)
    lines = split_lines(content)
    # read_file pages go by tokens only: the model asked for exactly those lines, and read_file bounds
    # a page itself. The line rule is for listings and logs, mostly skimmed.
    too_many_lines = facts_for(tool_name).kind != "read" and len(lines) > max_lines
    if not too_many_lines and _surely_within(content, threshold_tokens):
        return None
    tokens = count_tokens(content)
    if tokens <= threshold_tokens and not too_many_lines:
        return None
    path = save_output(root, call_id, content, redactor)
    preview = render_preview(tool_name, path, lines, len(content), tokens, preview_lines)
    return Offloaded(preview, path, len(lines), len(content), tokens)


EXACT_COUNT_BYTES = 4 << 20
"""A whole output up to this size is tokenized for the preview's header; a bigger one is estimated."""
BYTES_PER_TOKEN = 4


def offload_full(
    root: Path,
    call_id: str,
    tool_name: str,
    content: str,
    full: FullOutput,
    count_tokens: CountTokens,
    threshold_tokens: int,
    preview_lines: int,
    *,
    max_lines: int = MAX_LINES,
    redactor: Redactor | None = None,
) -> Offloaded:
    """Save a tool's whole output (`content` is the tool's own cut of it) and return what the context gets:
    the preview of the whole output when it is over the threshold, else `content` with a line saying
    where the whole output is. Raises OffloadError when the file cannot be written."""
    path = save_full(root, call_id, full, redactor)
    text = full.text(EXACT_COUNT_BYTES)
    tokens = count_tokens(text) if text is not None else full.size // BYTES_PER_TOKEN
    size = f"{full.lines:,} lines, {full.size:,} bytes, {'' if text is not None else '~'}{tokens:,} tokens"
    if full.lines <= max_lines and tokens <= threshold_tokens:
        note = (f"[swecli: the output above is cut; the whole of it ({size}) is saved in `{path}`: read_file or "
                f"grep it there]")
        return Offloaded(f"{content}\n{note}", path, full.lines, full.size, tokens)
    head_n, tail_n = _split_preview(full.lines, preview_lines)
    head = full.head_lines(head_n)
    tail = full.tail_lines(tail_n) if head_n < full.lines else []
    preview = _render(tool_name, path, size, full.lines, head, tail, full.longest_line)
    if full.status:
        preview += "\n" + full.status
    return Offloaded(preview, path, full.lines, full.size, tokens)


def save_full(root: Path, call_id: str, full: FullOutput, redactor: Redactor | None = None) -> str:
    """Write a whole output, secrets masked, under the offload folder; returns its root-relative path. Read in
    pieces: an output of hundreds of MB never sits in memory."""
    redactor = redactor if redactor is not None else Redactor.from_environment()
    folder = Path(root) / OFFLOAD_DIR
    target = folder / f"{safe_name(call_id)}.txt"
    while target.exists():  # call ids repeat across sessions: never overwrite an earlier output
        target = folder / f"{safe_name(call_id)}-{secrets.token_hex(5)}.txt"
    try:
        make_private_dir(folder)
        if redactor:
            _write_redacted(target, full, redactor)
        else:
            full.save_to(target)  # nothing to mask: the spooled file (0600) is moved, not copied
            target.chmod(0o600)
    except OSError as exc:
        full.discard()
        raise OffloadError(f"could not save a large tool output to {target} ({exc.strerror or exc}); the "
                           "context keeps the tool's cut of it") from None
    return f"{OFFLOAD_DIR}/{target.name}"


def _surely_within(content: str, threshold_tokens: int) -> bool:
    """True when `content` cannot exceed the threshold, without tokenizing: a BPE token covers at
    least one byte, so a text of at most `threshold_tokens` UTF-8 bytes has at most that many tokens."""
    return len(content) <= threshold_tokens and len(content.encode("utf-8", errors="surrogatepass")) <= threshold_tokens


def split_lines(content: str) -> list[str]:
    """Lines as read_file numbers them: split on \\n only, a final newline ends the last line."""
    lines = content.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def safe_name(call_id: str) -> str:
    """A file name for a call id: ids come from the model's provider and may hold any character."""
    name = _UNSAFE.sub("_", call_id).strip("._")[:80]
    if name != call_id or not name:
        name = f"{name or 'call'}-{hashlib.sha256(call_id.encode()).hexdigest()[:8]}"
    return name


def _write_redacted(target: Path, full: FullOutput, redactor: Redactor) -> None:
    fd = open_private(target, "w")
    try:
        with open(fd, "wb", closefd=False) as out:
            for piece in redactor.redact_chunks(full.chunks()):
                out.write(piece)
    except OSError:
        target.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)


def save_output(root: Path, call_id: str, content: str, redactor: Redactor | None = None) -> str:
    """Write `content`, secrets masked, under the offload folder (atomically, 0600) and return its
    root-relative path.

    Call ids repeat across sessions (and some providers reuse them within one), so an existing file
    with different content is never overwritten: the new one gets a content-hash suffix.
    """
    data, target = _target(root, call_id, content, redactor)
    if not (target.exists() and _same_bytes(target, data)):
        _write(target, data)
    return f"{OFFLOAD_DIR}/{target.name}"


def _target(root: Path, call_id: str, content: str, redactor: Redactor | None) -> tuple[bytes, Path]:
    """The bytes `save_output` writes for `content` and the file they go to."""
    content = (redactor if redactor is not None else Redactor.from_environment()).redact(content)
    data = content.replace("\0", "\u2400").encode("utf-8", errors="replace")
    name = safe_name(call_id)
    folder = Path(root) / OFFLOAD_DIR
    target = folder / f"{name}.txt"
    if target.exists() and not _same_bytes(target, data):
        target = folder / f"{name}-{hashlib.sha256(data).hexdigest()[:10]}.txt"
    return data, target


@datarecord(frozen=True)
class StagedOutput:
    """An output written ahead where nothing names it (`stage_output`), moved to the file it will be read
    from only when a digest names that file (`publish`)."""

    reference: str
    """The root-relative path `save_output` would return (what a digest names)."""
    target: Path
    staged: Path | None
    """Where the bytes wait; None when `target` already holds them."""

    def publish(self) -> None:
        """Move the staged bytes to their file: a link, never over a file that holds other bytes (two
        outputs of one call id staged before either was saved would otherwise overwrite each other's
        file; the second then fails here and is saved as `save_output` saves it, under a hash suffix).
        Raises OffloadError when that fails."""
        if self.staged is None:
            return
        try:
            os.link(self.staged, self.target)
        except FileExistsError:
            if not _same_bytes(self.target, self.staged.read_bytes()):
                raise OffloadError(f"{self.target} holds another output") from None
        except OSError as exc:
            raise OffloadError(f"could not move a saved tool output to {self.target} ({exc.strerror or exc})") from None
        self.staged.unlink(missing_ok=True)

    def discard(self) -> None:
        """Remove the staged bytes if they were never published."""
        if self.staged is not None:
            self.staged.unlink(missing_ok=True)


STAGING_DIR = ".staged"
"""Under the offload folder: outputs written ahead of a fold that may not come (never listed as saved)."""


def stage_output(root: Path, call_id: str, content: str, redactor: Redactor | None = None,
                 unique: str = "") -> StagedOutput:
    """`save_output`'s bytes written now under `STAGING_DIR` (`unique` tells apart outputs staged at once for
    the same file), so that saving them later is one rename (`StagedOutput.publish`). Raises OffloadError."""
    data, target = _target(root, call_id, content, redactor)
    reference = f"{OFFLOAD_DIR}/{target.name}"
    if target.exists() and _same_bytes(target, data):
        return StagedOutput(reference, target, None)
    staged = target.parent / STAGING_DIR / f"{unique}{target.name}"
    _write(staged, data)
    return StagedOutput(reference, target, staged)


def _same_bytes(path: Path, data: bytes) -> bool:
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


def _write(target: Path, data: bytes) -> None:
    try:
        write_private(target, data)
    except OSError as exc:
        detail = exc.strerror or str(exc)
        raise OffloadError(f"could not save a large tool output to {target} ({detail}); it stays in the "
                           "context in full") from None


# --- the preview ----------------------------------------------------------------------------------

def render_preview(tool_name: str, path: str, lines: list[str], chars: int, tokens: int, preview_lines: int) -> str:
    """Head and tail of the output, its size, and the calls that fetch the omitted lines."""
    total = len(lines)
    head_n, tail_n = _split_preview(total, preview_lines)
    head, tail = lines[:head_n], (lines[total - tail_n:] if tail_n else [])
    longest = max((len(line) for line in lines), default=0)
    return _render(tool_name, path, f"{total:,} lines, {chars:,} characters, {tokens:,} tokens", total, head, tail,
                   longest)


def _render(tool_name: str, path: str, size: str, total: int, head: list[str], tail: list[str], longest: int) -> str:
    header = f"{OFFLOAD_MARKER}: {tool_name} returned {size}; full text: `{path}`]"
    parts = [header, *(_cut(line) for line in head)]
    if len(head) + len(tail) < total:
        parts.append(_omitted_note(path, len(head) + 1, total - len(tail)))
    parts.extend(_cut(line) for line in tail)
    footer = _footer(path, head + tail, longest)
    if footer:
        parts.append(footer)
    return "\n".join(parts)


def _split_preview(total: int, preview_lines: int) -> tuple[int, int]:
    if total <= preview_lines:
        return total, 0
    head = (preview_lines + 1) // 2
    return head, preview_lines - head


def _omitted_note(path: str, first: int, last: int) -> str:
    count = last - first + 1
    return (f"[... lines {first:,}-{last:,} omitted ({count:,} lines). Read them with read_file(path=\"{path}\", "
            f"offset={first}, limit={min(PAGE_LINES, count)}) and go on by offset, or search them with "
            f"grep(pattern=..., path=\"{path}\") ...]")


def _footer(path: str, shown: list[str], longest: int) -> str:
    notes = []
    if any(len(line) > PREVIEW_LINE_CHARS for line in shown):
        notes.append(f"lines longer than {PREVIEW_LINE_CHARS} characters are cut in this preview")
    if longest > READ_LINE_CHARS:
        notes.append(f"read_file cuts lines over {READ_LINE_CHARS:,} characters; see those with bash, e.g. "
                     f"`sed -n 'Np' {path} | fold -w {READ_LINE_CHARS}`")
    return f"[swecli: {'; '.join(notes)}; `{path}` has the output in full]" if notes else ""


def _cut(line: str) -> str:
    line = line.replace("\0", "\u2400")
    if len(line) <= PREVIEW_LINE_CHARS:
        return line
    return f"{line[:PREVIEW_LINE_CHARS]}… [+{len(line) - PREVIEW_LINE_CHARS:,} chars]"


def offload_path_in(content: str) -> str | None:
    """The offload file a preview names (for decay's digests), or None if `content` is no preview."""
    if not content.startswith(OFFLOAD_MARKER):
        return None
    match = _PATH_IN_PREVIEW.search(content.split("\n", 1)[0])
    return match.group(1) if match else None


# --- paging through an offload file -------------------------------------------------------------

def _offload_file_read(root: Path, tool_name: str, arguments: str) -> str | None:
    """The root-relative path when this call is a read_file of an offload file, else None."""
    if facts_for(tool_name).kind != "read" or not arguments:
        return None
    try:
        args = json.loads(arguments)
    except json.JSONDecodeError:
        return None
    raw = args.get("path") if isinstance(args, dict) else None
    if not isinstance(raw, str) or not raw or "\0" in raw:
        return None
    real_root = Path(root).resolve()
    try:
        target = (real_root / Path(raw).expanduser()).resolve()
        rel = target.relative_to(real_root / OFFLOAD_DIR)
    except (ValueError, OSError, RuntimeError):
        return None
    return f"{OFFLOAD_DIR}/{rel.as_posix()}"


_NUMBERED = regex(r"^\s*(\d+)\t")


def clip_page(path: str, content: str, count_tokens: CountTokens, threshold_tokens: int) -> Offloaded | None:
    """A read_file page of an offload file, cut at a line boundary to `threshold_tokens`, ending with
    the read_file call that continues it. None when the page fits (it enters the context as is)."""
    if _surely_within(content, threshold_tokens):
        return None
    tokens = count_tokens(content)
    if tokens <= threshold_tokens:
        return None
    lines = split_lines(content)
    kept: list[str] = []
    budget = threshold_tokens - 80  # room for the note
    used = 0
    for line in lines:
        cost = count_tokens(line) + 1
        if kept and used + cost > budget:
            break
        kept.append(line)
        used += cost
    last = _line_number(kept)
    if last is None:
        note = (f"[swecli: this page was {tokens:,} tokens, over the {threshold_tokens:,}-token limit for one "
                f"result; read `{path}` with a smaller limit (e.g. limit={PAGE_LINES // 4})]")
    else:
        note = (f"[swecli: page clipped after line {last:,} to stay under {threshold_tokens:,} tokens; continue "
                f"with read_file(path=\"{path}\", offset={last + 1}, limit={PAGE_LINES})]")
    clipped = "\n".join([*kept, note])
    return Offloaded(clipped, path, len(lines), len(content), tokens, saved=False)


def _line_number(kept: list[str]) -> int | None:
    for line in reversed(kept):
        match = _NUMBERED.match(line)
        if match:
            return int(match.group(1))
    return None
