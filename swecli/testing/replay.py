"""Replaying a recorded session through the context engine, as the agent loop drives it.

For benchmarks and tests on real histories (`swecli.testing.shared`): `replay_session` feeds the
messages in order, builds a request before each assistant message (the recorded message stands in
for the model's answer) and passes each tool result through `tool_content`; `BudgetCheck` checks
every request against the window.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from swecli.config import ContextConfig, Settings
from swecli.context.manager import ContextManager, Prompt, Wiring
from swecli.context.tokens import TokenCounter
from swecli.events import Event
from swecli.llm.base import ModelRequest, Provider
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolCall, ToolMessage, ToolSchema, Usage
from swecli.testing.model import ScriptedSummarizer
from swecli.tools.base import ToolResult


def check_pairing(messages: tuple[Message, ...] | list[Message]) -> bool:
    pending: set[str] = set()
    for m in messages:
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in pending:
                return False
            pending.discard(m.tool_call_id)
        elif pending:
            return False
        elif isinstance(m, AssistantMessage):
            pending = {c.id for c in m.tool_calls}
    return not pending


@dataclass
class Turn:
    tokens: int
    """The request's prompt, in (calibrated) tokens."""
    engine: float
    """prepare + request + usage report + the toolbar's state, in seconds."""
    intake: float
    """Taking in the new content since the previous request: offload and counting the new messages."""
    rewrite: bool
    """A decay or compaction rewrote the history at this turn."""


def engine(system: tuple[SystemBlock, ...], tools: tuple[ToolSchema, ...], window: int, root: Path,
           events: list[Event] | None = None, **context: object) -> ContextManager:
    """The context engine as a session builds it: default settings, every default mechanism on."""
    settings = Settings(model="replay-model", context_limit=window,
                        context=ContextConfig.model_validate(context))
    sink = events.append if events is not None else (lambda event: None)
    return ContextManager.from_settings(settings, Prompt(system, tools), root=root, wiring=Wiring(on_event=sink))


def replay_session(context: ContextManager, source: list[Message], provider: Provider,
                   check: Callable[[ModelRequest, ContextManager], None] | None = None) -> list[Turn]:
    """Drive `context` through `source` as the agent loop would: before each assistant message, prepare
    the history and build the request (the model's answer is the recorded message); each tool result
    enters through `tool_content` (offload). The context is closed at the end."""
    live: list[Message] = []
    fresh: list[Message] = []
    calls: dict[str, ToolCall] = {}
    turns: list[Turn] = []
    intake = 0.0
    for message in source:
        if isinstance(message, AssistantMessage) and live:
            start = time.perf_counter()
            for new in fresh:
                context.counter.message(new)  # the new content, counted once (cached from then on)
            intake += time.perf_counter() - start
            fresh = []
            rewrites = _rewrites(context)
            start = time.perf_counter()
            live = context.prepare(live, provider)
            request = context.request(live)
            prepared = context.last_state.total if context.last_state is not None else 0
            context.observe(request, Usage(input_tokens=prepared, requests=1))
            state = context.state(live)
            elapsed = time.perf_counter() - start
            turns.append(Turn(state.total, elapsed, intake, _rewrites(context) > rewrites))
            intake = 0.0
            if check is not None:
                check(request, context)
        if isinstance(message, AssistantMessage):
            calls.update((c.id, c) for c in message.tool_calls)
        elif isinstance(message, ToolMessage) and message.tool_call_id in calls:
            start = time.perf_counter()
            content = context.tool_content(calls[message.tool_call_id], ToolResult(message.content))
            intake += time.perf_counter() - start
            message = ToolMessage(tool_call_id=message.tool_call_id, name=message.name, content=content,
                                  is_error=message.is_error)
        live.append(message)
        fresh.append(message)
    context.close()  # the end of the session: a background summary still running is dropped
    return turns


@dataclass
class BudgetCheck:
    """What a replay's requests did against the window (every count but `requests` must stay 0)."""

    window: int
    requests: int = 0
    largest: int = 0
    over_window: int = 0
    """Requests whose prompt + max_tokens exceeds the window (summary requests included)."""
    over_threshold: int = 0
    unpaired: int = 0
    worst: int = 0
    """The largest prompt + max_tokens seen."""
    summary_requests_seen: int = 0
    """Summary requests checked (they are made during compactions, between two requests of the loop)."""

    def __call__(self, request: ModelRequest, context: ContextManager) -> None:
        prompt = context.calibration.apply(context.counter.request(request))
        self.requests += 1
        self.largest = max(self.largest, prompt)
        self.over_threshold += prompt > context.budget.limit
        self.unpaired += not check_pairing(request.messages)
        self._fits(prompt + request.max_tokens)

    def summaries(self, requests: list[ModelRequest], counter: TokenCounter) -> None:
        for request in requests[self.summary_requests_seen:]:
            self._fits(counter.request(request) + request.max_tokens)
        self.summary_requests_seen = len(requests)

    def _fits(self, total: int) -> None:
        self.worst = max(self.worst, total)
        self.over_window += total > self.window



def _rewrites(context: ContextManager) -> int:
    return len(context.compactions) + context.mechanisms.decays


def held_out_replay(system: tuple[SystemBlock, ...], tools: tuple[ToolSchema, ...], history: list[Message],
                    window: int) -> tuple[int, BudgetCheck]:
    """Replay one session at `window` with the default settings; (compactions, what the requests did)."""
    summarizer = ScriptedSummarizer()
    check = BudgetCheck(window)
    with tempfile.TemporaryDirectory() as root:
        context = engine(system, tools, window, Path(root))

        def both(request: ModelRequest, ctx: ContextManager) -> None:
            check(request, ctx)
            check.summaries(summarizer.requests, ctx.counter)

        replay_session(context, history, summarizer, both)
    return len(context.compactions), check


