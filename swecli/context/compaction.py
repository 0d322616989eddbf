"""Compaction: rewrite an over-full history into a smaller one that loses nothing for good.

Pure functions over typed history; the only effects go through the two objects passed in: an
`Archive` (where the full pre-compaction history and shortened texts are saved) and, for the
summarize strategy, a `Provider`.

The shape of a compacted history:

    [every user prompt of the compacted span, verbatim and in order (a huge paste keeps its head
     and points to a file with the full text)]
    [one UserMessage(kind="summary"): marker + model summary + deterministic facts + archive path]
    [the most recent turns, verbatim, chosen by a token budget]

Cuts happen only at turn boundaries (see `boundaries`), so a tool call is never separated from its
result. Strategies: `summarize` (an LLM writes the summary; chunked when the span does not fit one
request, truncation when the model fails), `truncate` (no model call), `importance` (drop the
lowest-value turns first, keep the rest verbatim).

`compact_history` does it all at once. Its three steps are also offered apart, for a summary made
ahead on another thread (`background.py`): `plan_span` (where the span ends), `prepare_span` (the
archive, the index of saved outputs, the facts, the model's summary: the slow part) and `apply_span`
(the prepared summary over the span, then every later message verbatim).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import field, replace
from typing import Any

from swecli.context.archive import Archive, ArchiveError, MemoryArchive
from swecli.context.compaction_params import STRATEGIES as STRATEGIES
from swecli.context.compaction_params import CompactionParams as CompactionParams
from swecli.context.compaction_params import Count as Count
from swecli.context.compaction_params import CountText as CountText
from swecli.context.compaction_params import Pin as Pin
from swecli.context.compaction_params import SummarySection as SummarySection
from swecli.context.compaction_params import facts_budget
from swecli.context.compaction_params import is_prompt as is_prompt
from swecli.context.compaction_params import is_summary as is_summary
from swecli.context.compaction_params import summary_reserve as summary_reserve
from swecli.context.decay import key_arguments
from swecli.context.extract import Facts, extract_facts, render_facts
from swecli.context.tokens import head_by_tokens, tail_by_tokens
from swecli.lazy import regex
from swecli.llm.base import Cancelled, CancelToken, ModelRequest, Provider, ProviderError, complete
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolCall, ToolMessage, Usage, UserMessage
from swecli.records import datarecord

SUMMARY_MARKER = "[swecli: compacted context]"
SUMMARY_HEADING = "## Summary"


@datarecord(frozen=True)
class CompactionResult:
    """The history after one compaction, and what was done to it."""

    history: list[Message]
    changed: bool
    strategy: str
    messages_compacted: int = 0
    notes: tuple[str, ...] = ()
    archive: str = ""
    tokens_after: int = 0
    """Local tokens of the whole request after compaction (fixed parts included)."""
    usage: Usage = field(default_factory=Usage)
    """What the summary requests cost."""


# --- structure ----------------------------------------------------------------------------------

def boundaries(history: Sequence[Message]) -> list[int]:
    """Indices where the history can be cut without separating a tool call from its result.

    A cut may go before a user message, or before an assistant message once every answered call
    issued before it has its result. Calls that are never answered (a dangling final call) do not
    block cuts. The end of the history is always a boundary.
    """
    answered = {m.tool_call_id for m in history if isinstance(m, ToolMessage)}
    open_ids: set[str] = set()
    cuts: list[int] = []
    for i, msg in enumerate(history):
        if not open_ids and not isinstance(msg, ToolMessage):
            cuts.append(i)
        if isinstance(msg, AssistantMessage):
            open_ids.update(c.id for c in msg.tool_calls if c.id in answered)
        elif isinstance(msg, ToolMessage):
            open_ids.discard(msg.tool_call_id)
    cuts.append(len(history))
    return cuts


def segments(history: Sequence[Message]) -> list[tuple[int, int]]:
    """The history split at every boundary: each (start, end) is an atomic unit for dropping."""
    cuts = boundaries(history)
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


def compactable(head: Sequence[Message], pinned: Mapping[int, Message] | None = None) -> bool:
    """Whether a span holds anything compaction would shrink (kept prompts, pinned messages and
    earlier summaries alone are already as small as compaction makes them)."""
    pinned = pinned or {}
    return any(not is_prompt(m) and not is_summary(m) and i not in pinned for i, m in enumerate(head))


def choose_cut(history: Sequence[Message], count: Count, keep_recent: int, room: Callable[[int], int]) -> int:
    """The earliest boundary whose suffix fits both `keep_recent` and `room(cut)`; at least the last
    segment is kept (the model must see its latest tool results)."""
    cuts = boundaries(history)
    if len(cuts) < 2:
        return len(history)
    cut = cuts[-2] if cuts[-2] < len(history) else len(history)
    tail = sum(count(m) for m in history[cut:])
    for candidate in reversed(cuts[:-2]):
        extra = sum(count(m) for m in history[candidate:cut])
        if tail + extra > min(keep_recent, room(candidate)):
            break
        cut, tail = candidate, tail + extra
    return cut


# --- the pipeline -------------------------------------------------------------------------------

_NO_ARCHIVE = MemoryArchive()
"""For planning only: nothing is saved then."""


@datarecord
class _Work:
    """What one compaction works with: the history, its parameters, its counters."""

    history: Sequence[Message]
    params: CompactionParams
    count: Count
    text_count: CountText
    archive: Archive
    provider: Provider | None = None
    cancel: CancelToken | None = None
    notes: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    archive_path: str = ""

    def save_text(self, label: str, text: str) -> str:
        try:
            return self.archive.save_text(label, text)
        except ArchiveError as exc:
            self.notes.append(f"could not save {label} ({exc}); its full text is only in the archive")
            return self.archive_path or "(unsaved)"

    def total(self, history: Sequence[Message]) -> int:
        return self.params.fixed + sum(self.count(m) for m in history)


@datarecord(frozen=True)
class CompactionIO:
    """What a compaction reads and writes besides the history."""

    archive: Archive
    """Where it saves what it removes (the transcript, shortened texts, the index of saved outputs)."""
    provider: Provider | None = None
    """Who writes the summary (None: no model call; the summarize strategy then falls back to truncation)."""
    meta: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """The `ToolResult.meta` the tools reported, by tool-call id (exact exit codes, paths)."""
    cancel: CancelToken | None = None
    """Interrupts a summary request (the compaction then falls back to truncation)."""


def compact_history(history: Sequence[Message], params: CompactionParams, count: Count, text_count: CountText,
                    io: CompactionIO) -> CompactionResult:
    """Compact `history` under `params.limit`; unchanged (changed=False) when there is nothing to do."""
    if params.strategy not in STRATEGIES:
        raise ValueError(f"unknown compaction strategy {params.strategy!r}; use one of {', '.join(STRATEGIES)}")
    work = _Work(history, params, count, text_count, io.archive, io.provider, io.cancel)
    before = work.total(history)
    if before <= params.limit and not params.force:
        return CompactionResult(list(history), False, params.strategy, tokens_after=before,
                                notes=("the history already fits",))
    cut = _plan_cut(work, history)
    if not cut:
        return _fit_only(work, before)
    prepared = _prepare(work, history, cut, io.meta, fallback=True)
    if prepared is None:
        # Nothing would be dropped (importance kept every older message): adding a summary message
        # would only make the context larger.
        return CompactionResult(list(history), False, work.params.strategy, tokens_after=before,
                                notes=("every older message scored as worth keeping: nothing to drop",))
    return _assemble(work, history, prepared)


@datarecord(frozen=True)
class PreparedSpan:
    """What replaces a compacted span `history[:cut]`: the prompts (and turns, and pinned messages) it
    keeps, then its summary message. Made ahead of time by a background summary, or at once by
    `compact_history`."""

    cut: int
    head: tuple[Message, ...]
    """The span itself (the pins are worked out again against what follows it when it is applied)."""
    prompts: Mapping[int, UserMessage]
    """The span's prompts as kept (a huge paste shortened), by index in the span."""
    kept: frozenset[int]
    """Indices of the span's messages a strategy keeps verbatim (importance)."""
    summary: UserMessage
    strategy: str
    archive: str
    notes: tuple[str, ...] = ()
    usage: Usage = field(default_factory=Usage)
    index: str = ""
    """The index of the saved outputs the span names ("" when it names none)."""

    def kept_messages(self, pinned: Mapping[int, Message]) -> list[Message]:
        """Prompts, pinned messages and the turns a strategy kept, in their original order."""
        return [self.prompts.get(i) or pinned.get(i) or m for i, m in enumerate(self.head)
                if i in self.prompts or i in pinned or i in self.kept]


