"""The ReAct loop: ask the model, run its tool calls, append the results, repeat.

The loop's exits are exceptions that carry what to report (mini-swe-agent style): `Finished` when
the model answers without tool calls, `Interrupted` when the user pressed Esc; running out of
iterations ends the `for` loop itself. Replies that are cut at the output limit, paused, refused or
empty are read by `replies.read_reply`, which says whether the turn ends, goes on, or which calls
must not run. Everything else (context assembly, compaction, approvals, rendering,
transcripts) is delegated; the loop only decides what happens next.

A reply's tool calls run in order, except that consecutive calls of a `concurrent` tool (`task`: a
sub-agent each) run side by side, at most `max_parallel` at once; their results are appended in call
order either way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import field, replace

from swecli.collector import COLLECTOR
from swecli.context.admission import input_too_large, pending_input
from swecli.context.manager import ContextManager
from swecli.denials import DenialWatch
from swecli.errors import ControlFlow
from swecli.events import (
    Event,
    HistoryReplaced,
    MessageAppended,
    ModelCallFinished,
    ModelCallStarted,
    Notice,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnFinished,
)
from swecli.llm.base import (
    Cancelled,
    CancelToken,
    ContextOverflowError,
    ModelRequest,
    Provider,
    ProviderNote,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    Waiting,
    sends_thinking_budget,
)
from swecli.messages import (
    Message,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    close_dangling_tool_calls,
)
from swecli.models.thinking import Thinking
from swecli.permissions import Policy
from swecli.records import datarecord
from swecli.tools.base import ToolContext, ToolError, ToolRegistry, ToolResult

INTERRUPTED = "interrupted by user"


class Finished(ControlFlow):
    def __init__(self, answer: str, stop_reason: str = "done") -> None:
        self.answer = answer
        self.stop_reason = stop_reason


class Interrupted(ControlFlow):
    pass


@datarecord
class Agent:
    """The loop: requests, tool calls and their results until the model is done. (A class without a docstring
    gets its signature as one, which `@dataclass` computes with `inspect.signature` at import.)"""

    provider: Provider
    tools: ToolRegistry
    context: ContextManager
    tool_ctx: ToolContext
    policy: Policy = field(default_factory=Policy)
    on_event: Callable[[Event], None] = lambda event: None
    max_iterations: int = 200
    max_parallel: int = 1
    """How many calls of a concurrent tool (sub-agents) may run at once."""
    history: list[Message] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    tool_calls_run: int = 0
    thinking: Thinking = field(default_factory=Thinking)
    """Extended thinking / reasoning effort for the loop's requests (`/thinking` changes it)."""
    denials: DenialWatch = field(default_factory=DenialWatch)
    """Calls refused for want of an approver this turn: repeating them ends the turn (`swecli.denials`)."""
    _stop_for_denials: str = field(default="", repr=False)
    _sent: ModelRequest | None = field(default=None, repr=False)
    """The request whose answer the loop is reading (its max_tokens is what an output limit was)."""
    _readied: bool = field(default=False, repr=False)
    """The tools' `ready` hooks ran after this step's calls: the request that follows needs no second call."""
    _holding: bool = field(default=False, repr=False)
    """This loop holds the garbage collector: from a reply's end to the next request (`swecli.collector`)."""

    @property
    def cancel(self) -> CancelToken:
        return self.tool_ctx.cancel

    def run(self, task: str | UserMessage) -> TurnFinished:
        """One user turn: loop until the model answers, the limit is hit, or the user interrupts."""
        start, usage_before, calls_before = time.monotonic(), self.usage, self.tool_calls_run
        compactions_before, summaries_before = len(self.context.compactions), self.context.compaction_usage
        self.cancel.reset()
        self.denials.reset()
        self._stop_for_denials = ""
        self._readied = False  # the mode or the sandbox may have changed since the last turn
        message = task if isinstance(task, UserMessage) else UserMessage(content=task)
        self._admit(message)
        self.append(message)
        try:
            iteration, answer, reason = self._iterate()
        finally:
            self._release_collector()  # the turn is over: collect while the person reads
        compactions = self.context.compactions[compactions_before:]
        summaries = self.context.compaction_usage - summaries_before  # summary requests are the turn's spend too
        turn = TurnFinished(answer, iteration, self.usage - usage_before + summaries, time.monotonic() - start,
                            reason, tool_calls=self.tool_calls_run - calls_before, compactions=len(compactions),
                            compaction_wait=sum(c.waited for c in compactions))
        self.on_event(turn)
        return turn

    def _iterate(self) -> tuple[int, str, str]:
        """The turn's steps until one ends it: the last iteration, the answer and why it stopped."""
        for iteration in range(1, self.max_iterations + 1):
            try:
                self.step(iteration)
            except Finished as done:
                return iteration, done.answer, done.stop_reason
            except Interrupted:
                self.context.cancel_background("interrupted by the user")  # Esc stops everything under way
                return iteration, INTERRUPTED, "interrupted"
        return self.max_iterations, (f"Stopped after {self.max_iterations} iterations without a final answer "
                                     "(raise --max-iterations to let it go on)."), "iteration_limit"

    def _release_collector(self) -> None:
        if self._holding:
            self._holding = False
            COLLECTOR.release()

    def step(self, iteration: int) -> None:
        self.sync_tools()
        self.replace_history(self.context.prepare(self.history, self.provider), "compaction")
        response = self.query(iteration)
        from swecli.replies import OutputLimit, cut_call_result, read_reply  # not on the way to the first request

        self.append(response.message)
        sent = self._sent.max_tokens if self._sent is not None else self.context.max_tokens
        verdict = read_reply(response, OutputLimit(sent, self.context.max_tokens, self.context.window))
        if verdict.notice:
            self.on_event(Notice("warning", verdict.notice))
        if verdict.action == "continue":
            return  # Anthropic paused the turn: the next request lets the model go on
        if verdict.action == "finish":
            raise Finished(response.message.content, verdict.stop_reason)
        for batch in self._batches(response.message.tool_calls):
            if self.cancel.cancelled:
                self.close_open_calls()
                raise Interrupted
            if len(batch) == 1 or any(call.id in verdict.cut_calls for call in batch):
                for call in batch:
                    cut = call.id in verdict.cut_calls
                    self.append(cut_call_result(call, sent) if cut else self.execute(call))
            else:
                for message in self._execute_together(batch):
                    self.append(message)
        if self.cancel.cancelled:  # interrupted during the last call: no further model call is made or counted
            raise Interrupted
        self._ready_tools()  # the next request is built from here on: the next call's sandbox starts meanwhile
        self._readied = True
        if self._stop_for_denials:  # every call of the reply has its result: the history stays well formed
            reason, self._stop_for_denials = self._stop_for_denials, ""
            raise Finished(reason, "denied")

    def sync_tools(self) -> None:
        """Tools that joined or left since the last request (MCP servers, tool_search) reach the next one."""
        changes = self.tools.refresh()
        if changes:
            self.context.set_tools(self.tools.schemas(), changes.reason)

    def query(self, iteration: int) -> ResponseDone:
        request = self._request()
        state = self.context.last_state
        self.on_event(ModelCallStarted(iteration, state.total if state is not None else 0, self.context.window))
        try:
            return self._stream(request)
        except ContextOverflowError as overflow:
            # The provider's count beat ours (or the server's window is smaller than planned): compact now
            # and retry the same step once.
            self.context.note_overflow(overflow)
            self._admit()  # a smaller window adopted: the turn's own input may not fit it at all
            self.replace_history(self.context.compact(self.history, self.provider, trigger="overflow"), "overflow")
            try:
                return self._stream(self._request())
            except ContextOverflowError as again:
                self.context.note_overflow(again)
                raise self.context.overflow_failure(overflow, again) from None

    def _ready_tools(self) -> None:
        """Let the tools start what their next call would wait for (a sandbox, a parser) while the model
        thinks."""
        self.tools.ready(replace(self.tool_ctx, sandbox=self.policy.expected_confinement))

    def _admit(self, message: UserMessage | None = None) -> None:
        """Refuse a turn whose input (the task, and what was attached to it) cannot fit the window: compaction
        would clip it and the model would answer about text it never saw. The input leaves the history (the
        session goes on without it) and the error says both sizes and what to do."""
        if message is None and pending_input(self.history) == len(self.history):
            return  # the turn is under way: its input fitted, what grew since is compaction's to handle
        refusal = input_too_large(self.context, self.history, message)
        if refusal is not None:
            self.replace_history(self.history[:pending_input(self.history)], "refused")
            raise refusal

    def _request(self) -> ModelRequest:
        # The context engine fits a thinking budget into the reply's room (prompt + reply <= window), where
        # the wire sends one (Anthropic). An effort word (the OpenAI wire) takes no room of its own: the
        # whole room is max_tokens, and the effort goes with it as asked.
        if self.thinking.on and sends_thinking_budget(self.provider):
            return self.context.request(self.history, self.thinking)
        request = self.context.request(self.history)
        return replace(request, thinking=self.thinking) if self.thinking.on else request

    def _stream(self, request: ModelRequest) -> ResponseDone:
        start = time.monotonic()
        # A request no step readied the tools for (a turn's first): they get ready once it is out (its first
        # event: the server answered), off the path to it, and before the reply's calls run (at the latest,
        # at its `ResponseDone`).
        unready, self._readied = not self._readied, False
        self._release_collector()  # collections run once the request is out, while the model thinks
        first = True
        try:
            for event in self.provider.stream(request, self.cancel):
                if first:
                    first = False
                    COLLECTOR.resume()  # a model that answered before they ran: its reply collects
                if unready:
                    unready = False
                    self._ready_tools()
                if isinstance(event, (TextDelta, ReasoningDelta, Waiting)):
                    self.on_event(event)
                elif isinstance(event, ProviderNote):
                    self.on_event(Notice("info", event.text))
                elif isinstance(event, ResponseDone):
                    if not self._holding:  # from here to the next request, nothing stops for a collection
                        self._holding = True
                        COLLECTOR.hold()
                    self._sent = request
                    self._account(request, event, time.monotonic() - start)
                    return event
        except Cancelled as stop:
            if stop.partial is not None and (stop.partial.content or stop.partial.tool_calls):
                self.append(stop.partial)
            self.close_open_calls()
            raise Interrupted from None
        raise RuntimeError("provider stream ended without a response")  # protocol violation, a bug

    def _account(self, request: ModelRequest, done: ResponseDone, duration: float) -> None:
        self.context.observe(request, done.usage)
        # A server that reports no usage (llama.cpp) still gets real numbers: our own counts, marked.
        usage = done.usage or self.context.estimate_usage(request, done.message)
        self.usage = self.usage + usage
        self.on_event(ModelCallFinished(usage, duration, done.model or self.provider.model, done.finish_reason,
                                        reported=done.usage is not None))

    def _batches(self, calls: tuple[ToolCall, ...]) -> Iterator[list[ToolCall]]:
        """The reply's calls in order: runs of a concurrent tool together, every other call alone."""
        batch: list[ToolCall] = []
        for call in calls:
            tool = self.tools.get(call.name)
            if self.max_parallel > 1 and tool is not None and tool.concurrent and not tool.mutating:
                batch.append(call)
                continue
            if batch:
                yield batch
                batch = []
            yield [call]
        if batch:
            yield batch

    def _execute_together(self, batch: list[ToolCall]) -> list[ToolMessage]:
        """Run non-mutating concurrent calls side by side; events and results stay on this thread."""
        from concurrent.futures import ThreadPoolExecutor  # (and logging: only a run with sub-agents pays it)

        start = time.monotonic()
        for call in batch:
            self.on_event(ToolStarted(call, call.args()))
        self.tool_calls_run += len(batch)
        workers = min(self.max_parallel, len(batch))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="swecli-tool") as pool:
            futures = [pool.submit(self.tools.run, call, self.tool_ctx) for call in batch]
            results = [future.result() for future in futures]
        return [self._finish(call, result, start, True) for call, result in zip(batch, results, strict=True)]

    def execute(self, call: ToolCall) -> ToolMessage:
        tool = self.tools.get(call.name)
        start = time.monotonic()
        args = call.args()
        self.on_event(ToolStarted(call, args))
        self.tool_calls_run += 1
        approved, sandbox, escalate = True, self.tool_ctx.sandbox, self.tool_ctx.escalate
        if tool is not None and tool.mutating:
            verdict = self.policy.check(call, args, tool.mutating, self._preview(call))
            approved = verdict.allowed
            # The verdict also says how this call is confined (the sandbox for bash, or none).
            sandbox, escalate = verdict.sandbox, verdict.escalate
        # A running command's output reaches the live view as it arrives. (One copy of the context per call.)
        ctx = replace(self.tool_ctx, sandbox=sandbox, escalate=escalate,
                      on_output=lambda text: self.on_event(ToolOutput(call, text)))
        result = self.tools.run(call, ctx) if approved else ToolResult(
            verdict.message, is_error=True, summary=verdict.summary)
        return self._finish(call, result, start, approved)

    def _finish(self, call: ToolCall, result: ToolResult, start: float, approved: bool) -> ToolMessage:
        if self.cancel.cancelled:
            result = ToolResult(f"{INTERRUPTED}\n{result.content}".strip(), is_error=True, summary=INTERRUPTED,
                                meta=result.meta, full=result.full)
        self.on_event(ToolFinished(call, result, time.monotonic() - start, approved))
        if self.policy.approver is None:  # no one to ask: a model repeating refused calls gets nowhere
            self._stop_for_denials = self._stop_for_denials or self.denials.saw(call, approved)
        return ToolMessage(tool_call_id=call.id, name=call.name, content=self.context.tool_content(call, result),
                           is_error=result.is_error, images=result.images)

    def _preview(self, call: ToolCall) -> str:
        tool = self.tools.get(call.name)
        if tool is None or tool.preview is None:
            return call.arguments
        try:
            return tool.preview(tool.parse(call.arguments), self.tool_ctx)
        except ToolError as exc:
            return f"(cannot preview: {exc})"

    def append(self, message: Message) -> None:
        self.history.append(message)
        self.on_event(MessageAppended(message))

    def replace_history(self, history: list[Message], reason: str) -> None:
        if history is not self.history:
            self.context.mark_rewrite(reason)
            self.history = list(history)
            self.on_event(HistoryReplaced(tuple(self.history), reason))

    def close_open_calls(self) -> None:
        closed = close_dangling_tool_calls(self.history, INTERRUPTED)
        # Closing only appends tool results, so each new one is a plain append (transcripts stay append-only).
        for message in closed[len(self.history):] if closed[: len(self.history)] == self.history else []:
            self.append(message)
        if closed[: len(self.history)] != self.history:
            self.replace_history(closed, "interrupt")

