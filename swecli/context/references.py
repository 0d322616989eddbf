"""Reversible compaction references: what a compaction drops, and where to re-open it.

A summary says what happened; it cannot hold every path, location, error line and command of the
span it replaces. This module extracts those references from the messages being dropped into a
bounded, scored list, each pointing back to where the full text still lives: a message of the
archived transcript (`<archive>.jsonl#12`), or the offload file a large tool result was saved to
(`.swecli/tool_results/<id>.txt`). The model can re-open any of them with read_file or grep.

Files, commands, error and test-result lines and `path:line` locations come from
`swecli.context.extract` (the same rules as compaction's facts), applied one message at a time so
each reference knows its message; URLs and function/class names are added here. A references
section from an earlier compaction is read back and carried forward with its original pointers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from swecli.context.extract import Facts, extract_facts
from swecli.lazy import regex
from swecli.messages import AssistantMessage, Message, ToolCall, ToolMessage
from swecli.records import datarecord

RefKind = Literal["error", "test", "location", "file", "command", "url", "symbol"]

KIND_ORDER: tuple[RefKind, ...] = ("error", "test", "location", "file", "command", "url", "symbol")
KIND_WEIGHT: dict[str, float] = {"error": 5.0, "test": 5.0, "location": 4.0, "file": 3.0, "command": 3.0,
                                 "url": 2.5, "symbol": 2.0}
KIND_LIMIT: dict[str, int] = {"error": 10, "test": 8, "location": 12, "file": 15, "command": 10, "url": 6,
                              "symbol": 10}
KIND_TITLE: dict[RefKind, str] = {"error": "Errors (verbatim)", "test": "Test results (verbatim)",
                              "location": "Locations", "file": "Files", "command": "Commands (exit code)",
                              "url": "URLs", "symbol": "Functions and classes"}
MAX_TEXT_CHARS = 200
REFERENCES_HEADING = "## References to compacted history"
ARROW = " ← "

_OFFLOAD = regex(r"\.swecli/tool_results/[\w.-]+")
_URL = regex(r"\bhttps?://[^\s<>()\[\]{}\"'`]+")
_DEFINITION = regex(
    r"^[ \t]*(?:\d+[ \t:|│]+)?(?:export\s+)?(?:async\s+)?(?:def|class|function|func|fn|struct|interface|trait|enum)\s+"
    r"(?:\([^)]*\)\s*)?([A-Za-z_]\w{2,})", re.MULTILINE)
_TRACE_FRAME = regex(r"^\s*File \"[^\"]+\", line \d+, in ([A-Za-z_]\w{2,})", re.MULTILINE)
_BACKTICKED_CALL = regex(r"`([A-Za-z_][\w.]*[A-Za-z_0-9])(?:\(\))?`")
_NOISE = frozenset({"Traceback (most recent call last):"})
"""Lines extract keeps as error markers that say nothing on their own."""
_FILE_KINDS = (("files_modified", "modified", 1.5), ("files_created", "created", 1.5), ("files_read", "read", 0.0))


@datarecord(frozen=True)
class Reference:
    """Something a summary dropped and where its full text can be read again."""

    kind: RefKind
    text: str
    source: str
    """Where the full text lives: the archived transcript or an offload file (a path)."""
    index: int | None = None
    """The message's position in `source` when it is a transcript; None for an offload file."""
    score: float = 0.0
    count: int = 1
    note: str = ""
    """For files: `modified`, `created` or `read`."""

    @property
    def pointer(self) -> str:
        return self.source + (f"#{self.index}" if self.index is not None else "")


