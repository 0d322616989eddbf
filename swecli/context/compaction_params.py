"""What a compaction is asked to do, apart from how it does it (`compaction.py`).

Every request's preparation reads these: the scheduler works out where a background summary would start
from the room a summary takes (`summary_reserve` of the `CompactionParams` the compactor would use), the
mechanisms name their extra summary sections (`SummarySection`) and the turn's start is the last prompt
(`is_prompt`). Kept here, light, so that a session imports the compaction stack itself (`compaction`,
`background`, `hooks`, `archive`, `foldahead`: ~30 M instructions, measured in docs/latency.md) only when it
first compacts, summarizes or folds, which most runs never do. `compaction` re-exports every name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from swecli.messages import Message, UserMessage
from swecli.records import datarecord

STRATEGIES = ("summarize", "truncate", "importance")

Count = Callable[[Message], int]
CountText = Callable[[str], int]
SummarySection = Callable[[Sequence[Message], str, int], str]
"""An extra section for the summary message: (compacted span, archive path, token budget) -> markdown
starting with a `## ` heading (or "" for none). Used by later mechanisms (e.g. reference lists)."""
Pin = Callable[[Sequence[Message], Sequence[Message]], Mapping[int, Message]]
"""(compacted span, the messages kept after it) -> {index in the span: the message to keep in its
place}. What a pin keeps is re-attached verbatim after compaction, like the user's prompts (a loaded
skill's instructions, see `swecli.skills`)."""


@datarecord(frozen=True)
class CompactionParams:
    """Budgets are in local tokens (the manager converts from provider tokens with its calibration)."""

    limit: int
    """The whole request (fixed parts + messages) must end up at or under this."""
    fixed: int = 0
    """System prompt, memory, tool schemas and tail: sent with every request, never compacted."""
    keep_recent: int = 12_000
    strategy: str = "summarize"
    focus: str = ""
    instructions: str = ""
    """Extra summary instructions (from the PreCompact hook)."""
    summary_text: str = ""
    """A summary supplied by the PreCompact hook: used as is, no model call."""
    summary_tokens: int = 2_048
    """max_tokens of the summary request, and the room reserved for the summary."""
    request_window: int = 32_768
    """Local tokens one summary request may use in all (its input plus `summary_tokens`)."""
    prompt_head_tokens: int = 2_000
    """A user prompt longer than this keeps its head verbatim; the whole text goes to a file."""
    tool_clip_tokens: int = 1_500
    """Tool results in the summary request are clipped to this (the archive has them in full)."""
    max_chunks: int = 8
    sections: tuple[SummarySection, ...] = ()
    pin: Pin | None = None
    """Messages of the compacted span that survive it verbatim (besides the prompts)."""
    force: bool = False
    """Compact even when nothing is over budget (a manual /compact)."""


def is_prompt(msg: Message) -> bool:
    return isinstance(msg, UserMessage) and msg.kind == "prompt"


def is_summary(msg: Message) -> bool:
    return isinstance(msg, UserMessage) and msg.kind == "summary"


def summary_reserve(params: CompactionParams, has_summary: bool = True) -> int:
    """Local tokens the summary message may take (body, facts, extra sections, marker): a span smaller than
    this is not worth summarizing."""
    budget = facts_budget(params)
    # Truncate and importance carry an earlier summary over, which is at most a summary long.
    body = params.summary_tokens if params.strategy == "summarize" or has_summary else 0
    return body + budget * (1 + len(params.sections)) + 120  # 120: the marker paragraph


def facts_budget(params: CompactionParams) -> int:
    """Local tokens the summary's deterministic facts (and each extra section) may take."""
    return max(150, min(2_000, params.limit // 10))