def plan_span(history: Sequence[Message], params: CompactionParams, count: Count, text_count: CountText) -> int:
    """Where the span a compaction would summarize ends (0 when nothing there is worth compacting)."""
    return _plan_cut(_Work(history, params, count, text_count, _NO_ARCHIVE), history)


def prepare_span(history: Sequence[Message], cut: int, params: CompactionParams, count: Count, text_count: CountText,
                 io: CompactionIO) -> tuple[PreparedSpan | None, tuple[str, ...], Usage]:
    """The model's summary of `history[:cut]` with its facts, references and index, the whole history
    archived: the slow part of a compaction, safe to run on another thread (it touches nothing shared
    but the archive and the provider). (None, notes, usage) when the model's summary failed or was
    cancelled: no truncation stands in for it here. `usage`: what its requests cost either way."""
    work = _Work(history, params, count, text_count, io.archive, io.provider, io.cancel)
    return _prepare(work, history, cut, io.meta, fallback=False), tuple(work.notes), work.usage


def apply_span(
    history: Sequence[Message], prepared: PreparedSpan, params: CompactionParams, count: Count,
    text_count: CountText, archive: Archive,
) -> CompactionResult:
    """`prepared` applied to `history`, whose first `prepared.cut` messages are the span it summarizes (or
    the engine's folds of them, made meanwhile): its kept prompts and summary, then every later message
    verbatim (shortened only if still over the limit)."""
    work = _Work(history, params, count, text_count, archive)
    work.archive_path = prepared.archive
    return _assemble(work, history, _with_later_saves(work, history, prepared))


