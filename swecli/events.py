"""Typed events the agent loop reports; any front end (REPL, headless, logs) renders them.

Each event names its own `kind`, a literal that is also its `type` in `swecli -p --output-format
stream-json` (users script against those names: never rename one). Listeners dispatch with a `match`
over `Event` that ends in `assert_never`, so mypy reports a listener that forgets a new event.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Literal

from swecli.llm.base import ReasoningDelta, TextDelta, Waiting
from swecli.messages import Message, ToolCall, Usage
from swecli.records import datarecord
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
    "SummarySpent",
    "TextDelta",
    "ToolFinished",
    "ToolOutput",
    "ToolStarted",
    "TurnFinished",
    "Waiting",
]


@datarecord(frozen=True)
class ModelCallStarted:
    """A request to the model is about to go out."""

    kind: Literal["model_call_started"] = field(default="model_call_started", init=False, repr=False)
    iteration: int
    context_tokens: int
    window: int = 0
    """The context window the request was planned for (a window adopted from the server's error shows
    here from the next request on); 0: not known to the sender."""


@datarecord(frozen=True)
class ModelCallFinished:
    """A model call's answer is in, with what it cost."""

    kind: Literal["model_call_finished"] = field(default="model_call_finished", init=False, repr=False)
    usage: Usage
    """Provider-reported usage, or local counts when the server reports none (`usage.estimated`)."""
    duration: float
    model: str
    finish_reason: str
    reported: bool = True


@datarecord(frozen=True)
class ToolStarted:
    """A tool call was approved and begins to run."""

    kind: Literal["tool_started"] = field(default="tool_started", init=False, repr=False)
    call: ToolCall
    args: dict[str, Any]


@datarecord(frozen=True)
class ToolOutput:
    """Output of a running tool as it arrives (bash), for a live view; the result carries all of it."""

    kind: Literal["tool_output"] = field(default="tool_output", init=False, repr=False)
    call: ToolCall
    text: str


@datarecord(frozen=True)
class ToolFinished:
    """A tool call ended (or was refused: `approved` False), with its result."""

    kind: Literal["tool_finished"] = field(default="tool_finished", init=False, repr=False)
    call: ToolCall
    result: ToolResult
    duration: float
    approved: bool = True


@datarecord(frozen=True)
class MessageAppended:
    """A message joined the history (what the session recorder and the transcript write)."""

    kind: Literal["message_appended"] = field(default="message_appended", init=False, repr=False)
    message: Message


@datarecord(frozen=True)
class HistoryReplaced:
    """The history was rewritten on purpose (compaction, decay, /clear)."""

    kind: Literal["history_replaced"] = field(default="history_replaced", init=False, repr=False)
    history: tuple[Message, ...]
    reason: str


@datarecord(frozen=True)
class CompactionDone:
    """The history was compacted: how, and how much it saved."""

    kind: Literal["compaction_done"] = field(default="compaction_done", init=False, repr=False)
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


@datarecord(frozen=True)
class SummarySpent:
    """What a compaction's summary requests cost, applied or not (a summary that would not have shrunk the
    conversation, or that was dropped, was still billed): part of the session's spend, logged as `summary`."""

    kind: Literal["summary_spent"] = field(default="summary_spent", init=False, repr=False)
    usage: Usage
    trigger: str
    """auto | manual | overflow | background."""


@datarecord(frozen=True)
class BackgroundSummary:
    """A summary of the older history made while the loop works (see `swecli.context.background`):
    reported when it starts, and when it ends up used or not."""

    kind: Literal["background_summary"] = field(default="background_summary", init=False, repr=False)
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


@datarecord(frozen=True)
class ContextOverflow:
    """The provider rejected a request as too large for the model's window (logged as `context_overflow`)."""

    kind: Literal["context_overflow"] = field(default="context_overflow", init=False, repr=False)
    planned_window: int
    """The window swecli planned with when it sent the request."""
    server_window: int | None
    """The window the server's error named, if it named one."""
    requested: int | None
    message: str
    adopted: bool = False
    """The server's window was smaller, and swecli plans with it from now on."""


@datarecord(frozen=True)
class Notice:
    """A sentence for the person, at a level: "info", "warning" or "error"."""

    kind: Literal["notice"] = field(default="notice", init=False, repr=False)
    level: str  # "info" | "warning" | "error"
    text: str


@datarecord(frozen=True)
class TurnFinished:
    """The loop's turn is over: its answer, what it cost, and why it stopped."""

    kind: Literal["turn_finished"] = field(default="turn_finished", init=False, repr=False)
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


@datarecord(frozen=True)
class ChildEvent:
    """An event of a sub-agent (`swecli.delegation`), reported on the parent's bus: `call_id` is the
    parent's `task` call that started it, so front ends fold its progress under that call and the
    recorder links its transcript to it."""

    kind: Literal["child_event"] = field(default="child_event", init=False, repr=False)
    call_id: str
    agent: str
    event: Event


Event = (
    TextDelta | ReasoningDelta | ModelCallStarted | ModelCallFinished | ToolStarted | ToolOutput | ToolFinished
    | MessageAppended | HistoryReplaced | CompactionDone | SummarySpent | BackgroundSummary | ContextOverflow
    | Notice
    | TurnFinished | Waiting | ChildEvent
)
