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

The engine is three parts that change apart, built whole by its constructor (`from_settings` for a
session): the meter (`meter.py`: what a request carries, the window and its levels), the compaction
scheduler (`scheduler.py`, with `compactor.py` and `runway.py`: when and how the history is compacted)
and the mechanisms (`engineering.py`: offload, decay, recitation, ...; a do-nothing set when off).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from swecli.config import ContextConfig, HookConfig
from swecli.context.budget import Calibration, ContextBudget, ContextState, decay_recent_for
from swecli.context.compaction_params import is_prompt
from swecli.context.compactor import Compactor
from swecli.context.engineering import Mechanisms, NoMechanisms
from swecli.context.meter import Limits, Meter, Prompt, counter_for
from swecli.context.scheduler import CompactionScheduler
from swecli.context.todo import TodoState
from swecli.context.tokens import TokenCounter
from swecli.context.wiring import Reporter, Wiring
from swecli.events import CompactionDone, ContextOverflow
from swecli.llm.base import ContextOverflowError, ModelRequest, Provider
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolCall, ToolMessage, ToolSchema, Usage
from swecli.models.thinking import Thinking
from swecli.session.secrets import Redactor
from swecli.tools.base import ToolResult

if TYPE_CHECKING:
    from swecli.config import Settings
    from swecli.context.background import SummaryJob

__all__ = ["ContextManager", "Limits", "Prompt", "Wiring", "current_turn_start", "has_open_calls"]

MechanismsFor = Callable[[TokenCounter], NoMechanisms]
"""Builds the mechanisms around the engine's token counter."""