def extract_references(
    messages: Sequence[Message],
    transcript: str = "",
    start_index: int = 0,
    limit: int = 40,
    meta: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Reference]:
    """References in `messages` (the span a compaction drops), best `limit` by score.

    `transcript` is where those messages are archived and `start_index` the position of the first
    one in it, so `#index` finds the message again. `meta` maps tool-call ids to `ToolResult.meta`."""
    meta = meta or {}
    calls: dict[str, ToolCall] = {}
    found: list[Reference] = []
    span = max(len(messages) - 1, 1)
    for offset, msg in enumerate(messages):
        recency = offset / span
        where = (transcript, start_index + offset)
        if isinstance(msg, AssistantMessage):
            calls.update((c.id, c) for c in msg.tool_calls)
            found += _from_text(msg.content, where, recency, symbols_from=_BACKTICKED_CALL)
        elif isinstance(msg, ToolMessage):
            found += _from_tool(msg, calls.get(msg.tool_call_id), where, recency, meta.get(msg.tool_call_id, {}))
        elif msg.kind == "summary":
            found += parse_references(msg.content, transcript)
        else:
            found += _from_text(msg.content, where, recency)
    return select(merge(found), limit)


def _from_tool(msg: ToolMessage, call: ToolCall | None, where: tuple[str, int], recency: float,
               meta: Mapping[str, Any]) -> list[Reference]:
    offload = _OFFLOAD.search(msg.content)
    source, index = (offload.group(0), None) if offload else where
    history: list[Message] = [msg] if call is None else [AssistantMessage(tool_calls=(call,)), msg]
    facts = extract_facts(history, {msg.tool_call_id: meta} if meta else None)
    bonus = 1.0 if msg.is_error else 0.0
    refs = _from_facts(facts, source, index, recency, bonus)
    refs += _urls(msg.content, source, index, recency)
    names = _DEFINITION.findall(msg.content) + _TRACE_FRAME.findall(msg.content)
    refs += [_ref("symbol", n, source, index, recency) for n in dict.fromkeys(names)]
    return refs


def _from_text(text: str, where: tuple[str, int], recency: float,
               symbols_from: re.Pattern[str] | None = None) -> list[Reference]:
    """Errors, locations and URLs in a prompt or an assistant's text (the model's own findings)."""
    source, index = where
    probe = ToolMessage(tool_call_id="_", name="_", content=text)  # extract's line rules, on plain text
    refs = _from_facts(extract_facts([probe]), source, index, recency, 0.0)
    refs += _urls(text, source, index, recency)
    if symbols_from is not None:
        names = [n.rsplit(".", 1)[-1] for n in symbols_from.findall(text) if "/" not in n]
        refs += [_ref("symbol", n, source, index, recency) for n in dict.fromkeys(names) if len(n) >= 3]
    return refs


def _from_facts(facts: Facts, source: str, index: int | None, recency: float, bonus: float) -> list[Reference]:
    refs = [_ref("error", line, source, index, recency, bonus) for line in facts.errors if line not in _NOISE]
    refs += [_ref("test", line, source, index, recency, bonus) for line in facts.test_results]
    refs += [_ref("location", loc, source, index, recency) for loc in facts.locations]
    refs += [_ref("command", cmd, source, index, recency, bonus) for cmd in facts.commands]
    for name, note, extra in _FILE_KINDS:
        refs += [_ref("file", path, source, index, recency, extra, note) for path in getattr(facts, name)]
    return refs


def _urls(text: str, source: str, index: int | None, recency: float) -> list[Reference]:
    urls = (u.rstrip(".,;:!?") for u in _URL.findall(text))
    return [_ref("url", u, source, index, recency) for u in dict.fromkeys(urls)]


def _ref(kind: RefKind, text: str, source: str, index: int | None, recency: float, bonus: float = 0.0,
         note: str = "") -> Reference:
    text = " ".join(text.split())
    if len(text) > MAX_TEXT_CHARS:
        text = text[: MAX_TEXT_CHARS - 1] + "…"
    # Later messages score higher: the end of a dropped span is closest to the work still going on.
    return Reference(kind, text, source, index, KIND_WEIGHT[kind] + 2.0 * recency + bonus, 1, note)


