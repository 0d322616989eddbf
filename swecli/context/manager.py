"""Context assembly: what the agent loop asks of the context engine.

The loop calls, in order, each iteration:
  `prepare(history, provider)`  -> history, compacted at this turn boundary if the next request
                                   would exceed the threshold (auto-compaction); past the warning
                                   level the summary is made in the background (`background.py`)
  `request(history)`            -> the ModelRequest (stable prefix, append-only history, dynamic tail)
  `observe(request, usage)`     -> calibrate the local token count to the provider's number
and per tool call `tool_content(call, result)` -> the text that enters the history (offload hook),
and on a provider context-length error `note_overflow(error)` (logged; a smaller window named by the
server is adopted) and `compact(history, provider, trigger="overflow")`, then one retry; when that
fails too, `overflow_failure(first, again)` is the error the user reads.
`/compact [focus]` calls `compact(history, provider, trigger="manual", focus=...)`; `/context` and the
toolbar call `state(history)`.

Every compaction is appended to `compactions` and sent to `on_event` as a `CompactionDone`;
warnings (a failing hook, a summary that fell back to truncation) go to `on_event` as `Notice`s, and
a background summary's start and end as `BackgroundSummary` (all from the loop's thread). The loop
also calls `cancel_background(reason)` when the user interrupts, and `close()` at the end.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swecli.config import ContextConfig, HookConfig
from swecli.context import background
from swecli.context.archive import Archive, DiskArchive
from swecli.context.background import SummaryJob, SummaryWork
from swecli.context.budget import (
    Calibration,
    ContextBudget,
    ContextState,
    decay_recent_for,
    keep_recent_for,
    provider_prompt_tokens,
)
from swecli.context.compaction import (
    CompactionParams,
    CompactionResult,
    Pin,
    SummarySection,
    apply_span,
    compact_history,
    is_prompt,
    plan_span,
)
from swecli.context.engineering import Mechanisms
from swecli.context.hooks import PreCompactCallback, PreCompactDecision, PreCompactInput, run_pre_compact
from swecli.context.ledger import Ledger
from swecli.context.todo import TodoState
from swecli.context.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING, TokenCounter, encoding_for_model
from swecli.events import BackgroundSummary, CompactionDone, ContextOverflow, Event, Notice, SummarySpent
from swecli.llm.base import CancelToken, ContextOverflowError, ModelRequest, Provider
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolCall, ToolMessage, ToolSchema, Usage
from swecli.models.presets import DEFAULT_CONTEXT_WINDOW
from swecli.models.thinking import MIN_BUDGET, Thinking
from swecli.tools.base import ToolResult

if TYPE_CHECKING:
    from swecli.config import Settings

log = logging.getLogger(__name__)

OVERFLOW_TARGET = 0.85
"""After a provider's context-length error, compact to this fraction of the usual target: our
count was proven low, so leave a margin."""
_META_KEYS = ("exit_code", "path", "existed")
_META_LIMIT = 5_000


@dataclass
class ContextManager:
    system: tuple[SystemBlock, ...]
    tools: tuple[ToolSchema, ...]
    max_tokens: int = 8192
    compactions: list[CompactionDone] = field(default_factory=list)
    window: int = DEFAULT_CONTEXT_WINDOW
    """The model's context window in provider tokens (`Settings.context_window`)."""
    window_source: str = "default for unknown models"
    """Where `window` came from (`Settings.window_source`), for /context."""
    config: ContextConfig = field(default_factory=ContextConfig)
    hooks: HookConfig = field(default_factory=HookConfig)
    memory: tuple[SystemBlock, ...] = ()
    """Session-stable memory (OPENCLI.md, playbook): sent after `system`, never compacted."""
    root: Path | None = None
    """Project root: compaction archives go to `<root>/.swecli/compactions/` (cwd when None)."""
    model: str = ""
    """Picks the tiktoken encoding (cl100k_base for GPT-4/3.5, o200k_base otherwise)."""
    on_event: Callable[[Event], None] | None = None
    pre_compact: PreCompactCallback | None = None
    """Library PreCompact hook, run after the configured command."""
    archive: Archive | None = None
    """Where compaction saves what it removes; a fresh `DiskArchive(root)` per compaction when None."""
    summary_sections: list[SummarySection] = field(default_factory=list)
    """Extra sections for the summary message (e.g. a reference list), see `compaction.SummarySection`."""
    pin: Pin | None = None
    """Messages compaction keeps verbatim besides the prompts (loaded skills), see `compaction.Pin`."""
    cancel: CancelToken | None = None
    """The loop's cancel token: Esc during a summary request falls back to truncation at once."""
    mechanisms: Mechanisms | None = None
    """Offload, decay, recitation, failure evidence, references, the append-only check."""
    counter: TokenCounter = field(default=None)  # type: ignore[assignment]  # set in __post_init__
    calibration: Calibration = field(default_factory=Calibration)
    compaction_usage: Usage = field(default_factory=Usage)
    """Tokens spent by summary requests (not part of the loop's own usage)."""
    last_state: ContextState | None = None
    """The state of the last request built (for the toolbar between turns)."""
    _last_request: ModelRequest | None = field(default=None, repr=False)
    _last_request_tokens: int = field(default=0, repr=False)
    _tail: tuple[str, int] = field(default=("", 0), repr=False)
    """The latest dynamic tail and its local tokens."""
    _tool_meta: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    summary_provider: Callable[[], Provider] | None = None
    """Makes the background summary's own provider (its own HTTP client), closed after use. None: the
    loop's provider is used from the summary's thread (httpx clients may be shared between threads)."""
    on_background_done: Callable[[], None] | None = None
    """Called from the summary's thread when it ends (a REPL redraws its toolbar); nothing else may be."""
    _job: SummaryJob | None = field(default=None, repr=False)
    thinking_budget: int = 0
    """The extended-thinking budget of the latest request: part of the reply reserve (a wire that asks for
    it sends max_tokens + budget)."""

    def __post_init__(self) -> None:
        if self.counter is None:
            self.counter = TokenCounter(encoding_for_model(self.model), image_tokens=image_formula(self.model))
        self._ledger = Ledger(self.counter.message)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        system: tuple[SystemBlock, ...],
        tools: tuple[ToolSchema, ...],
        memory: tuple[SystemBlock, ...] = (),
        root: Path | None = None,
        on_event: Callable[[Event], None] | None = None,
        todo: TodoState | None = None,
    ) -> ContextManager:
        manager = cls(system=system, tools=tools, max_tokens=settings.max_tokens, window=settings.context_window,
                      window_source=settings.window_source, config=settings.context, hooks=settings.hooks,
                      memory=memory, root=root, model=settings.model, on_event=on_event)
        manager.mechanisms = Mechanisms(settings.context, manager.counter, root or Path.cwd(),
                                        todo=todo or TodoState(), on_event=on_event or (lambda event: None),
                                        images=settings.images)
        manager.summary_sections.append(manager.mechanisms.references_section)
        return manager

    def mark_rewrite(self, reason: str) -> None:
        """The loop replaced the history on purpose (/clear, an interrupt): not a cache violation. Any
        rewrite but the engine's own (compaction, decay) drops a background summary."""
        if reason not in ("compaction", "decay"):
            self.cancel_background(reason)
        if self.mechanisms is not None:
            self.mechanisms.rewrite(reason)

    def cancel_background(self, reason: str) -> None:
        """Drop the background summary, if one is being made or waits (Esc, /clear, /model, the end)."""
        job, self._job = self._job, None
        if job is not None:
            job.cancel.cancel()
            self._report(job, "cancelled", reason)

    def close(self, wait: float = 1.0) -> None:
        """Drop a background summary and give its thread up to `wait` seconds to stop (it stops within a
        fraction of a second of the cancel, unless a PreCompact hook command is still running)."""
        job = self._job
        self.cancel_background("the session closed")
        if job is not None:
            job.done.wait(wait)

    @property
    def background_job(self) -> SummaryJob | None:
        """The summary being made in the background (or ready, or failed, until the threshold)."""
        return self._job

    def background_status(self) -> str:
        """For the toolbar: what the background summary is doing ("" when there is none)."""
        job = self._job
        if job is None:
            return ""
        return {"running": "summarizing older context", "ready": "summary ready",
                "declined": "", "failed": "background summary failed", "cancelled": ""}[job.phase]

    def set_tools(self, tools: tuple[ToolSchema, ...], reason: str) -> None:
        """The tools list changed between two requests (MCP tools loaded or removed): a planned
        prefix change, so the append-only check does not report it (the history is untouched: a
        background summary goes on)."""
        if tools != self.tools:
            self.tools = tools
            if self._last_request is not None and self.mechanisms is not None:  # else no prefix to keep yet
                self.mechanisms.rewrite(reason or "tools changed")

    def use_model(self, model: str, window: int, source: str = "") -> None:
        """After /model: the new window drives compaction, the new model's tokenizer family picks the
        encoding, and the calibration starts over (it described the old model's tokenizer)."""
        self.window = window
        self.window_source = source or self.window_source
        self.cancel_background("the model changed")
        if model != self.model:
            self.model = model
            self.calibration = Calibration()
            if encoding_for_model(model) != self.counter.encoding_name:
                self.counter = TokenCounter(encoding_for_model(model), self.counter.include_reasoning)
                self._ledger = Ledger(self.counter.message)
                if self.mechanisms is not None:
                    self.mechanisms.use_counter(self.counter)
            self.counter.image_tokens = image_formula(model)

    # --- budget and accounting ------------------------------------------------------------------

    @property
    def budget(self) -> ContextBudget:
        return ContextBudget(window=self.window, threshold=self.config.threshold,
                             max_tokens=self.max_tokens + self.thinking_budget, warning=self.config.warning_level)

    @property
    def keep_recent_tokens(self) -> int:
        """Recent history compaction keeps verbatim, in provider tokens (`budget.keep_recent_for`)."""
        return keep_recent_for(self.window, self.config.keep_recent_tokens)

    def state(self, history: Sequence[Message], tail: str | None = None) -> ContextState:
        """What the next request would send, by component (calibrated), for /context, the toolbar and the
        compaction trigger. `tail` is the request's dynamic tail; None counts the latest one built."""
        count = self.counter
        ledger = self._ledger.sync(history)
        turn = ledger.turn_start() if not turn_finished(history) else len(history)
        raw = {
            "system": count.system(self.system),
            "tools": count.tools(self.tools),
            "memory": count.system(self.memory),
            "history": ledger.tokens(0, turn),
            "current_turn": ledger.tokens(turn) + REPLY_PRIMING,
            "tail": self._tail[1] if tail is None else _tail_tokens(count, tail),
        }
        scale = self.calibration.apply
        return ContextState(
            budget=self.budget, **{k: scale(v) for k, v in raw.items()}, raw_total=sum(raw.values()),
            ratio=self.calibration.ratio, calibrated=self.calibration.samples > 0, exact=count.exact,
            encoding=count.encoding_in_use, messages=len(history),
        )

    def observe(self, request: ModelRequest, usage: Usage | None) -> None:
        """Fold the provider's prompt count for `request` into the calibration."""
        if usage is None:
            return  # the server reports no usage (llama.cpp): local counts stand
        local = self._last_request_tokens if request is self._last_request else self.counter.request(request)
        self.calibration.observe(provider_prompt_tokens(usage), local)

    def estimate_usage(self, request: ModelRequest, reply: AssistantMessage) -> Usage:
        """Local counts for a response whose server reported no usage: the prompt as the meter counts
        it (calibrated), the output from the reply's text, reasoning and tool calls."""
        count = self.counter.text
        output = count(reply.content) + count(reply.reasoning)
        output += sum(count(call.name) + count(call.arguments) for call in reply.tool_calls)
        return Usage(input_tokens=self.calibration.apply(self.counter.request(request)), output_tokens=output,
                     requests=1, estimated_requests=1)

    # --- the loop's calls -----------------------------------------------------------------------

    def prepare(self, history: list[Message], provider: Provider) -> list[Message]:
        """Decay, then auto-compaction, at a turn boundary: never while a tool call waits for its result.
        The trigger counts everything the request will send, its dynamic tail included."""
        if not history:
            return history
        open_calls = has_open_calls(history)
        # While a summary is being made, decay waits: the compaction rewrites that history soon anyway,
        # and a decay batch now would cost a prompt-cache miss for nothing.
        if self.mechanisms is not None and not open_calls and self._job is None:
            keep = self.calibration.to_local(decay_recent_for(self.window, self.config.keep_recent_tokens))
            history = self.mechanisms.decay(history, self._ledger.sync(history), keep)
        state = self.state(history, self._tail_for(history))
        self.last_state = state  # what the next request carries (ModelCallStarted, the toolbar)
        if not self.config.auto_compact or open_calls:
            return history
        if self._job is None and self._wants_background(state):
            self._start_background(history, provider, state)
        if self._job is not None:
            return self._with_background(history, provider, state)
        return self.compact(history, provider, trigger="auto") if state.over_threshold else history

    def request(self, history: list[Message], thinking: Thinking | None = None) -> ModelRequest:
        """The request for `history`: the reply reserve (max_tokens, plus the thinking budget when
        extended thinking is on), shrunk when needed so that the prompt and everything the reply may
        use fit the window together."""
        tail = self._tail_for(history)
        local = self._request_tokens(history, tail)
        self.thinking_budget = thinking.budget if thinking is not None else 0
        room = self.budget.reply_tokens(self.calibration.apply(local))
        think, max_tokens = _split_reply(room, thinking or Thinking(), self.max_tokens)
        request = ModelRequest(system=self.system + self.memory, messages=tuple(history), tools=self.tools,
                               max_tokens=max_tokens, tail=tail, thinking=think)
        if self.mechanisms is not None:
            self.mechanisms.check(request)
        self._last_request, self._last_request_tokens = request, local
        return request

    def _tail_for(self, history: Sequence[Message]) -> str:
        """This iteration's dynamic tail (asking again in the same iteration gives the same text)."""
        if self.mechanisms is None:
            return ""
        ledger = self._ledger.sync(history)
        fill = self.calibration.apply(self._fixed_tokens() + ledger.tokens()) / self.window if self.window else 0.0
        tail = self.mechanisms.tail(history, fill, ledger)
        if tail != self._tail[0]:
            self._tail = (tail, _tail_tokens(self.counter, tail))
        return tail

    def _fixed_tokens(self) -> int:
        """Local tokens every request sends besides history and tail: system, memory, tool schemas."""
        count = self.counter
        return count.system(self.system) + count.system(self.memory) + count.tools(self.tools) + REPLY_PRIMING

    def _request_tokens(self, history: Sequence[Message], tail: str) -> int:
        """`TokenCounter.request` of the request for `history`, from the ledger."""
        tail_tokens = self._tail[1] if tail == self._tail[0] else _tail_tokens(self.counter, tail)
        return self._fixed_tokens() + self._ledger.sync(history).tokens() + tail_tokens

    def tool_content(self, call: ToolCall, result: ToolResult) -> str:
        # The tool's structured facts (exact exit code, path) feed compaction's extractors later.
        facts = {k: result.meta[k] for k in _META_KEYS if k in result.meta}
        if facts:
            if len(self._tool_meta) >= _META_LIMIT:
                self._tool_meta.pop(next(iter(self._tool_meta)))
            self._tool_meta[call.id] = facts
        return self.mechanisms.tool_content(call, result) if self.mechanisms is not None else result.content

    def compact(self, history: list[Message], provider: Provider, trigger: str, focus: str = "",
                decision: PreCompactDecision | None = None, waited: float = 0.0) -> list[Message]:
        """Compact now (trigger: auto | manual | overflow). Returns `history` itself when nothing
        changed (cancelled by the hook, or nothing to compact). `decision` is the PreCompact hook's when
        it already ran for this compaction (on a background summary's thread); `waited`, seconds the
        loop already stood still for it."""
        start = time.monotonic()
        if trigger != "auto":
            self.cancel_background(f"a {trigger} compaction replaced it")
        if trigger == "overflow":
            self._learn_from_overflow()  # first, so before and after are measured on the same scale
        before = self.state(history)
        if decision is None:
            decision = self._run_hook(trigger, focus, before, len(history))
        if decision.cancel and trigger != "overflow":
            self._notice("info", "compaction cancelled by the PreCompact hook")
            return history
        result = compact_history(
            history, self._params(trigger, focus, decision), self.counter.message, self.counter.text,
            self.archive or DiskArchive(self.root or Path.cwd()), provider, self._tool_meta, self.cancel,
        )
        self._spent(result.usage, trigger)
        if not result.changed:
            # After an overflow the retry's outcome speaks for itself (`overflow_failure` when it fails);
            # "N tokens over the target" would only confuse (the target is not the server's window).
            if trigger == "manual":
                self._notice("info", "; ".join(result.notes) or "nothing to compact")
            return history
        if not self._shrinks(before, result.history):
            return history
        duration = time.monotonic() - start
        return self._record(trigger, before, result, duration, waited=waited + duration)

    # --- background summaries ---------------------------------------------------------------------

    def _wants_background(self, state: ContextState) -> bool:
        config, budget = self.config, self.budget
        return (config.background_compaction and config.strategy == "summarize"
                and budget.warning_limit < state.total <= budget.hard_limit)

    def _start_background(self, history: list[Message], provider: Provider, state: ContextState) -> None:
        params = self._params("auto", "", PreCompactDecision())
        cut = plan_span(history, params, self.counter.message, self.counter.text)
        if not cut:
            return  # nothing older worth summarizing yet
        job = SummaryJob(tuple(history), cut, params, state.total)

        def summary_provider() -> tuple[Provider, bool]:
            return (self.summary_provider(), True) if self.summary_provider is not None else (provider, False)

        work = SummaryWork(hook=lambda: self._hook_decision("auto", "", state, len(history)),
                           provider=summary_provider, encoding=self.counter.encoding_name,
                           include_reasoning=self.counter.include_reasoning,
                           archive=self.archive or DiskArchive(self.root or Path.cwd()), meta=dict(self._tool_meta),
                           on_done=self.on_background_done)
        self._job = background.start(job, work)
        self._emit(BackgroundSummary("started", cut, state.total))

    def _with_background(self, history: list[Message], provider: Provider, state: ContextState) -> list[Message]:
        """With a summary on its way: apply it at the threshold if it is ready, wait for it only at the
        hard limit, and fall back to the normal path if it has nothing to offer."""
        job, waited = self._job, 0.0
        assert job is not None
        if job.phase == "running":
            if state.total <= self.budget.hard_limit:
                return history  # room left: the loop goes on while the summary is made
            self._notice("info", f"the context is at {state.percent:.0f}% of the window, the most a request can "
                                 f"carry with room for the reply: waiting for the background summary "
                                 f"(running for {job.duration:.0f}s)")
            waited = background.wait(job, self.cancel)
        elif not state.over_threshold:
            return history  # not needed yet
        self._job = None
        if job.phase == "ready" and job.matches(history):
            return self._apply_background(history, job, state, waited)
        return self._drop_background(history, provider, job, waited)

    def _apply_background(self, history: list[Message], job: SummaryJob, before: ContextState,
                          waited: float) -> list[Message]:
        start = time.monotonic()
        assert job.prepared is not None
        for warning in job.decision.warnings:
            self._notice("warning", warning)
        result = apply_span(history, job.prepared, self._params("auto", "", job.decision), self.counter.message,
                            self.counter.text, self.archive or DiskArchive(self.root or Path.cwd()))
        if not self._shrinks(before, result.history):
            self._report(job, "dropped", "it would not have shrunk the conversation")
            return history
        self._report(job, "used")
        return self._record("auto", before, result, job.duration, waited=waited + time.monotonic() - start,
                            background=True)

    def _drop_background(self, history: list[Message], provider: Provider, job: SummaryJob,
                         waited: float) -> list[Message]:
        phase = job.phase
        if phase == "declined":
            self._report(job, "declined")
            for warning in job.decision.warnings:
                self._notice("warning", warning)
            self._notice("info", "compaction cancelled by the PreCompact hook")
            return history
        if phase == "ready":
            self._report(job, "dropped", "the history it summarized changed meanwhile")
        else:
            self._report(job, "cancelled" if job.cancel.cancelled else "failed", job.why_not())
        # The normal path, on the spot; the hook already ran for this compaction (it runs once).
        hook_ran = self.hooks.pre_compact.strip() or self.pre_compact is not None
        return self.compact(history, provider, "auto", decision=job.decision if hook_ran else None, waited=waited)

    def _spent(self, usage: Usage, trigger: str) -> None:
        """Summary requests are spend whether or not their compaction is applied."""
        if usage.requests:
            self.compaction_usage = self.compaction_usage + usage
            self._emit(SummarySpent(usage, trigger))

    def _report(self, job: SummaryJob, phase: str, note: str = "") -> None:
        if phase != "started":
            self._spent(job.usage, "background")
        self._emit(BackgroundSummary(phase, job.cut, job.tokens, job.duration, note))

    def note_overflow(self, error: ContextOverflowError) -> None:
        """A provider's context-length error: reported (a `ContextOverflow` event, which the log keeps), and
        when the server names a window smaller than the planned one, planned with from now on."""
        planned, server = self.window, error.server_window
        adopted = server is not None and server < planned
        if error.prompt_tokens and self._last_request is not None:
            # The server counted the rejected prompt: its ratio to our count holds for what is sent next (a
            # summary request included), even when no response ever reports usage (llama-cpp-python).
            local = self.counter.request(self._last_request)
            if local > 0:
                self.calibration.at_least(error.prompt_tokens / local)
        if self.on_event is not None:
            self.on_event(ContextOverflow(planned, server, error.requested, error.reason, adopted))
        if server is None or not adopted:
            return
        self.window, self.window_source = server, "server (its context-length error)"
        self._notice("warning", f"the server's context window is {server:,} tokens, smaller than the {planned:,} "
                                f"swecli planned for; using {server:,} from now on. Set context_limit = {server} "
                                "to start with it, or give the server a larger context (llama-server -c, "
                                "Ollama num_ctx, LM Studio's context length).")

    def overflow_failure(self, first: ContextOverflowError, again: ContextOverflowError) -> ContextOverflowError:
        """The error for a request that still does not fit after compacting: both windows and the fix,
        and every request sent (the retries of both attempts)."""
        window = again.server_window or first.server_window
        sent = f"{first.attempts + again.attempts} requests sent"
        if window is not None:
            size = f" and the request {again.requested:,}" if again.requested else ""
            message = (f"the request does not fit the model's context window even after compacting ({sent}): the "
                       f"server's window is {window:,} tokens{size}; give the server a larger context "
                       "(llama-server -c, Ollama num_ctx) or send a shorter message.")
        else:
            message = (f"{again.reason}; still too large after compacting ({sent}): swecli planned for "
                       f"{self.window:,} tokens ({self.window_source}); if the server's window is smaller, set "
                       "context_limit to it or give the server a larger context.")
        return ContextOverflowError(message, server_window=window, requested=again.requested)

    # --- internals ------------------------------------------------------------------------------

    def _hook_decision(self, trigger: str, focus: str, state: ContextState, count: int,
                       background: bool = True) -> PreCompactDecision:
        """The PreCompact hook's answer; no side effects (it may run on a background summary's thread)."""
        if not self.hooks.pre_compact.strip() and self.pre_compact is None:
            return PreCompactDecision()
        payload = PreCompactInput(trigger=trigger, tokens=state.total, window=self.window, message_count=count,
                                  focus=focus, strategy=self.config.strategy, background=background)
        return run_pre_compact(payload, command=self.hooks.pre_compact, callback=self.pre_compact,
                               cwd=self.root or Path.cwd(), timeout=self.hooks.timeout)

    def _run_hook(self, trigger: str, focus: str, state: ContextState, count: int) -> PreCompactDecision:
        decision = self._hook_decision(trigger, focus, state, count, background=False)
        for warning in decision.warnings:
            self._notice("warning", warning)
        if decision.cancel and trigger == "overflow":
            self._notice("warning", "the PreCompact hook asked to cancel, but the request does not fit the "
                                    "model's window: compacting anyway")
        return decision

    def _params(self, trigger: str, focus: str, decision: PreCompactDecision) -> CompactionParams:
        budget, to_local, count = self.budget, self.calibration.to_local, self.counter
        limit = budget.limit if trigger != "overflow" else int(budget.limit * OVERFLOW_TARGET)
        local_limit = to_local(limit)
        if trigger == "overflow" and self._last_request is not None:
            # The rejected request did not fit, whatever our numbers said (a wrong window, a very
            # different tokenizer): the result must be clearly smaller than it.
            local_limit = min(local_limit, int(count.request(self._last_request) * OVERFLOW_TARGET))
        fixed = self._fixed_tokens() + self._tail[1]  # the tail is sent with every request too
        summary_tokens = max(256, min(4_096, limit // 8, self.max_tokens))
        # /compact asks for a compaction now: like Claude Code's, it summarizes everything but the
        # newest turn, rather than answering that the history already fits the recent budget.
        keep_recent = 0 if trigger == "manual" else to_local(self.keep_recent_tokens)
        return CompactionParams(
            limit=local_limit, fixed=fixed, keep_recent=keep_recent,
            strategy=self.config.strategy, focus=focus, instructions=decision.instructions,
            summary_text=decision.summary, summary_tokens=summary_tokens, request_window=to_local(self.window),
            prompt_head_tokens=max(200, min(2_000, limit // 10)), sections=tuple(self.summary_sections),
            pin=self.pin,
            force=trigger != "auto",
        )

    def _shrinks(self, before: ContextState, history: list[Message]) -> bool:
        """A compaction is applied only when it makes the next request smaller: on a short conversation a
        summary can outweigh what it replaces, and a bigger "compacted" history helps no one."""
        after = self.state(history)
        if after.total < before.total:
            return True
        self._notice("info", f"compaction would not shrink the conversation ({before.total:,} -> {after.total:,} "
                             "tokens); kept it as it is")
        return False

    def _learn_from_overflow(self) -> None:
        """The provider rejected the last request, so its prompt was larger than window - max_tokens:
        a proven lower bound for the calibration ratio."""
        request = self._last_request
        if request is None:
            return
        local = self.counter.request(request)
        room = self.window - request.max_tokens - request.thinking.budget
        if local > 0 and room > 0:
            self.calibration.at_least(room / local)

    def _record(self, trigger: str, before: ContextState, result: CompactionResult, duration: float,
                waited: float = 0.0, background: bool = False) -> list[Message]:
        history = result.history
        if self.mechanisms is not None:  # the prefix is rewritten anyway: old images become stand-ins now
            history = self.mechanisms.age_images(history, riding_along=True)
        after = self.state(history)
        self.last_state = after
        if self.mechanisms is not None:
            self.mechanisms.rewrite("compaction")
            self.mechanisms.remember_references(history)
        event = CompactionDone(trigger=trigger, strategy=result.strategy, tokens_before=before.total,
                               tokens_after=after.total, messages_compacted=result.messages_compacted,
                               duration=duration, note="; ".join(result.notes),
                               references=tuple(self.mechanisms.findings) if self.mechanisms is not None else (),
                               waited=waited, background=background)
        self.compactions.append(event)
        self._emit(event)
        if after.over_threshold:
            self._notice("warning", f"after compaction the context is still {after.percent:.0f}% of the window "
                                    f"({'; '.join(result.notes) or 'the latest turn alone is too large'})")
        return history

    def _notice(self, level: str, text: str) -> None:
        if self.on_event is not None:
            self.on_event(Notice(level, text))
        else:
            log.warning("%s", text)

    def _emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)


def _split_reply(room: int, thinking: Thinking, max_tokens: int) -> tuple[Thinking, int]:
    """(thinking, max_tokens) for a reply that may use `room` tokens in all: a wire that thinks adds the
    budget to max_tokens, so the two share the room, in the proportion asked for (all of both when the
    room allows); a budget below Anthropic's minimum turns thinking off for this request rather than
    let the request overflow the window."""
    if not thinking.on:
        return thinking, room
    budget = min(thinking.budget, room * thinking.budget // (max_tokens + thinking.budget))
    if budget < MIN_BUDGET:
        return Thinking(), room
    return dataclasses.replace(thinking, budget=budget), room - budget


def _tail_tokens(counter: TokenCounter, tail: str) -> int:
    """As `TokenCounter.request` counts a tail: one more message."""
    return MESSAGE_OVERHEAD + counter.text(tail) if tail else 0


def image_formula(model: str) -> Callable[[int, int], int]:
    """The model's image cost (`swecli.models.vision.image_tokens`) as the counter takes it."""
    from swecli.models.vision import image_tokens

    return lambda width, height: image_tokens(model, width, height)


def current_turn_start(history: Sequence[Message]) -> int:
    """Index of the last user prompt: the current turn is from there on."""
    for i in range(len(history) - 1, -1, -1):
        if is_prompt(history[i]):
            return i
    return 0


def turn_finished(history: Sequence[Message]) -> bool:
    """The model answered without tool calls: between tasks, everything so far is history."""
    return bool(history) and isinstance(history[-1], AssistantMessage) and not history[-1].tool_calls


def has_open_calls(history: Sequence[Message]) -> bool:
    """Whether the last assistant message still waits for some of its tool results."""
    answered: set[str] = set()
    for msg in reversed(history):
        if isinstance(msg, ToolMessage):
            answered.add(msg.tool_call_id)
        elif isinstance(msg, AssistantMessage):
            return any(call.id not in answered for call in msg.tool_calls)
        else:
            return False
    return False