def _with_later_saves(work: _Work, history: Sequence[Message], prepared: PreparedSpan) -> PreparedSpan:
    """Outputs of the span folded after its summary was made name files its index does not list: a new
    index lists them too (after the old one's entries), so whatever was saved stays one read away."""
    calls = {c.id: c for m in prepared.head if isinstance(m, AssistantMessage) for c in m.tool_calls}
    later: dict[str, str] = {}
    for position, (now, then) in enumerate(zip(history[: prepared.cut], prepared.head, strict=False)):
        if now is not then:
            later.update((path, f"- `{path}` ← {_named_by(now, calls)} (`{prepared.archive}` #{position})")
                         for path in SAVED_PATH.findall(now.content) if path not in then.content)
    if not later:
        return prepared
    earlier = (work.archive.read_text(prepared.index) if prepared.index else None) or _index_header()
    index = work.save_text("index", earlier.rstrip("\n") + "\n" + "\n".join(later.values()) + "\n")
    content = prepared.summary.content
    if prepared.index:
        content = content.replace(f"`{prepared.index}`", f"`{index}`")
    else:
        first, _, rest = content.partition("\n\n")
        content = f"{first}{_index_sentence(index)}" + (f"\n\n{rest}" if rest else "")
    return replace(prepared, summary=replace_content(prepared.summary, content), index=index)


def _plan_cut(work: _Work, history: Sequence[Message]) -> int:
    params = work.params
    reserve = summary_reserve(params, any(is_summary(m) for m in history))
    head_prompt_cost = _prompt_costs(history, work)
    cut = choose_cut(history, work.count, params.keep_recent,
                     lambda c: params.limit - params.fixed - reserve - head_prompt_cost(c))
    cut = max(cut, _after_last_summary(history))
    return cut if compactable(history[:cut], _pinned(params, history[:cut], history[cut:])) else 0


def _pinned(params: CompactionParams, head: Sequence[Message], tail: Sequence[Message]) -> dict[int, Message]:
    return dict(params.pin(head, tail)) if params.pin is not None else {}


def _prepare(work: _Work, history: Sequence[Message], cut: int, meta: Mapping[str, Mapping[str, Any]] | None,
             fallback: bool) -> PreparedSpan | None:
    head, tail = list(history[:cut]), list(history[cut:])
    _archive_history(work)
    index = _write_index(work, head)
    facts = extract_facts(head, meta).merged(Facts(archives=[work.archive_path] if work.archive_path else []))
    prompts = {i: _keep_prompt(m, work) for i, m in enumerate(head) if is_prompt(m)}
    pinned = _pinned(work.params, head, tail)
    strategy, body, kept = _run_strategy(work, head, tail, [*prompts.values(), *pinned.values()])
    if strategy != work.params.strategy and strategy != "hook" and not fallback:
        return None
    summary = UserMessage(kind="summary", content=_summary_message(work, head, strategy, body, facts, index))
    prepared = PreparedSpan(cut, tuple(head), prompts, frozenset(kept), summary, strategy, work.archive_path,
                            tuple(work.notes), work.usage, index)
    if len(prepared.kept_messages(pinned)) == len(head):
        return None
    return prepared


def _assemble(work: _Work, history: Sequence[Message], prepared: PreparedSpan) -> CompactionResult:
    work.notes.extend(n for n in prepared.notes if n not in work.notes)
    tail = history[prepared.cut:]
    kept = prepared.kept_messages(_pinned(work.params, prepared.head, tail))
    result = _fit(work, [*kept, prepared.summary, *tail], prepared.summary)
    return CompactionResult(
        history=result, changed=True, strategy=prepared.strategy, messages_compacted=_replaced(history, result),
        notes=tuple(work.notes), archive=prepared.archive, tokens_after=work.total(result),
        usage=prepared.usage,  # every summary request was made while preparing; applying makes none
    )