def merge(refs: Iterable[Reference]) -> list[Reference]:
    """One entry per (kind, text): the latest pointer, the best score plus a bonus for repeats
    (up to +2), and for files the strongest note (modified > created > read)."""
    latest: dict[tuple[str, str], Reference] = {}
    best: dict[tuple[str, str], float] = {}
    counts: dict[tuple[str, str], int] = {}
    notes: dict[tuple[str, str], str] = {}
    for ref in refs:
        key = (ref.kind, ref.text)
        latest[key] = ref
        best[key] = max(best.get(key, ref.score), ref.score)
        counts[key] = counts.get(key, 0) + ref.count
        notes[key] = min(notes.get(key, ref.note), ref.note, key=_NOTE_RANK.index)
    return [replace(ref, score=best[k] + 0.5 * min(counts[k] - 1, 4), count=counts[k], note=notes[k])
            for k, ref in latest.items()]


_NOTE_RANK = ("modified", "created", "read", "")


def select(refs: Iterable[Reference], limit: int = 40) -> list[Reference]:
    """The best `limit` references, at most `KIND_LIMIT` per kind, in kind order then message order."""
    by_kind: dict[str, list[Reference]] = {}
    for ref in sorted(refs, key=lambda r: -r.score):
        bucket = by_kind.setdefault(ref.kind, [])
        if len(bucket) < KIND_LIMIT[ref.kind]:
            bucket.append(ref)
    best = sorted((r for bucket in by_kind.values() for r in bucket), key=lambda r: -r.score)[:max(limit, 0)]
    return sorted(best, key=lambda r: (KIND_ORDER.index(r.kind), r.index if r.index is not None else -1, r.text))


def render_references(refs: Sequence[Reference], transcript: str = "") -> str:
    """Compact markdown; `#N` alone means message N of `transcript`. "" when there is nothing."""
    if not refs:
        return ""
    lines = [REFERENCES_HEADING]
    if transcript:
        lines.append(f"`#N` = message N (0-based line) of `{transcript}`; other pointers are saved tool outputs. "
                     "Re-open any of them with read_file or grep.")
    kind: RefKind | None = None
    for ref in refs:
        if ref.kind != kind:
            kind = ref.kind
            lines.append(f"### {KIND_TITLE[kind]}")
        pointer = f"#{ref.index}" if transcript and ref.source == transcript and ref.index is not None else ref.pointer
        note = f" ({ref.note})" if ref.note else ""
        lines.append(f"- {ref.text}{note}{ARROW}{pointer}")
    return "\n".join(lines)


_TITLE_KIND = {title: kind for kind, title in KIND_TITLE.items()}
_TRANSCRIPT_LINE = regex(r"^`#N` = message N \(0-based line\) of `([^`]+)`")


def parse_references(text: str, transcript: str = "") -> list[Reference]:
    """Read back a section `render_references` wrote (e.g. inside an earlier summary), pointers intact."""
    start = text.find(REFERENCES_HEADING)
    if start < 0:
        return []
    refs: list[Reference] = []
    kind: RefKind | None = None
    own = transcript
    for line in text[start + len(REFERENCES_HEADING):].splitlines():
        header = _TRANSCRIPT_LINE.match(line)
        if header:
            own = header.group(1)
        elif line.startswith("### "):
            kind = _TITLE_KIND.get(line[4:].strip())
        elif line.startswith("## "):
            break
        elif line.startswith("- ") and kind is not None and ARROW in line:
            refs.append(_parse_line(line[2:], kind, own))
    return refs


def _parse_line(body: str, kind: RefKind, transcript: str) -> Reference:
    text, pointer = body.rsplit(ARROW, 1)
    note = ""
    for candidate in ("modified", "created", "read"):
        if kind == "file" and text.endswith(f" ({candidate})"):
            text, note = text[: -len(candidate) - 3], candidate
    source, _, number = pointer.rpartition("#")
    if not source and number.isdigit():
        source = transcript
    index = int(number) if number.isdigit() else None
    if index is None:
        source = pointer
    # Carried-over references rank as if from the start of the span: older than anything new.
    return Reference(kind, text, source, index, KIND_WEIGHT[kind], 1, note)
