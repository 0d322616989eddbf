"""Typed events the agent loop reports; any front end (REPL, headless, logs) renders them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from swecli.llm.base import ReasoningDelta, TextDelta, Waiting
from swecli.messages import Message, ToolCall, Usage
from swecli.tools.base import ToolResult

__all__ = [
    "BackgroundSummary",
    "ChildEvent",
    "CompactionDone",
    "ContextOverflow",
    "Event",
    "HistoryReplaced",
    "MessageAppended",
    "ModelCallFinished",
    "ModelCallStarted",
    "Notice",
    "ReasoningDelta",
    "TextDelta",
    "ToolFinished",
    "ToolOutput",
    "ToolStarted",
    "TurnFinished",
    "Waiting",
]


@dataclass(frozen=True)
class ModelCallStarted:
    iteration: int
    context_tokens: int


@dataclass(frozen=True)
class ModelCallFinished:
    usage: Usage
    """Provider-reported usage, or local counts when the server reports none (`usage.estimated`)."""
    duration: float
    model: str
    finish_reason: str
    reported: bool = True


@dataclass(frozen=True)
class ToolStarted:
    call: ToolCall
    args: dict[str, Any]


@dataclass(frozen=True)
class ToolOutput:
    """Output of a running tool as it arrives (bash), for a live view; the result carries all of it."""

    call: ToolCall
    text: str


@dataclass(frozen=True)
class ToolFinished:
    call: ToolCall
    result: ToolResult
    duration: float
    approved: bool = True


@dataclass(frozen=True)
class MessageAppended:
    message: Message


@dataclass(frozen=True)
class HistoryReplaced:
    """The history was rewritten on purpose (compaction, decay, /clear)."""

    history: tuple[Message, ...]
    reason: str


@dataclass(frozen=True)
class CompactionDone:
    trigger: str
    strategy: str
    tokens_before: int
    tokens_after: int
    messages_compacted: int
    duration: float
    note: str = ""
    references: tuple[str, ...] = ()
    """The best references the compaction dropped (each with a pointer back), for notes and recitation."""
    waited: float = 0.0
    """Seconds the loop stood still for it: all of `duration` for a compaction made on the spot, only
    the wait at the hard limit (or nothing) for one whose summary was made in the background."""
    background: bool = False
    """The summary was made in the background, ahead of the compaction."""

    @property
    def reduction(self) -> float:
        return 1 - self.tokens_after / self.tokens_before if self.tokens_before else 0.0


@dataclass(frozen=True)
class SummarySpent:
    """What a compaction's summary requests cost, applied or not (a summary that would not have shrunk the
    conversation, or that was dropped, was still billed): part of the session's spend, logged as `summary`."""

    usage: Usage
    trigger: str
    """auto | manual | overflow | background."""


@dataclass(frozen=True)
class BackgroundSummary:
    """A summary of the older history made while the loop works (see `swecli.context.background`):
    reported when it starts, and when it ends up used or not."""

    phase: str
    """started | used | failed | cancelled | declined (by the PreCompact hook) | dropped (the history it
    summarized was rewritten meanwhile)."""
    messages: int
    """Messages of the span it summarizes."""
    tokens: int
    """The prompt's size when it started."""
    duration: float = 0.0
    """Seconds from its start to its end (0 at the start)."""
    note: str = ""

    @property
    def used(self) -> bool:
        return self.phase == "used"


@dataclass(frozen=True)
class ContextOverflow:
    """The provider rejected a request as too large for the model's window (logged as `context_overflow`)."""

    planned_window: int
    """The window swecli planned with when it sent the request."""
    server_window: int | None
    """The window the server's error named, if it named one."""
    requested: int | None
    message: str
    adopted: bool = False
    """The server's window was smaller, and swecli plans with it from now on."""


@dataclass(frozen=True)
class Notice:
    level: str  # "info" | "warning" | "error"
    text: str


@dataclass(frozen=True)
class TurnFinished:
    answer: str
    iterations: int
    usage: Usage
    duration: float
    stop_reason: str = "done"
    """done | output_limit (answer cut) | refused | empty | iteration_limit | interrupted | error."""
    error: str = ""
    tool_calls: int = 0
    compactions: int = 0
    """Compactions during the turn (decay batches aside)."""
    compaction_wait: float = 0.0
    """Seconds the loop stood still for them."""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ChildEvent:
    """An event of a sub-agent (`swecli.delegation`), reported on the parent's bus: `call_id` is the
    parent's `task` call that started it, so front ends fold its progress under that call and the
    recorder links its transcript to it."""

    call_id: str
    agent: str
    event: Event


Event = (
    TextDelta | ReasoningDelta | ModelCallStarted | ModelCallFinished | ToolStarted | ToolOutput | ToolFinished
    | MessageAppended | HistoryReplaced | CompactionDone | SummarySpent | BackgroundSummary | ContextOverflow
    | Notice
    | TurnFinished | Waiting | ChildEvent
)