def _after_last_summary(history: Sequence[Message]) -> int:
    """An earlier summary always goes into the compacted span (its facts and text are folded into the
    new one), so a history never holds two summaries."""
    last = max((i for i, m in enumerate(history) if is_summary(m)), default=-1)
    return last + 1


def _prompt_costs(history: Sequence[Message], work: _Work) -> Callable[[int], int]:
    """cost(cut): tokens the prompts (and pinned messages) before `cut` take once kept (huge pastes
    shortened)."""
    cap = work.params.prompt_head_tokens + 60
    pinned = work.params.pin(history, ()) if work.params.pin is not None else {}
    costs = [min(work.count(m), cap) if is_prompt(m) else work.count(pinned[i]) if i in pinned else 0
             for i, m in enumerate(history)]
    prefix = [0]
    for c in costs:
        prefix.append(prefix[-1] + c)
    return lambda cut: prefix[cut]


def _archive_history(work: _Work) -> None:
    try:
        work.archive_path = work.archive.save_history(work.history)
    except ArchiveError as exc:
        work.notes.append(f"the pre-compaction history could not be archived ({exc})")


SAVED_PATH = regex(r"(?:\.swecli/(?:tool_results|compactions)/|memory://)[\w.-]+")
"""A file a message names that holds saved text: an offloaded or decayed output, a shortened message,
an earlier compaction's transcript or index."""
INDEX_HEADING = "# Saved outputs of the compacted history"
_INDEX_ENTRY = regex(r"^- `([^`]+)`")


def _write_index(work: _Work, head: Sequence[Message]) -> str:
    """Save the index of every file the compacted span names (with the message that names it), after
    the entries of the earlier indexes it names: whatever was ever saved stays one read away from the
    summary. "" when there is nothing to list."""
    entries = dict(_earlier_entries(work, head))
    calls: dict[str, ToolCall] = {}
    for position, msg in enumerate(head):
        if isinstance(msg, AssistantMessage):
            calls.update((c.id, c) for c in msg.tool_calls)
        for path in SAVED_PATH.findall(msg.content):
            # An earlier index is not listed: its entries are (carried over above).
            if path != work.archive_path and path not in entries and not _is_index(path):
                entries[path] = f"- `{path}` ← {_named_by(msg, calls)} (`{work.archive_path}` #{position})"
    if not entries:
        return ""
    return work.save_text("index", "\n".join([_index_header(), *entries.values()]) + "\n")


def _index_header() -> str:
    return "\n".join([INDEX_HEADING, "Every file below holds text the compacted history pointed to: read it with "
                      "read_file (offset/limit) or grep it. `#N` is message N (0-based line) of the transcript "
                      "named with it.", ""])


def _index_sentence(index: str) -> str:
    return (f" Every output saved from it (offloaded tool results, shortened messages, earlier transcripts) "
            f"is listed in `{index}`.")


def _earlier_entries(work: _Work, head: Sequence[Message]) -> Iterator[tuple[str, str]]:
    for msg in head:
        if not is_summary(msg):
            continue
        for path in SAVED_PATH.findall(msg.content):
            text = work.archive.read_text(path) if _is_index(path) else None
            for line in (text or "").splitlines():
                match = _INDEX_ENTRY.match(line)
                if match:
                    yield match.group(1), line


def _is_index(path: str) -> bool:
    """`<stamp>-index-<digest>.txt` on disk, `memory://index-<n>.txt` in memory."""
    name = path.rsplit("/", 1)[-1]
    return name.startswith("index-") or "-index-" in name


def _named_by(msg: Message, calls: Mapping[str, ToolCall]) -> str:
    if isinstance(msg, ToolMessage):
        return f"{msg.name}({key_arguments(calls.get(msg.tool_call_id))})"
    if is_summary(msg):
        return "an earlier summary"
    return "a user message" if isinstance(msg, UserMessage) else "an assistant message"


def _fit_only(work: _Work, before: int) -> CompactionResult:
    """Nothing older to compact: only shortening oversized recent messages can help."""
    if before <= work.params.limit:
        return CompactionResult(list(work.history), False, work.params.strategy, tokens_after=before,
                                notes=("nothing to compact: the history is within the recent-turns budget",))
    _archive_history(work)
    result = _fit(work, list(work.history), None)
    replaced = _replaced(work.history, result)
    return CompactionResult(result if replaced else list(work.history), replaced > 0, "clip", replaced,
                            tuple(work.notes), work.archive_path, work.total(result))


def _replaced(before: Sequence[Message], after: Sequence[Message]) -> int:
    """Messages of `before` that are not in `after` as they were (dropped, summarized or shortened)."""
    survivors = {id(m) for m in after}
    return sum(1 for m in before if id(m) not in survivors)


