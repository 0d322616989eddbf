"""The compaction scheduler: when the older history is summarized, and what the loop does meanwhile.

At each turn boundary (`ContextManager.prepare`), with the summarize strategy and background compaction
on (`context.background_compaction`), the levels of the prompt decide:

1. from the runway's start level (`runway.py`: early enough that the summary is ready before the hard
   limit, given the growth per step and the summary latency measured so far), a `SummaryJob` starts on
   its own thread (`background.py`) once its span is worth summarizing;
2. at the compaction threshold a ready summary is applied (`Compactor.apply`);
3. at the hard limit (the largest prompt that still leaves the reply its room) with the summary still on
   its way, the older tool outputs fold to their saved files (`Compactor.fold`: no model call) and the
   loop goes on; the summary is applied at the threshold once it is ready;
4. only when folding cannot bring the prompt under the hard limit does the loop wait for the summary,
   and it says so.

A summary that failed, was cancelled, or whose span was rewritten by anything but the engine is dropped,
and the compaction is made on the spot (`Compactor.compact`), as it always is with background compaction
off or another strategy. The PreCompact hook runs once per compaction, on the job's thread: its
instructions shape the summary, a summary it supplies replaces the model's, and its cancel is honoured at
the threshold.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from swecli.context.budget import ContextState
from swecli.context.compaction_params import CompactionParams, summary_reserve
from swecli.context.compactor import Compactor
from swecli.context.runway import Runway
from swecli.events import BackgroundSummary
from swecli.llm.base import Provider
from swecli.messages import Message

if TYPE_CHECKING:  # a summary's job is imported when one starts (`compaction_params.py`)
    from swecli.context.background import SummaryJob

_STATUS = {"running": "summarizing older context", "ready": "summary ready", "declined": "",
           "failed": "background summary failed", "cancelled": ""}


class CompactionScheduler:
    def __init__(self, compactor: Compactor, summary_provider: Callable[[], Provider] | None = None) -> None:
        self.compactor = compactor
        self.meter = compactor.meter
        self.summary_provider = summary_provider
        self.runway = Runway()
        self.job: SummaryJob | None = None
        """The summary being made in the background (or ready, or failed, until the threshold)."""
        self.overtaken = False
        """A truncation dropped the job's span while it was being made (`_make_room`)."""
        self.on_background_done: Callable[[], None] | None = None
        """Called from the summary's thread when it ends (a REPL redraws its toolbar); nothing else may be."""

    def prepare(self, history: list[Message], provider: Provider, state: ContextState) -> list[Message]:
        """Auto-compaction at a turn boundary, for a request of `state`'s size."""
        ledger = self.meter.ledger
        self.runway.observe(state.total, time.monotonic(), (ledger.generation, ledger.turn_start()))
        if self.in_background() and self._idle(state):
            self.compactor.look_ahead(history)  # no one to hold back: most turns, far below any level
        elif self.in_background():
            with self.compactor.loop_compacting():  # what works ahead waits until the request is on its way
                if self.job is None:
                    self._maybe_start(history, provider, state)
                # A step at a time, for a fold that may be needed (only while a summary is on its way can one be).
                self.compactor.look_ahead(history, make_digests=self.job is not None)
                if self.job is not None:
                    return self._with_job(history, provider, state)
        # Nothing in the background (off, another strategy, nothing worth summarizing): on the spot.
        return self.compactor.compact(history, provider, "auto") if state.over_threshold else history

    def _idle(self, state: ContextState) -> bool:
        """Nothing works ahead (no summary under way, no digests being made), and no summary can start at
        `state`'s size."""
        return (self.job is None and self.compactor.folds_ahead is None
                and state.total < self.runway.lowest_start(state.budget))

    def holds_decay(self, history: Sequence[Message]) -> bool:
        """Whether decay waits: a summary is on its way and the prompt (without its tail) is past the warning
        level, so the compaction that rewrites this history anyway is near (a decay batch now would cost a
        prompt-cache miss for little). The prompt is measured only when a summary is on its way."""
        return self.job is not None and self.meter.prompt_tokens(history) >= self.meter.budget.warning_limit

    def in_background(self) -> bool:
        config = self.compactor.config
        return config.background_compaction and config.strategy == "summarize"

    def status(self) -> str:
        """For the toolbar: what the background summary is doing ("" when there is none)."""
        return _STATUS[self.job.phase] if self.job is not None else ""

    def cancel(self, reason: str) -> None:
        """Drop the background summary, if one is being made or waits (Esc, /clear, /model, the end)."""
        job, self.job, self.overtaken = self.job, None, False
        if job is not None:
            job.cancel.cancel()
            self._report(job, "cancelled", reason)

    def close(self, wait: float = 1.0) -> None:
        """Drop a background summary and give its thread up to `wait` seconds to stop (it stops within a
        fraction of a second of the cancel, unless a PreCompact hook command is still running)."""
        job = self.job
        self.cancel("the session closed")
        self.compactor.close()
        if job is not None:
            job.done.wait(wait)

    # --- starting ------------------------------------------------------------------------------------

    def start_level(self, state: ContextState) -> int:
        """The prompt size from which the next summary starts (`Runway.start_level`); the floor is where
        its span would first outweigh the summary: the fixed parts, the recent history kept verbatim and
        the summary's own room."""
        meter = self.meter
        params = self.compactor.params("auto", "", None)
        fixed = state.system + state.tools + state.memory + state.tail
        floor = fixed + meter.keep_recent_tokens + meter.calibration.apply(summary_reserve(params))
        return self.runway.start_level(meter.budget, floor)

    def _maybe_start(self, history: list[Message], provider: Provider, state: ContextState) -> None:
        if state.total < self.runway.lowest_start(state.budget) or state.total < self.start_level(state):
            return  # (the first check spares working out the level, most turns)
        from swecli.context import background
        from swecli.context.compaction import plan_span

        compactor, count = self.compactor, self.meter.counter
        params = self._span_params()
        cut = plan_span(history, params, count.message, count.text)
        if not cut:
            return  # nothing older worth summarizing yet
        job = background.SummaryJob(tuple(history), cut, params, state.total)

        def summary_provider() -> tuple[Provider, bool]:
            return (self.summary_provider(), True) if self.summary_provider is not None else (provider, False)

        work = background.SummaryWork(hook=lambda: compactor.hook_decision("auto", "", state, len(history)),
                           provider=summary_provider, encoding=count.encoding_name,
                           include_reasoning=count.include_reasoning, archive=compactor.archive(),
                           meta=dict(compactor.tool_meta), on_done=self.on_background_done, known=count.known,
                           loop_free=compactor.loop_free)
        self.job = background.start(job, work)
        compactor.report.emit(BackgroundSummary("started", cut, state.total))

    def _span_params(self) -> CompactionParams:
        """The compaction's parameters for a summary made ahead: by the time it is applied the history has
        grown by the runway, so the span leaves that much less of the recent history out (at least half of
        `keep_recent_tokens`), and what stays verbatim after it is about `keep_recent_tokens` as configured."""
        params = self.compactor.params("auto", "", None)
        growth = self.meter.calibration.to_local(self.runway.tokens_needed() or 0)
        return dataclasses.replace(params, keep_recent=max(params.keep_recent // 2, params.keep_recent - growth))

    # --- with a summary under way ----------------------------------------------------------------------

    def _with_job(self, history: list[Message], provider: Provider, state: ContextState) -> list[Message]:
        """Apply a ready summary at the threshold; with none ready at the hard limit, fold older outputs
        instead of waiting, and wait only when that does not make room."""
        job = self.job
        assert job is not None
        hard, waited = self.meter.budget.hard_limit, 0.0
        if job.phase == "running":
            if state.total <= hard:
                return history  # room left: the loop goes on while the summary is made
            history, state = self._make_room(history, state)
            if state.total <= hard:
                return history
            self.compactor.report.notice(
                "info", f"the context is at {state.percent:.0f}% of the window, the most a request can carry with "
                        f"room for the reply, and neither folding older outputs nor dropping older turns made room: "
                        f"waiting for the background summary (running for {job.duration:.0f}s)")
            from swecli.context import background  # (imported when the job started)

            with self.compactor.loop_waiting():
                waited = background.wait(job, self.compactor.wiring.cancel)
        elif not state.over_threshold:
            return history
        history = self._finish(history, provider, state, waited)
        state = self.meter.state(history)
        if state.total <= hard or job.phase == "declined":
            return history  # (the PreCompact hook said no compaction: none is made)
        # The summary left the prompt over the hard limit (its span was short): room without a model call.
        return self._make_room(history, state)[0]

    def _make_room(self, history: list[Message], state: ContextState) -> tuple[list[Message], ContextState]:
        """Room below the hard limit without a model call, for a few steps at least (`room_target`): older
        tool outputs fold first; when that is not enough, the oldest turns are dropped too (the summary on its
        way then takes the place of the truncation's when it is ready)."""
        with self.compactor.loop_compacting():
            return self._fold_or_truncate(history, state)

    def _fold_or_truncate(self, history: list[Message], state: ContextState) -> tuple[list[Message], ContextState]:
        compactor, meter = self.compactor, self.meter
        target = self.room_target()
        history = compactor.fold(history, state, target)
        state = meter.state(history)
        if state.total <= target or (self.job is not None and self.job.decision.cancel):
            return history, state  # (a truncation is a compaction: not when the PreCompact hook said no)
        truncated = compactor.truncate(history, state)
        if truncated is not history:
            self.overtaken = self.job is not None
            history, state = truncated, meter.state(truncated)
        return history, state

    def room_target(self) -> int:
        """How far below the hard limit a compaction without a model call brings the prompt: a fifth of the
        hard limit, or three steps of growth when that is more (so that it is not needed again at once)."""
        hard = self.meter.budget.hard_limit
        return hard - max(hard // 5, 3 * self.runway.step_growth())

    def _finish(self, history: list[Message], provider: Provider, state: ContextState,
                waited: float = 0.0) -> list[Message]:
        job, self.job = self.job, None
        assert job is not None
        overtaken, self.overtaken = self.overtaken, False
        if job.phase == "declined":
            return self._declined(history, job)
        if job.phase == "ready":
            self.runway.summary_took(job.duration)
            if job.matches(history):
                return self._apply(history, job, state, waited)
            if overtaken:
                return self._fill_truncation(history, job, state, waited)
            self._report(job, "dropped", "the history it summarized changed meanwhile")
        else:
            self._report(job, "cancelled" if job.cancel.cancelled else "failed", job.why_not())
        # The normal path, on the spot; the hook already ran for this compaction (it runs once).
        decision = job.decision if self.compactor.has_hook() else None
        return self.compactor.compact(history, provider, "auto", decision=decision, waited=waited)

    def _declined(self, history: list[Message], job: SummaryJob) -> list[Message]:
        self._report(job, "declined")
        for warning in job.decision.warnings:
            self.compactor.report.notice("warning", warning)
        self.compactor.report.notice("info", "compaction cancelled by the PreCompact hook")
        return history

    def _fill_truncation(self, history: list[Message], job: SummaryJob, state: ContextState,
                         waited: float) -> list[Message]:
        """A truncation made room while the summary was on its way: the summary fills its summary message
        (room was made already: nothing else is done when it cannot)."""
        assert job.prepared is not None
        upgraded = self.compactor.overtaken(history, job.prepared, state, waited)
        if upgraded is None:
            self._report(job, "dropped", "a truncation made room before it was ready, and it had no summary")
            return history
        self._report(job, "used", "it took the place of the truncation's summary")
        return upgraded

    def _apply(self, history: list[Message], job: SummaryJob, before: ContextState, waited: float) -> list[Message]:
        start = time.monotonic()
        assert job.prepared is not None
        with self.compactor.loop_compacting():
            result = self.compactor.apply(history, job.prepared, job.decision, before)
        if result is None:
            self._report(job, "dropped", "it would not have shrunk the conversation")
            return history
        self._report(job, "used")
        return self.compactor.record("auto", before, result, job.duration, waited=waited + time.monotonic() - start,
                                     background=True)

    def _report(self, job: SummaryJob, phase: str, note: str = "") -> None:
        if phase != "started":
            self.compactor.spent(job.usage, "background")
        self.compactor.report.emit(BackgroundSummary(phase, job.cut, job.tokens, job.duration, note))