class ContextManager:
    def __init__(self, prompt: Prompt, limits: Limits | None = None, config: ContextConfig | None = None, *,
                 hooks: HookConfig | None = None, root: Path | None = None, wiring: Wiring | None = None,
                 mechanisms: MechanismsFor = NoMechanisms) -> None:
        """`root`: the project; compaction archives go to `<root>/.swecli/compactions/` (cwd when None)."""
        wiring = wiring or Wiring()
        limits = limits or Limits()
        self.meter = Meter(prompt, limits, config or ContextConfig(), wiring.counter or counter_for(limits.model))
        self.mechanisms = mechanisms(self.meter.counter)
        self.report = Reporter(wiring.on_event)
        self.compactor = Compactor(self.meter, self.mechanisms, hooks or HookConfig(), root, wiring, self.report)
        self.scheduler = CompactionScheduler(self.compactor, wiring.summary_provider)
        self.last_state: ContextState | None = None
        """The state of the last request built (for the toolbar between turns)."""

    @classmethod
    def from_settings(cls, settings: Settings, prompt: Prompt, *, root: Path | None = None,
                      wiring: Wiring | None = None) -> ContextManager:
        """The engine a session uses: its window and model, `[context]`, `[hooks]`, and every mechanism."""
        wiring = wiring or Wiring()

        def mechanisms(counter: TokenCounter) -> Mechanisms:
            return Mechanisms(settings.context, counter, root or Path.cwd(), todo=wiring.todo or TodoState(),
                              on_event=wiring.on_event, images=settings.images,
                              redactor=Redactor.from_environment(settings))

        limits = Limits(window=settings.context_window, max_tokens=settings.max_tokens, model=settings.model,
                        window_source=settings.window_source)
        return cls(prompt, limits, settings.context, hooks=settings.hooks, root=root, wiring=wiring,
                   mechanisms=mechanisms)

    # --- what the rest of the session reads ---------------------------------------------------------

    @property
    def counter(self) -> TokenCounter:
        return self.meter.counter

    @property
    def calibration(self) -> Calibration:
        return self.meter.calibration

    @property
    def config(self) -> ContextConfig:
        return self.meter.config

    @property
    def budget(self) -> ContextBudget:
        return self.meter.budget

    @property
    def keep_recent_tokens(self) -> int:
        return self.meter.keep_recent_tokens

    @property
    def window(self) -> int:
        return self.meter.window

    @window.setter
    def window(self, window: int) -> None:
        self.meter.window = window

    @property
    def window_source(self) -> str:
        return self.meter.window_source

    @window_source.setter
    def window_source(self, source: str) -> None:
        self.meter.window_source = source

    @property
    def max_tokens(self) -> int:
        return self.meter.max_tokens

    @max_tokens.setter
    def max_tokens(self, max_tokens: int) -> None:
        self.meter.max_tokens = max_tokens

    @property
    def memory(self) -> tuple[SystemBlock, ...]:
        return self.meter.memory

    @memory.setter
    def memory(self, memory: tuple[SystemBlock, ...]) -> None:
        """New session memory (OPENCLI.md edited, the playbook learned): the caller marks the rewrite."""
        self.meter.memory = memory

    @property
    def compactions(self) -> list[CompactionDone]:
        return self.compactor.compactions

    @property
    def compaction_usage(self) -> Usage:
        """Tokens spent by summary requests (not part of the loop's own usage)."""
        return self.compactor.usage

    @property
    def summary_provider(self) -> Callable[[], Provider] | None:
        return self.scheduler.summary_provider

    @summary_provider.setter
    def summary_provider(self, make: Callable[[], Provider] | None) -> None:
        """Another maker of the background summary's provider (for the summaries started from now on)."""
        self.scheduler.summary_provider = make

    @property
    def background_job(self) -> SummaryJob | None:
        """The summary being made in the background (or ready, or failed, until the threshold)."""
        return self.scheduler.job

    def background_status(self) -> str:
        """For the toolbar: what the background summary is doing ("" when there is none)."""
        return self.scheduler.status()

    @property
    def on_background_done(self) -> Callable[[], None] | None:
        return self.scheduler.on_background_done

    @on_background_done.setter
    def on_background_done(self, callback: Callable[[], None] | None) -> None:
        """Called from the summary's thread when it ends (a REPL redraws its toolbar); nothing else may be."""
        self.scheduler.on_background_done = callback

    def summary_start(self, state: ContextState) -> int | None:
        """Where the background summary starts for now (the runway's level; None when it is off)."""
        return self.scheduler.start_level(state) if self.scheduler.in_background() else None

    def state(self, history: Sequence[Message], tail: str | None = None) -> ContextState:
        """What the next request would send, by component (calibrated), for /context, the toolbar and the
        compaction trigger. `tail` is the request's dynamic tail; None counts the latest one built."""
        return self.meter.state(history, tail)

    # --- the loop's calls -----------------------------------------------------------------------------

    def prepare(self, history: list[Message], provider: Provider) -> list[Message]:
        """Decay, then auto-compaction, at a turn boundary: never while a tool call waits for its result.
        The trigger counts everything the request will send, its dynamic tail included."""
        if not history:
            return history
        self.meter.hold(history)
        try:
            return self._prepare(history, provider)
        finally:
            self.meter.hold(None)

    def _prepare(self, history: list[Message], provider: Provider) -> list[Message]:
        meter = self.meter
        keep = meter.calibration.to_local(decay_recent_for(meter.window, meter.config.keep_recent_tokens))
        if (meter.counter.generation == 0 and any(isinstance(m, AssistantMessage) for m in history)
                and meter.sync(history).tokens() > keep):
            # Decay and compaction change the history: never on an estimate. A history decay keeps whole
            # (estimated, it is all newer than what decay keeps: nothing is folded whatever the exact count)
            # goes out while the vocabulary still loads; compaction waits below when it is near a limit.
            meter.counter.text.wait()
        open_calls = has_open_calls(history)
        if not open_calls and not self.scheduler.holds_decay(history):
            history = self.mechanisms.decay(history, meter.sync(history), keep)
        state = meter.state(history, self._tail_for(history))
        if meter.counter.generation == 0 and self._near_a_limit(state):
            meter.counter.text.wait()  # an estimate (it errs high) must not compact, nor shrink a reply
            state = meter.state(history, self._tail_for(history))
        self.last_state = state  # what the next request carries (ModelCallStarted, the toolbar)
        if not self.config.auto_compact or open_calls:
            return history
        compacted = self.scheduler.prepare(history, provider, state)
        if compacted is not history:
            self.last_state = self.meter.state(compacted)
        return compacted

    def request(self, history: list[Message], thinking: Thinking | None = None) -> ModelRequest:
        """The request for `history` (`Meter.request`), checked by the append-only check."""
        self.meter.hold(history)
        try:
            request = self.meter.request(history, self._tail_for(history), thinking)
        finally:
            self.meter.hold(None)
        self.mechanisms.check(request)
        return request

    def _near_a_limit(self, state: ContextState) -> bool:
        """Past where a background summary would start, or over the threshold."""
        start = self.summary_start(state)
        level = self.budget.warning_limit if start is None else min(start, self.budget.warning_limit)
        return state.total > level or state.over_threshold

    def _tail_for(self, history: Sequence[Message]) -> str:
        """This iteration's dynamic tail (asking again in the same iteration gives the same text)."""
        meter = self.meter
        tail = self.mechanisms.tail(history, meter.fill(history), meter.ledger)
        meter.set_tail(tail)
        return tail

    def observe(self, request: ModelRequest, usage: Usage | None) -> None:
        """Fold the provider's prompt count for `request` into the calibration."""
        self.meter.observe(request, usage)

    def estimate_usage(self, request: ModelRequest, reply: AssistantMessage) -> Usage:
        return self.meter.estimate_usage(request, reply)

    def tool_content(self, call: ToolCall, result: ToolResult) -> str:
        """The text of a tool's result that enters the history (offloaded when large)."""
        self.compactor.remember_facts(call, result)
        return self.mechanisms.tool_content(call, result)

    def compact(self, history: list[Message], provider: Provider, trigger: str, focus: str = "") -> list[Message]:
        """Compact now (trigger: auto | manual | overflow), see `Compactor.compact`; a summary under way in
        the background is dropped first when another compaction replaces it."""
        if trigger != "auto":
            self.scheduler.cancel(f"a {trigger} compaction replaced it")
        return self.compactor.compact(history, provider, trigger, focus)

    def mark_rewrite(self, reason: str) -> None:
        """The loop replaced the history on purpose (/clear, an interrupt): not a cache violation. Any
        rewrite but the engine's own (compaction, decay) drops a background summary."""
        if reason not in ("compaction", "decay"):
            self.scheduler.cancel(reason)
        self.mechanisms.rewrite(reason)

    def cancel_background(self, reason: str) -> None:
        """Drop the background summary, if one is being made or waits (Esc, /clear, /model, the end)."""
        self.scheduler.cancel(reason)

    def close(self, wait: float = 1.0) -> None:
        """Drop a background summary and give its thread up to `wait` seconds to stop."""
        self.scheduler.close(wait)

    def resume(self, history: Sequence[Message]) -> None:
        """A resumed session's history, before its first request (repeated failures survive a resume)."""
        self.mechanisms.resume(history)

    def set_tools(self, tools: tuple[ToolSchema, ...], reason: str) -> None:
        """The tools list changed between two requests (MCP tools loaded or removed): a planned
        prefix change, so the append-only check does not report it (the history is untouched: a
        background summary goes on)."""
        meter = self.meter
        if tools != meter.tools:
            meter.tools = tools
            if meter.last_request is not None:  # else no prefix to keep yet
                self.mechanisms.rewrite(reason or "tools changed")

    def use_model(self, model: str, window: int, source: str = "") -> None:
        """After /model: the new window drives compaction, the new model's tokenizer family picks the
        encoding, and the calibration starts over (it described the old model's tokenizer)."""
        meter = self.meter
        meter.window = window
        meter.window_source = source or meter.window_source
        self.scheduler.cancel("the model changed")
        if meter.use_model(model):
            self.mechanisms.use_counter(meter.counter)

    # --- a provider's context-length error -----------------------------------------------------------

    def note_overflow(self, error: ContextOverflowError) -> None:
        """A provider's context-length error: reported (a `ContextOverflow` event, which the log keeps), and
        when the server names a window smaller than the planned one, planned with from now on."""
        meter = self.meter
        planned, server = meter.window, error.server_window
        adopted = server is not None and server < planned
        if error.prompt_tokens:
            meter.learn_prompt_size(error.prompt_tokens)
        self.report.emit(ContextOverflow(planned, server, error.requested, error.reason, adopted))
        if server is None or not adopted:
            return
        meter.window, meter.window_source = server, "server (its context-length error)"
        self.report.notice("warning", f"the server's context window is {server:,} tokens, smaller than the "
                                      f"{planned:,} swecli planned for; using {server:,} from now on. Set "
                                      f"context_limit = {server} to start with it, or give the server a larger "
                                      "context (llama-server -c, Ollama num_ctx, LM Studio's context length).")

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


def current_turn_start(history: Sequence[Message]) -> int:
    """Index of the last user prompt: the current turn is from there on."""
    for i in range(len(history) - 1, -1, -1):
        if is_prompt(history[i]):
            return i
    return 0


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