def _run_strategy(
    work: _Work, head: list[Message], tail: list[Message], prompts: Sequence[Message]
) -> tuple[str, str, set[int]]:
    """(strategy that ran, summary body, indices of head messages kept verbatim besides prompts)."""
    params = work.params
    if params.summary_text:
        return "hook", params.summary_text.strip(), set()
    if params.strategy == "summarize":
        text = summarize_span(work, head)
        if text is not None:
            return "summarize", text, set()
        work.notes.append("fell back to truncation")
        return "truncate", _previous_summary_body(head), set()
    if params.strategy == "importance":
        kept = _importance_keep(work, head, tail, prompts)
        if kept is not None:
            return "importance", _previous_summary_body(head), kept
    return "truncate", _previous_summary_body(head), set()


def _previous_summary_body(head: Sequence[Message]) -> str:
    """Without a new model summary, the newest earlier one is carried over rather than lost."""
    for msg in reversed(head):
        if is_summary(msg):
            body = summary_body(msg.content).removesuffix(_CARRIED).rstrip()
            if body:
                return body + _CARRIED
    return ""


_CARRIED = "\n\n(Turns after this earlier summary were dropped without a new summary.)"


_TRUNCATED = "dropped (truncated, no summary written)"
_OVERTAKEN = ("summarized in part: the summary below covers the older ones; the newer ones were dropped without a "
              "summary when the prompt reached its limit before the summary was ready")


def with_model_summary(summary: UserMessage, model_summary: UserMessage) -> UserMessage:
    """A truncation's summary message with the body of a model's summary made for an older part of its span
    (the background summary that was on its way when the truncation made room without it): the model's
    body replaces the carried-over one; the facts, references and archive of the whole span stay."""
    body = demote_headings(summary_body(model_summary.content))
    content = summary.content.replace(_TRUNCATED, _OVERTAKEN, 1)
    start = content.find(SUMMARY_HEADING + "\n")
    if start < 0:
        first, _, rest = content.partition("\n\n")
        return replace_content(summary, f"{first}\n\n{SUMMARY_HEADING}\n{body}" + (f"\n\n{rest}" if rest else ""))
    after = content.find("\n## ", start + len(SUMMARY_HEADING))
    tail = "\n" + content[after:] if after >= 0 else ""
    return replace_content(summary, f"{content[:start]}{SUMMARY_HEADING}\n{body}{tail}")


def summary_body(content: str) -> str:
    start = content.find(SUMMARY_HEADING + "\n")
    if start < 0:
        return ""
    body = content[start + len(SUMMARY_HEADING) + 1:]
    end = body.find("\n## ")  # the next section swecli wrote (the body's own headings are demoted)
    return (body if end < 0 else body[:end]).strip()


def demote_headings(text: str) -> str:
    """`#`/`##` headings in a model's summary become `###`, so the body never opens a new section."""
    return re.sub(r"(?m)^#{1,2}(?=\s)", "###", text)


def _summary_message(work: _Work, head: Sequence[Message], strategy: str, body: str, facts: Facts,
                     index: str = "") -> str:
    replaced = sum(1 for m in head if not is_prompt(m))
    where = (f"The full pre-compaction history is in `{work.archive_path}` (JSONL, one message per line): "
             "read or grep it for anything not kept here." if work.archive_path
             else "The pre-compaction history could not be archived.")
    if index:
        where += _index_sentence(index)
    how = {"summarize": "summarized", "hook": "summarized (by the PreCompact hook)",
           "truncate": _TRUNCATED,
           "importance": "reduced to the turns that mattered most"}[strategy]
    parts = [f"{SUMMARY_MARKER} {replaced} earlier messages were {how} to free context. "
             f"{_prompts_note(work, head)}{where}"]
    if body:
        parts.append(f"{SUMMARY_HEADING}\n{demote_headings(body)}")
    rendered = _bounded_facts(facts, facts_budget(work.params), work.text_count)
    if rendered:
        parts.append(rendered)
    parts.extend(_extra_sections(work, head))
    return "\n\n".join(parts)


def _prompts_note(work: _Work, head: Sequence[Message]) -> str:
    """What became of the user's own messages of the span, as it is (nothing is claimed for a span with none)."""
    prompts = [m for m in head if is_prompt(m)]
    if not prompts:
        return ""
    if any(work.count(m) > work.params.prompt_head_tokens + 60 for m in prompts):
        return ("The user's own messages from that span are kept above; a long one keeps only its beginning and "
                "ends with the path of its whole text. ")
    return "The user's own messages from that span are kept above, word for word. "


