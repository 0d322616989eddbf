"""Background compaction: the older history is summarized while the loop keeps working.

A model's summary takes 10-60 s. Made at the compaction threshold, the user waits that long every
time; made ahead, nobody waits. The compaction scheduler (`scheduler.py`) decides when a job starts (the
runway, `runway.py`) and what the loop does until it is ready; this module is the job itself: a snapshot
of the history and a thread that runs the PreCompact hook, then summarizes the span a compaction would
replace (`compaction.prepare_span`: the same summary prompt, the facts, the references, the archive and
its index), with its own provider and cancel token. A ready summary is applied over the history as it is
by then (`compaction.apply_span`): the summary for the snapshot's span, then every message appended
since, verbatim, still paired.

The span may have been rewritten meanwhile by the engine itself (a fold when the prompt reached the hard
limit first, an image's stand-in): the job still `matches` then, message for message, and the index of
saved outputs is brought up to date when it is applied. Any other rewrite (/clear, /resume, /model, Esc,
the session closing) cancels the job.

Thread safety: the job reads only its snapshot (messages are immutable) and a copy of the tool
metadata, counts with its own `TokenCounter` what the loop's counter has not counted yet (`known`: the loop
counted every message of the snapshot already; counting them again, ~0.3 s of CPU at a 128k window, ran
beside the loop's own work and took turns with it for the GIL), writes only to the archive, and talks to the provider
its factory makes for it (the loop's HTTP client is not shared). It emits no events: the scheduler
reports its start and end from the loop's thread, and `on_done` only wakes a toolbar.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field, replace
from typing import Any, Literal

from swecli.context.archive import Archive
from swecli.context.compaction import CompactionIO, CompactionParams, PreparedSpan, prepare_span
from swecli.context.hooks import PreCompactDecision
from swecli.context.tokens import TokenCounter
from swecli.llm.base import CancelToken, Provider
from swecli.messages import AssistantMessage, Message, ToolMessage, Usage, UserMessage
from swecli.records import datarecord

Phase = Literal["running", "ready", "failed", "cancelled", "declined"]


@datarecord
class SummaryJob:
    """One summary made ahead of its compaction. The fields below the line are written by its thread,
    once, before `done` is set; read them only after."""

    snapshot: tuple[Message, ...]
    cut: int
    """The span it summarizes: `snapshot[:cut]`."""
    params: CompactionParams
    tokens: int
    """The prompt's size (provider tokens) when it started."""
    started: float = field(default_factory=time.monotonic)
    cancel: CancelToken = field(default_factory=CancelToken)
    done: threading.Event = field(default_factory=threading.Event)
    # --- set by the thread ---
    prepared: PreparedSpan | None = None
    decision: PreCompactDecision = field(default_factory=PreCompactDecision)
    notes: tuple[str, ...] = ()
    usage: Usage = field(default_factory=Usage)
    """What its summary requests cost, whether or not it comes to be used."""
    error: str = ""
    finished: float = 0.0

    @property
    def phase(self) -> Phase:
        if not self.done.is_set():
            return "running"
        if self.cancel.cancelled:
            return "cancelled"
        if self.decision.cancel:
            return "declined"
        return "ready" if self.prepared is not None else "failed"

    @property
    def duration(self) -> float:
        """Seconds from its start to its end (to now while it runs)."""
        return (self.finished if self.done.is_set() else time.monotonic()) - self.started

    def why_not(self) -> str:
        """Why there is no summary to use, in a few words."""
        return self.error or "; ".join(self.notes) or "no summary came back"

    def matches(self, history: Sequence[Message]) -> bool:
        """Whether `history` still starts with the span this job summarized, message for message (each one
        as it was, or the engine's own rewrite of it)."""
        if len(history) < self.cut:
            return False
        head = list(history[: self.cut])
        if head == list(self.snapshot[: self.cut]):
            return True
        return all(rewritten_from(now, then) for now, then in zip(head, self.snapshot, strict=False))


def rewritten_from(now: Message, then: Message) -> bool:
    """Whether `now` is `then`, or what the engine makes of it in place: a tool output folded to a digest,
    an assistant message without its old thinking, a message whose images became stand-ins."""
    if now is then or now == then:
        return True
    if isinstance(now, ToolMessage) and isinstance(then, ToolMessage):
        return now.tool_call_id == then.tool_call_id
    if isinstance(now, AssistantMessage) and isinstance(then, AssistantMessage):
        return now.tool_calls == then.tool_calls and now.content == then.content
    if isinstance(now, UserMessage) and isinstance(then, UserMessage):
        return now.kind == then.kind and now.content.startswith(then.content)
    return False


HookRunner = Callable[[], PreCompactDecision]
ProviderSource = Callable[[], tuple[Provider, bool]]
"""Returns the provider for the summary, and whether the job owns it (and closes it when done)."""


@datarecord
class SummaryWork:
    """What the job's thread needs besides the job itself."""

    hook: HookRunner
    provider: ProviderSource
    encoding: str
    include_reasoning: bool
    archive: Archive
    meta: Mapping[str, Mapping[str, Any]]
    on_done: Callable[[], None] | None = None
    known: Callable[[Message], int | None] = lambda message: None
    """The loop's count of a message, when it has one (`TokenCounter.known`)."""
    loop_free: threading.Event | None = None
    """Waited for before each message is counted: cleared while the loop compacts (`Compactor.loop_compacting`;
    the loop never waits for this job then)."""


def start(job: SummaryJob, work: SummaryWork) -> SummaryJob:
    """Run `job` on a daemon thread (it never outlives the process, and a cancel stops it within a
    fraction of a second: the provider checks the token while it waits for the server)."""
    threading.Thread(target=_run, args=(job, work), name="swecli-background-summary", daemon=True).start()
    return job


def _run(job: SummaryJob, work: SummaryWork) -> None:
    provider: Provider | None = None
    owned = False
    try:
        _wait_turn(job, work)  # started in the loop's pause: the loop's context work goes first
        job.decision = work.hook()
        if job.decision.cancel or job.cancel.cancelled:
            return
        params = replace(job.params, instructions=job.decision.instructions, summary_text=job.decision.summary)
        provider, owned = work.provider()
        counter = TokenCounter(work.encoding, work.include_reasoning)

        def count(message: Message) -> int:
            _wait_turn(job, work)
            known = work.known(message)
            return known if known is not None else counter.message(message)

        io = CompactionIO(work.archive, provider, work.meta, job.cancel)
        job.prepared, job.notes, job.usage = prepare_span(job.snapshot, job.cut, params, count, counter.text, io)
    except Exception as exc:  # whatever broke, the loop drops the job and compacts on the spot
        job.error = f"{type(exc).__name__}: {exc}"
    finally:
        if provider is not None and owned:
            provider.close()
        job.finished = time.monotonic()
        job.done.set()
        if work.on_done is not None:
            work.on_done()


def _wait_turn(job: SummaryJob, work: SummaryWork) -> None:
    """While the loop does its context work (`loop_free` cleared), wait; a cancel ends the wait."""
    while work.loop_free is not None and not work.loop_free.wait(0.05) and not job.cancel.cancelled:
        pass


def wait(job: SummaryJob, interrupt: CancelToken | None, poll: float = 0.1) -> float:
    """Block until the job ends; Esc (`interrupt`) cancels it instead. Returns the seconds waited."""
    began = time.monotonic()
    while not job.done.wait(poll):
        if interrupt is not None and interrupt.cancelled:
            job.cancel.cancel()
            job.done.wait(2.0)  # the provider notices the cancel within its poll interval
            break
    return time.monotonic() - began
