"""Compaction events, as the context engine makes them on the loop's thread.

`compaction.py` is the pipeline (pure functions over a history); this is what the engine adds around it:
the budgets in local tokens (from the meter's calibration), the PreCompact hook, where the archive goes,
the rule that a compaction is applied only when it makes the next request smaller, the record of every
compaction (`compactions`, a `CompactionDone` event) and the spend of its summary requests.

The ways to make room:

- `compact`: on the spot (the summary, if any, is asked for now and the loop waits for it);
- `apply`: a summary made ahead in the background (`background.py`), applied over its span;
- `fold`: no model call at all. Every tool output older than the newest zone folds to a one-line digest
  that names the file holding it (decay's fold, with every tool eligible), as "observation masking"
  does. The scheduler uses it when the prompt reaches the hard limit before the summary is ready, so
  the loop never stands still for a summary it can do without;
- `truncate`: no model call either, when folding is not enough: the oldest turns go (prompts, facts,
  references and the archive stay); `overtaken` later puts the background summary in the place of the
  one the truncation could not write.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swecli.config import ContextConfig, HookConfig
from swecli.context.budget import ContextState, decay_recent_for
from swecli.context.compaction_params import CompactionParams, is_summary
from swecli.context.decay import DecayScan, fold_older, room_policy
from swecli.context.engineering import NoMechanisms
from swecli.context.ledger import Ledger
from swecli.context.meter import Meter
from swecli.context.wiring import Reporter, Wiring
from swecli.events import CompactionDone, SummarySpent
from swecli.llm.base import Provider
from swecli.messages import Message, ToolCall, Usage, UserMessage
from swecli.tools.base import ToolResult

if TYPE_CHECKING:  # the compaction stack is imported by the methods that compact, fold or run the hook:
    # a session that never does (most never do) does not pay for it (`compaction_params.py`)
    from swecli.context.archive import Archive
    from swecli.context.compaction import CompactionResult, PreparedSpan
    from swecli.context.foldahead import FoldsAhead
    from swecli.context.hooks import PreCompactDecision

OVERFLOW_TARGET = 0.85
"""After a provider's context-length error, compact to this fraction of the usual target: our
count was proven low, so leave a margin."""
_META_KEYS = ("exit_code", "path", "existed")
_META_LIMIT = 5_000


class Compactor:
    def __init__(self, meter: Meter, mechanisms: NoMechanisms, hooks: HookConfig, root: Path | None,
                 wiring: Wiring, report: Reporter) -> None:
        self.meter, self.mechanisms, self.hooks, self.root = meter, mechanisms, hooks, root
        self.wiring, self.report = wiring, report
        self.compactions: list[CompactionDone] = []
        self.usage = Usage()
        """Tokens spent by summary requests (not part of the loop's own usage)."""
        self.tool_meta: dict[str, dict[str, Any]] = {}
        self._room: DecayScan | None = None
        self._ahead: FoldsAhead | None = None
        self._handed: tuple[tuple[object, ...], int, int] = ((), 0, 0)
        """((worker, ledger generation, scan epoch), ready outputs handed over, older messages handed over)."""
        self.loop_free = threading.Event()
        """Cleared while the loop does its context work (`loop_compacting`): the threads that work ahead for it
        (the digests made ahead, the background summary) wait between two pieces of work instead of taking
        turns with the loop for the GIL (and, on a loaded machine, for a core) in the pause between two
        model calls; they run while the loop waits for the model or a tool."""
        self.loop_free.set()
        self._compacting = 0

    @contextmanager
    def loop_compacting(self) -> Iterator[None]:
        """Hold the work made ahead (`loop_free`) while the loop prepares a request: folds, truncates, applies a
        summary. Nests; `loop_waiting` lets it go on while the loop waits for it."""
        self._compacting += 1
        self.loop_free.clear()
        try:
            yield
        finally:
            self._compacting -= 1
            if not self._compacting:
                self.loop_free.set()

    @contextmanager
    def loop_waiting(self) -> Iterator[None]:
        """The loop waits for the background summary: the work made ahead goes on meanwhile (held, it would
        never end)."""
        self.loop_free.set()
        try:
            yield
        finally:
            if self._compacting:
                self.loop_free.clear()

    @property
    def config(self) -> ContextConfig:
        return self.meter.config

    def archive(self) -> Archive:
        from swecli.context.archive import DiskArchive

        return self.wiring.archive or DiskArchive(self.root or Path.cwd())

    def remember_facts(self, call: ToolCall, result: ToolResult) -> None:
        """The tool's structured facts (exact exit code, path) feed compaction's extractors later."""
        facts = {k: result.meta[k] for k in _META_KEYS if k in result.meta}
        if facts:
            if len(self.tool_meta) >= _META_LIMIT:
                self.tool_meta.pop(next(iter(self.tool_meta)))
            self.tool_meta[call.id] = facts

    # --- the ways to make room -------------------------------------------------------------------------

    def compact(self, history: list[Message], provider: Provider, trigger: str, focus: str = "",
                decision: PreCompactDecision | None = None, waited: float = 0.0) -> list[Message]:
        """Compact now (trigger: auto | manual | overflow). Returns `history` itself when nothing
        changed (cancelled by the hook, or nothing to compact). `decision` is the PreCompact hook's when
        it already ran for this compaction (on a background summary's thread); `waited`, seconds the
        loop already stood still for it."""
        start = time.monotonic()
        if trigger == "overflow":
            self.meter.learn_from_overflow()  # first, so before and after are measured on the same scale
        before = self.meter.state(history)
        if decision is None:
            decision = self._run_hook(trigger, focus, before, len(history))
        if decision.cancel and trigger != "overflow":
            self.report.notice("info", "compaction cancelled by the PreCompact hook")
            return history
        from swecli.context.compaction import CompactionIO, compact_history

        count = self.meter.counter
        io = CompactionIO(self.archive(), provider, self.tool_meta, self.wiring.cancel)
        result = compact_history(history, self.params(trigger, focus, decision), count.message, count.text, io)
        self.spent(result.usage, trigger)
        if not result.changed:
            # After an overflow the retry's outcome speaks for itself (`overflow_failure` when it fails);
            # "N tokens over the target" would only confuse (the target is not the server's window).
            if trigger == "manual":
                self.report.notice("info", "; ".join(result.notes) or "nothing to compact")
            return history
        if not self.shrinks(before, result.history):
            return history
        duration = time.monotonic() - start
        return self.record(trigger, before, result, duration, waited=waited + duration)

    def apply(self, history: list[Message], prepared: PreparedSpan, decision: PreCompactDecision,
              before: ContextState) -> CompactionResult | None:
        """A summary made ahead, over `history` (whose first `prepared.cut` messages are its span, or the
        engine's own rewrites of them); None when it would not shrink the conversation."""
        from swecli.context.compaction import apply_span

        for warning in decision.warnings:
            self.report.notice("warning", warning)
        count = self.meter.counter
        result = apply_span(history, prepared, self.params("auto", "", decision), count.message, count.text,
                            self.archive())
        return result if self.shrinks(before, result.history) else None

    def fold(self, history: list[Message], before: ContextState, target: int) -> list[Message]:
        """Room without a model call: every tool output older than the newest zone (the zone decay keeps)
        becomes a digest naming the file that holds it; the zone halves (down to the newest step) until the
        prompt is at most `target` tokens. `history` itself when nothing could fold."""
        from swecli.context.compaction import CompactionResult

        start = time.monotonic()
        meter = self.meter
        keep = meter.calibration.to_local(decay_recent_for(meter.window, self.config.keep_recent_tokens))
        needed = before.raw_total - meter.calibration.to_local(target)
        ahead = self._folds_ahead()
        folded = fold_older(history, meter.sync(history), self._room_scan(), keep, ahead.reference_for, needed,
                            made=ahead.made)
        if not folded.changed:
            return history
        note = (f"folded {folded.folded} older tool outputs to their saved files; the summary being made is "
                "applied when it is ready")
        result = CompactionResult(folded.history, True, "fold", folded.folded, (note,))
        return self.record("auto", before, result, time.monotonic() - start, background=True)

    def truncate(self, history: list[Message], before: ContextState) -> list[Message]:
        """Room without a model call when folding was not enough: the oldest turns are dropped (the prompts,
        the facts, the references, the earlier summary and the archive are kept), as the truncate strategy
        does. `history` itself when that does not shrink it."""
        from swecli.context.compaction import CompactionIO, compact_history

        start = time.monotonic()
        count = self.meter.counter
        params = dataclasses.replace(self.params("auto", "", None), strategy="truncate", force=True)
        result = compact_history(history, params, count.message, count.text, CompactionIO(self.archive(),
                                                                                          meta=self.tool_meta))
        if not result.changed or not self.shrinks(before, result.history):
            return history
        notes = (*result.notes, "dropped the oldest turns without a summary (their facts, references and transcript "
                                "are kept); the summary being made takes their place when it is ready")
        result = dataclasses.replace(result, notes=notes)
        return self.record("auto", before, result, time.monotonic() - start, background=True)

    def overtaken(self, history: list[Message], prepared: PreparedSpan, before: ContextState,
                  waited: float = 0.0) -> list[Message] | None:
        """A summary made in the background whose span a truncation dropped meanwhile: its body goes into the
        truncation's summary message (`compaction.with_model_summary`). None when there is none to improve."""
        from swecli.context.compaction import CompactionResult, summary_body, with_model_summary

        index = next((i for i in range(len(history) - 1, -1, -1) if is_summary(history[i])), None)
        if index is None or not summary_body(prepared.summary.content):
            return None
        summary = history[index]
        assert isinstance(summary, UserMessage)
        updated = [*history[:index], with_model_summary(summary, prepared.summary), *history[index + 1:]]
        result = CompactionResult(updated, True, prepared.strategy, 1, ("the summary made in the background took the "
                                                                        "place of the truncation's",))
        return self.record("auto", before, result, 0.0, waited=waited, background=True)

    def look_ahead(self, history: list[Message], make_digests: bool = False) -> None:
        """Work out now, for the messages that left the newest zone since the last step, what folding them
        would save; with `make_digests` (a summary is on its way: a fold may come), hand them to the worker
        that saves them and makes their digests (`foldahead.py`): a fold that comes later only swaps them."""
        meter = self.meter
        keep = meter.calibration.to_local(decay_recent_for(meter.window, self.config.keep_recent_tokens))
        ledger = meter.sync(history)
        scan = self._room_scan()
        scan.saving(ledger, keep)
        if make_digests:
            self._hand_over(ledger, scan, ledger.zone_start(keep))

    def _hand_over(self, ledger: Ledger, scan: DecayScan, zone: int) -> None:
        """Give the worker the outputs (and the other older messages) it was not given yet: what was handed
        over is remembered by position, so a step costs what it added, not the whole history (the worker
        takes each message once anyway). A rewrite, a restarted scan or another worker starts over."""
        ahead = self._folds_ahead()
        where = (ahead, ledger.generation, scan.epoch)
        given = self._handed if self._handed[0] == where else (where, 0, 0)
        _, candidates, older = given
        ahead.submit(scan.candidates_since(ledger, candidates), ledger.messages[older:zone])
        self._handed = (where, scan.ready(), max(older, zone))

    @property
    def folds_ahead(self) -> FoldsAhead | None:
        """The worker making digests ahead, once a summary on its way started it."""
        return self._ahead

    def close(self) -> None:
        """Stop the worker that makes digests ahead (what it has not made yet is dropped)."""
        if self._ahead is not None:
            self._ahead.close()

    def _room_scan(self) -> DecayScan:
        """The scan folds use, kept while the counter is the same (`fold_older`)."""
        if self._room is None or self._room.counter is not self.meter.counter:
            self._room = DecayScan(self.meter.counter, default=room_policy)
        return self._room

    def _folds_ahead(self) -> FoldsAhead:
        """The digests made ahead, kept while the counter is the same (a digest names its size in tokens)."""
        if self._ahead is None or self._ahead.counter is not self.meter.counter:
            from swecli.context.foldahead import FoldsAhead

            if self._ahead is not None:
                self._ahead.close()
            self._ahead = FoldsAhead(self.meter.counter, self.root or Path.cwd(), self.mechanisms.redactor,
                                     self.loop_free)
        return self._ahead

    # --- parts -----------------------------------------------------------------------------------------

    def params(self, trigger: str, focus: str, decision: PreCompactDecision | None) -> CompactionParams:
        """The budgets of a compaction by `trigger`; `decision`: the PreCompact hook's answer (None: no hook ran,
        as when the scheduler only plans; the same as an empty answer)."""
        meter = self.meter
        budget, to_local = meter.budget, meter.calibration.to_local
        limit = budget.limit if trigger != "overflow" else int(budget.limit * OVERFLOW_TARGET)
        local_limit = to_local(limit)
        if trigger == "overflow" and meter.last_request is not None:
            # The rejected request did not fit, whatever our numbers said (a wrong window, a very
            # different tokenizer): the result must be clearly smaller than it.
            local_limit = min(local_limit, int(meter.counter.request(meter.last_request) * OVERFLOW_TARGET))
        # /compact asks for a compaction now: like Claude Code's, it summarizes everything but the
        # newest turn, rather than answering that the history already fits the recent budget.
        keep_recent = 0 if trigger == "manual" else to_local(meter.keep_recent_tokens)
        return CompactionParams(
            limit=local_limit, fixed=meter.fixed_tokens() + meter.tail[1],  # the tail is sent every time too
            keep_recent=keep_recent, strategy=self.config.strategy, focus=focus,
            instructions=decision.instructions if decision is not None else "",
            summary_text=decision.summary if decision is not None else "",
            summary_tokens=max(256, min(4_096, limit // 8, meter.max_tokens)), request_window=to_local(meter.window),
            prompt_head_tokens=max(200, min(2_000, limit // 10)), sections=self.mechanisms.summary_sections(),
            pin=self.wiring.pin, force=trigger != "auto",
        )

    def hook_decision(self, trigger: str, focus: str, state: ContextState, count: int,
                      background: bool = True) -> PreCompactDecision:
        """The PreCompact hook's answer; no side effects (it may run on a background summary's thread)."""
        from swecli.context.hooks import PreCompactDecision, PreCompactInput, run_pre_compact

        if not self.has_hook():
            return PreCompactDecision()
        payload = PreCompactInput(trigger=trigger, tokens=state.total, window=self.meter.window, message_count=count,
                                  focus=focus, strategy=self.config.strategy, background=background)
        return run_pre_compact(payload, command=self.hooks.pre_compact, callback=self.wiring.pre_compact,
                               cwd=self.root or Path.cwd(), timeout=self.hooks.timeout)

    def has_hook(self) -> bool:
        return bool(self.hooks.pre_compact.strip()) or self.wiring.pre_compact is not None

    def _run_hook(self, trigger: str, focus: str, state: ContextState, count: int) -> PreCompactDecision:
        decision = self.hook_decision(trigger, focus, state, count, background=False)
        for warning in decision.warnings:
            self.report.notice("warning", warning)
        if decision.cancel and trigger == "overflow":
            self.report.notice("warning", "the PreCompact hook asked to cancel, but the request does not fit the "
                                          "model's window: compacting anyway")
        return decision

    def shrinks(self, before: ContextState, history: list[Message]) -> bool:
        """A compaction is applied only when it makes the next request smaller: on a short conversation a
        summary can outweigh what it replaces, and a bigger "compacted" history helps no one."""
        after = self.meter.state(history)
        if after.total < before.total:
            return True
        self.report.notice("info", f"compaction would not shrink the conversation ({before.total:,} -> "
                                   f"{after.total:,} tokens); kept it as it is")
        return False

    def record(self, trigger: str, before: ContextState, result: CompactionResult, duration: float,
               waited: float = 0.0, background: bool = False) -> list[Message]:
        mechanisms = self.mechanisms
        # The prefix is rewritten anyway: old images become stand-ins now.
        history = mechanisms.age_images(result.history, riding_along=True)
        after = self.meter.state(history)
        mechanisms.rewrite("compaction")
        mechanisms.remember_references(history)
        event = CompactionDone(trigger=trigger, strategy=result.strategy, tokens_before=before.total,
                               tokens_after=after.total, messages_compacted=result.messages_compacted,
                               duration=duration, note="; ".join(result.notes), references=tuple(mechanisms.findings),
                               waited=waited, background=background)
        self.compactions.append(event)
        self.report.emit(event)
        if after.over_threshold:
            self.report.notice("warning", f"after compaction the context is still {after.percent:.0f}% of the window "
                                          f"({'; '.join(result.notes) or 'the latest turn alone is too large'})")
        return history

    def spent(self, usage: Usage, trigger: str) -> None:
        """Summary requests are spend whether or not their compaction is applied."""
        if usage.requests:
            self.usage = self.usage + usage
            self.report.emit(SummarySpent(usage, trigger))