def _extra_sections(work: _Work, head: Sequence[Message]) -> list[str]:
    budget = facts_budget(work.params)
    out = []
    for section in work.params.sections:
        try:
            text = section(head, work.archive_path, budget).strip()
        except Exception as exc:  # an extension's bug must not lose the compaction
            work.notes.append(f"summary section {getattr(section, '__name__', section)!r} failed: "
                              f"{type(exc).__name__}: {exc}")
            continue
        if text:
            out.append(text if work.text_count(text) <= budget else head_by_tokens(text, budget, work.text_count))
    return out


def _bounded_facts(facts: Facts, budget: int, text_count: CountText) -> str:
    """Render the facts, dropping the oldest items of the longest lists until they fit the budget."""
    rendered = render_facts(facts)
    while rendered and text_count(rendered) > budget:
        lists = [getattr(facts, name) for name in facts.__dataclass_fields__ if name != "archives"]
        longest = max(lists, key=len)
        if not longest:
            break
        del longest[: max(1, len(longest) // 4)]
        rendered = render_facts(facts)
    return rendered


# --- prompts and oversized messages -----------------------------------------------------------

def _keep_prompt(msg: Message, work: _Work) -> UserMessage:
    assert isinstance(msg, UserMessage)
    if work.count(msg) <= work.params.prompt_head_tokens + 60:
        return msg
    return _shorten_prompt(msg, work, work.params.prompt_head_tokens)


def _shorten_prompt(msg: UserMessage, work: _Work, head_tokens: int) -> UserMessage:
    full = _original_text(msg)
    path = work.save_text("prompt", full)
    head = head_by_tokens(full, head_tokens, work.text_count)
    note = (f"\n\n[swecli: this message was {work.text_count(full)} tokens; the first {head_tokens} are kept "
            f"above, the full text is in `{path}`]")
    return UserMessage(content=head + note, kind="prompt")


_SHORTENED = "\n\n[swecli: this message was "


def _original_text(msg: UserMessage) -> str:
    # Shortening twice must not nest notes: the head already kept is what we shorten further.
    cut = msg.content.rfind(_SHORTENED)
    return msg.content[:cut] if cut >= 0 else msg.content


def _clip_tool(msg: ToolMessage, work: _Work, tokens: int) -> ToolMessage:
    path = work.save_text(f"tool-{msg.name}-{msg.tool_call_id}", msg.content)
    head = head_by_tokens(msg.content, tokens * 2 // 3, work.text_count)
    tail = tail_by_tokens(msg.content[len(head):], tokens // 3, work.text_count)
    lines = msg.content.count("\n") + 1
    note = (f"\n[swecli: output shortened at compaction ({work.text_count(msg.content)} tokens, {lines} lines); "
            f"the full text is in `{path}` (read it with offset/limit, or grep it)]\n")
    return ToolMessage(tool_call_id=msg.tool_call_id, name=msg.name, content=head + note + tail,
                       is_error=msg.is_error)


def _fit(work: _Work, history: list[Message], summary: UserMessage | None) -> list[Message]:
    """Last resort when the result is still over the limit: shorten the largest tool results, then
    the prompts, then the summary. Pairing is untouched: messages are shortened, never removed."""
    limit = work.params.limit
    over = work.total(history) - limit
    if over <= 0:
        return history
    preview = max(200, min(1_000, limit // 20))
    for index in sorted((i for i, m in enumerate(history) if isinstance(m, ToolMessage)),
                        key=lambda i: -work.count(history[i])):
        if over <= 0:
            break
        msg = history[index]
        if isinstance(msg, ToolMessage) and work.count(msg) > preview + 100:
            clipped = _clip_tool(msg, work, preview)
            over -= work.count(msg) - work.count(clipped)
            history[index] = clipped
    over = _fit_prompts(work, history, over, preview)
    if over > 0 and summary is not None:
        over = _fit_summary(work, history, summary, over)
    if over > 0:
        work.notes.append(f"still {over} tokens over the target: the system prompt, tools and the latest turn "
                          "alone do not fit")
    return history


def _fit_prompts(work: _Work, history: list[Message], over: int, head_tokens: int) -> int:
    for index in sorted((i for i, m in enumerate(history) if is_prompt(m)), key=lambda i: -work.count(history[i])):
        msg = history[index]
        if over <= 0 or not isinstance(msg, UserMessage) or work.count(msg) <= head_tokens + 100:
            continue
        # What the person typed loses only what must go: keep as much of the head as the room allows.
        keep = max(head_tokens, work.count(msg) - over - 150)
        shortened = _shorten_prompt(msg, work, keep)
        over -= work.count(msg) - work.count(shortened)
        history[index] = shortened
    return over


def _fit_summary(work: _Work, history: list[Message], summary: UserMessage, over: int) -> int:
    """The summary loses its end first, at a line's end so no sentence stops in the middle; its first
    paragraph, which names the archive and the index of saved outputs (where everything it replaced is),
    stays whole."""
    index = next(i for i, m in enumerate(history) if m is summary)
    pointers, _, rest = summary.content.partition("\n\n")
    keep = max(0, work.count(summary) - over - 20 - work.text_count(pointers))
    body = head_by_tokens(rest, keep, work.text_count)
    if body == rest:  # nothing to cut (a truncation's note alone): no mark for a cut that did not happen
        return over
    if "\n" in body:
        body = body[:body.rindex("\n")]
    kept = "\n\n".join(p for p in (pointers, body.rstrip()) if p)
    text = kept + "\n\n[swecli: the summary cut to fit the window ends here]"
    shortened = replace_content(summary, text)
    work.notes.append("the summary was cut to fit the window")
    history[index] = shortened
    return over - (work.count(summary) - work.count(shortened))


def replace_content(msg: UserMessage, content: str) -> UserMessage:
    return UserMessage(content=content, kind=msg.kind)


# --- importance ---------------------------------------------------------------------------------

_MUTATING_HINTS = ("write", "edit", "create", "replace", "patch", "insert")
_TEST_HINTS = ("pytest", "test", "tox", "cargo test", "go test", "npm test", "make check")


def segment_score(span: Sequence[Message], position: float) -> float:
    """Value of a turn segment: edits, failures, test runs and the model's own conclusions are
    worth more than reads and listings; newer is worth more than older."""
    score = 1.0
    for msg in span:
        if isinstance(msg, AssistantMessage):
            if msg.content.strip() and not msg.tool_calls:
                score += 3
            for call in msg.tool_calls:
                name, args = call.name.lower(), call.arguments.lower()
                if any(h in name for h in _MUTATING_HINTS) or '"create"' in args or "str_replace" in args:
                    score += 4
                if any(h in args for h in _TEST_HINTS):
                    score += 2
        elif (isinstance(msg, ToolMessage) and msg.is_error) or (isinstance(msg, UserMessage) and not is_prompt(msg)):
            score += 2  # a failure, or text swecli added (notes, earlier summaries)
    return score * (1 + position)


def _importance_keep(
    work: _Work, head: list[Message], tail: list[Message], prompts: Sequence[Message]
) -> set[int] | None:
    """Head messages kept verbatim, best value per token first, within the room left; None when no
    whole segment fits (plain truncation then)."""
    marker = facts_budget(work.params) + 120
    room = work.params.limit - work.total([*prompts, *tail]) - marker
    spans = [(a, b) for a, b in segments(head)
             if any(not is_prompt(m) and not is_summary(m) for m in head[a:b])]
    if room <= 0 or not spans:
        return None
    ranked = sorted(
        spans,
        key=lambda s: -segment_score(head[s[0]:s[1]], s[0] / max(1, len(head)))
        / math.sqrt(1 + sum(work.count(m) for m in head[s[0]:s[1]]) / 200),
    )
    chosen: list[tuple[int, int]] = []
    for a, b in ranked:
        size = sum(work.count(m) for m in head[a:b] if not is_prompt(m))
        if size <= room:
            chosen.append((a, b))
            room -= size
    if not chosen:
        return None
    return {i for a, b in chosen for i in range(a, b) if not is_prompt(head[i]) and not is_summary(head[i])}


# --- summarize ----------------------------------------------------------------------------------

SUMMARY_SYSTEM = """You compact the history of a coding-agent session so the agent can continue the \
work with a fresh context window. You write for the agent, not for a person. Be specific: exact file \
paths, function names, commands, error messages. Do not invent anything that is not in the transcript. \
Never address the user and never call tools."""

SUMMARY_SECTIONS = """Write the summary with exactly these sections (markdown, `###` headings):
### User instructions and constraints
Every instruction, requirement, preference and constraint the user gave, quoted verbatim.
### Current task and state
What the agent is working on right now, what is finished, what is in progress, the next step.
### Decisions and reasons
Each decision taken (approach, design, trade-off) with the reason for it.
### Files
Files read, created and modified, with paths and what changed or what was learned in each.
### Errors and resolutions
Each error met, what caused it, and how it was resolved (or that it is still open).
### Commands
Commands that matter (build, test, run, install) and their outcome.
### Open questions
What is still unknown, pending, or needs the user's decision."""


def render_transcript(span: Sequence[Message], clip_tokens: int, text_count: CountText) -> list[str]:
    """One plain-text entry per message for the summary request; long tool results are clipped
    (the archive keeps them in full)."""
    entries = []
    for msg in span:
        if isinstance(msg, UserMessage):
            label = {"prompt": "USER", "summary": "EARLIER SUMMARY"}.get(msg.kind, f"USER ({msg.kind})")
            entries.append(f"[{label}]\n{msg.content}")
        elif isinstance(msg, AssistantMessage):
            lines = [msg.content] if msg.content else []
            lines += [f"-> call {c.name}({c.arguments})" for c in msg.tool_calls]
            entries.append("[ASSISTANT]\n" + "\n".join(lines or ["(no text)"]))
        else:
            content = msg.content
            if text_count(content) > clip_tokens:
                head = head_by_tokens(content, clip_tokens * 2 // 3, text_count)
                tail = tail_by_tokens(content[len(head):], clip_tokens // 3, text_count)
                content = f"{head}\n[... clipped for the summary ...]\n{tail}"
            status = " (error)" if msg.is_error else ""
            entries.append(f"[TOOL RESULT {msg.name}{status}]\n{content}")
    return entries


def summary_request(transcript: str, previous: str, focus: str, instructions: str, max_tokens: int) -> ModelRequest:
    parts = []
    if previous:
        parts.append("The summary of the earlier part of this span (fold it into yours):\n"
                     f"<summary>\n{previous}\n</summary>")
    parts.append(f"The transcript to summarize:\n<transcript>\n{transcript}\n</transcript>")
    parts.append(SUMMARY_SECTIONS)
    if focus.strip():
        parts.append(f"The user asked this compaction to focus on (keep these details above all):\n{focus.strip()}")
    if instructions.strip():
        parts.append(f"Additional instructions:\n{instructions.strip()}")
    return ModelRequest(system=(SystemBlock(text=SUMMARY_SYSTEM),),
                        messages=(UserMessage(content="\n\n".join(parts), kind="context"),),
                        tools=(), max_tokens=max_tokens)


def _chunk(entries: list[str], budget: int, text_count: CountText) -> list[str]:
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for entry in entries:
        tokens = text_count(entry) + 2
        if tokens > budget:
            entry = head_by_tokens(entry, budget - 20, text_count) + "\n[... clipped ...]"
            tokens = budget
        if current and size + tokens > budget:
            chunks.append("\n\n".join(current))
            current, size = [], 0
        current.append(entry)
        size += tokens
    if current:
        chunks.append("\n\n".join(current))
    return chunks


def summarize_span(work: _Work, head: Sequence[Message]) -> str | None:
    """The model's summary of `head`, in as many requests as the window needs; None on failure."""
    provider = work.provider
    if provider is None:
        work.notes.append("no provider to summarize with")
        return None
    params = work.params
    fixed = work.text_count(summary_request("", "", params.focus, params.instructions, 0).messages[0].content)
    budget = params.request_window - params.summary_tokens - work.text_count(SUMMARY_SYSTEM) - fixed - 64
    budget -= params.summary_tokens  # room for the running summary carried into the next chunk
    if budget < 256:
        work.notes.append("the window is too small for a summary request")
        return None
    chunks = _chunk(render_transcript(head, params.tool_clip_tokens, work.text_count), budget, work.text_count)
    if len(chunks) > params.max_chunks > 1:
        # The first chunk holds the task and any earlier summary; the newest ones hold the current state.
        work.notes.append(f"summarized {params.max_chunks} of {len(chunks)} chunks (the first and the newest); "
                          "the middle is covered by the facts and the archive")
        chunks = [chunks[0], *chunks[len(chunks) - params.max_chunks + 1:]]
    elif len(chunks) > 1:
        work.notes.append(f"summarized in {len(chunks)} chunks (the span did not fit one request)")
    summary = ""
    for chunk in chunks:
        request = summary_request(chunk, summary, params.focus, params.instructions, params.summary_tokens)
        answer = _ask(provider, request, work)
        if answer is None:
            return None
        summary = answer
    return summary


def _estimated_usage(request: ModelRequest, answer: str, count: CountText) -> Usage:
    """Local counts for a summary request whose server reported no usage (llama.cpp), marked as such."""
    prompt = sum(count(block.text) for block in request.system) + sum(count(m.content) for m in request.messages)
    return Usage(input_tokens=prompt, output_tokens=count(answer), requests=1, estimated_requests=1)


def _ask(provider: Provider, request: ModelRequest, work: _Work) -> str | None:
    try:
        done = complete(provider, request, work.cancel)
    except Cancelled:
        work.notes.append("the summary request was interrupted")
        return None
    except (ProviderError, OSError, RuntimeError, ValueError) as exc:
        work.notes.append(f"the summary request failed ({type(exc).__name__}: {exc})")
        return None
    work.usage = work.usage + (done.usage or _estimated_usage(request, done.message.content, work.text_count))
    text = done.message.content.strip()
    if not text:
        work.notes.append("the summary request returned no text")
        return None
    return text
