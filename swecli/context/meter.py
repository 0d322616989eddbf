"""The meter: what the next request carries, counted and calibrated, against the window.

It holds what changes together when a request is measured: the fixed parts every request sends (system
prompt, session memory, tool schemas), the ledger of the history (running token totals, kept in
O(appended)), the dynamic tail of the latest request, the token counter and its calibration against the
provider's own numbers, and the window with its levels (`ContextBudget`). Compaction asks it for sizes and
budgets; it never rewrites the history itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from swecli.config import ContextConfig
from swecli.context.budget import Calibration, ContextBudget, ContextState, keep_recent_for, provider_prompt_tokens
from swecli.context.ledger import Ledger
from swecli.context.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING, TokenCounter, encoding_for_model
from swecli.llm.base import ModelRequest
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolSchema, Usage
from swecli.models.presets import DEFAULT_CONTEXT_WINDOW
from swecli.models.thinking import MIN_BUDGET, Thinking
from swecli.records import datarecord


@datarecord(frozen=True)
class Prompt:
    """The parts every request sends besides the history: the stable prefix."""

    system: tuple[SystemBlock, ...]
    tools: tuple[ToolSchema, ...] = ()
    memory: tuple[SystemBlock, ...] = ()
    """Session-stable memory (OPENCLI.md, playbook): sent after `system`, never compacted."""


@datarecord(frozen=True)
class Limits:
    """The model the engine plans for and the size of its replies."""

    window: int = DEFAULT_CONTEXT_WINDOW
    """The model's context window in provider tokens (`Settings.context_window`)."""
    max_tokens: int = 8192
    model: str = ""
    """Picks the tiktoken encoding (cl100k_base for GPT-4/3.5, o200k_base otherwise)."""
    window_source: str = "default for unknown models"
    """Where `window` came from (`Settings.window_source`), for /context."""


def counter_for(model: str) -> TokenCounter:
    """The token counter for `model`: its tokenizer family's encoding and its image formula."""
    return TokenCounter(encoding_for_model(model), image_tokens=image_formula(model))


def image_formula(model: str) -> Callable[[int, int], int]:
    """The model's image cost (`swecli.models.vision.image_tokens`) as the counter takes it."""
    from swecli.models.vision import image_tokens

    return lambda width, height: image_tokens(model, width, height)


class Meter:
    def __init__(self, prompt: Prompt, limits: Limits, config: ContextConfig, counter: TokenCounter) -> None:
        self.system, self.tools, self.memory = prompt.system, prompt.tools, prompt.memory
        self.window, self.window_source = limits.window, limits.window_source
        self.max_tokens, self.model = limits.max_tokens, limits.model
        self.config = config
        self.counter = counter
        self.calibration = Calibration()
        self.ledger = Ledger(counter.message)
        self.thinking_budget = 0
        """The extended-thinking budget of the latest request: part of the reply reserve (a wire that asks for
        it sends max_tokens + budget)."""
        self.tail: tuple[str, int] = ("", 0)
        """The latest dynamic tail and its local tokens."""
        self.last_request: ModelRequest | None = None
        self.last_request_tokens = 0
        self.last_request_generation = counter.generation
        self._counted_generation = counter.generation
        self._fixed: tuple[tuple[object, ...], tuple[int, int, int]] | None = None
        """(what the fixed parts' counts were made from, (system, tools, memory)): asked for several times
        a turn, they change only with the session's prompt, tools or tokenizer."""
        self._budget: tuple[tuple[object, ...], ContextBudget] | None = None
        self._held: tuple[Sequence[Message], int] | None = None
        """(the loop's history during one of its calls (`hold`), not changed in place until the call ends;
        the ledger's generation once it was synced to it: another list synced since restarted the ledger)."""

    # --- the window ---------------------------------------------------------------------------------

    @property
    def budget(self) -> ContextBudget:
        """The window's levels (the same object while the window, the reply size and the thresholds are)."""
        config = self.config
        key = (self.window, self.max_tokens, self.thinking_budget, config.threshold, config.warning_threshold)
        if self._budget is None or self._budget[0] != key:
            budget = ContextBudget(window=self.window, threshold=config.threshold,
                                   max_tokens=self.max_tokens + self.thinking_budget, warning=config.warning_level)
            self._budget = (key, budget)
        return self._budget[1]

    @property
    def keep_recent_tokens(self) -> int:
        """Recent history compaction keeps verbatim, in provider tokens (`budget.keep_recent_for`)."""
        return keep_recent_for(self.window, self.config.keep_recent_tokens)

    def use_model(self, model: str) -> bool:
        """Another model: the calibration starts over (it described the old model's tokenizer), and a new
        counter is made when its tokenizer family differs. True when the counter changed."""
        if model == self.model:
            return False
        self.model = model
        self.calibration = Calibration()
        changed = encoding_for_model(model) != self.counter.encoding_name
        if changed:
            self.counter = TokenCounter(encoding_for_model(model), self.counter.include_reasoning)
            self.ledger = Ledger(self.counter.message)
        self.counter.image_tokens = image_formula(model)
        return changed

    # --- sizes ---------------------------------------------------------------------------------------

    def sync(self, history: Sequence[Message]) -> Ledger:
        self.settle()
        held, ledger = self._held, self.ledger
        if held is not None and history is held[0] and held[1] == ledger.generation and len(history) == len(ledger):
            return ledger  # checked when the call began, and nothing changes it in place meanwhile
        return ledger.sync(history)

    def hold(self, history: Sequence[Message] | None) -> None:
        """`history` is the loop's, for one of its calls (`ContextManager.prepare`, `request`), and nothing
        changes it in place until `hold(None)`: it is checked once, and synced again as that very list at the
        same length it skips the check that it still extends the ledger (a comparison per message, several
        times a call), unless another list (a decayed or compacted history, checked as always) was synced since."""
        self._held = None
        if history is not None:
            self._held = (history, self.sync(history).generation)

    def settle(self) -> None:
        """Counts made while the vocabulary was still loading (`TokenCounter.generation` 0) were estimates:
        once it is in, the ledger and the tail are counted again (once per session)."""
        if self._counted_generation != self.counter.generation:
            self._counted_generation = self.counter.generation
            self.ledger.sync(())  # forgets every count it held; the next sync counts again
            self.tail = ("", 0)

    def state(self, history: Sequence[Message], tail: str | None = None) -> ContextState:
        """What the next request would send, by component (calibrated). `tail` is the request's dynamic
        tail; None counts the latest one built."""
        count = self.counter
        ledger = self.sync(history)
        turn = ledger.turn_start() if not turn_finished(history) else len(history)
        system, tools, memory = self.fixed_parts()
        raw = {
            "system": system,
            "tools": tools,
            "memory": memory,
            "history": ledger.tokens(0, turn),
            "current_turn": ledger.tokens(turn) + REPLY_PRIMING,
            "tail": self.tail[1] if tail is None or tail == self.tail[0] else tail_tokens(count, tail),
        }
        scale = self.calibration.apply
        return ContextState(
            budget=self.budget, **{k: scale(v) for k, v in raw.items()}, raw_total=sum(raw.values()),
            ratio=self.calibration.ratio, calibrated=self.calibration.samples > 0, exact=count.exact,
            encoding=count.encoding_in_use, messages=len(history),
        )

    def prompt_tokens(self, history: Sequence[Message]) -> int:
        """The fixed parts and the history, calibrated (the tail left out)."""
        return self.calibration.apply(self.fixed_tokens() + self.sync(history).tokens())

    def fill(self, history: Sequence[Message]) -> float:
        """The share of the window the history and the fixed parts take (the tail left out)."""
        return self.prompt_tokens(history) / self.window if self.window else 0.0

    def fixed_tokens(self) -> int:
        """Local tokens every request sends besides history and tail: system, memory, tool schemas."""
        return sum(self.fixed_parts()) + REPLY_PRIMING

    def fixed_parts(self) -> tuple[int, int, int]:
        """Local tokens of the system prompt, the tool schemas and the session memory, counted again only
        when one of them, the counter or its generation changed."""
        count = self.counter
        key = (self.system, self.tools, self.memory, count, count.generation, count.tools_in_prompt)
        if self._fixed is None or self._fixed[0] != key:  # the same objects: compared by identity, in C
            parts = (count.system(self.system), count.tools(self.tools), count.system(self.memory))
            self._fixed = (key, parts)
        return self._fixed[1]

    def set_tail(self, tail: str) -> None:
        if tail != self.tail[0]:
            self.tail = (tail, tail_tokens(self.counter, tail))

    def request_tokens(self, history: Sequence[Message], tail: str) -> int:
        """`TokenCounter.request` of the request for `history`, from the ledger."""
        ledger = self.sync(history)  # first: settling the counts forgets the tail's
        tail_count = self.tail[1] if tail == self.tail[0] else tail_tokens(self.counter, tail)
        return self.fixed_tokens() + ledger.tokens() + tail_count

    # --- requests and what the provider said of them -------------------------------------------------

    def request(self, history: list[Message], tail: str, thinking: Thinking | None) -> ModelRequest:
        """The request for `history`: the reply reserve (max_tokens, plus the thinking budget when
        extended thinking is on), shrunk when needed so that the prompt and everything the reply may
        use fit the window together."""
        local = self.request_tokens(history, tail)
        self.thinking_budget = thinking.budget if thinking is not None else 0
        room = self.budget.reply_tokens(self.calibration.apply(local))
        think, max_tokens = split_reply(room, thinking or Thinking(), self.max_tokens)
        request = ModelRequest(system=self.system + self.memory, messages=tuple(history), tools=self.tools,
                               max_tokens=max_tokens, tail=tail, thinking=think)
        self.last_request, self.last_request_tokens = request, local
        self.last_request_generation = self.counter.generation
        return request

    def observe(self, request: ModelRequest, usage: Usage | None) -> None:
        """Fold the provider's prompt count for `request` into the calibration."""
        if usage is None or self.counter.generation == 0:
            return  # no usage (llama.cpp): local counts stand; or ours are still provisional estimates
        same = request is self.last_request and self.last_request_generation == self.counter.generation
        local = self.last_request_tokens if same else self.counter.request(request)
        self.calibration.observe(provider_prompt_tokens(usage), local)

    def estimate_usage(self, request: ModelRequest, reply: AssistantMessage) -> Usage:
        """Local counts for a response whose server reported no usage: the prompt as the meter counts
        it (calibrated), the output from the reply's text, reasoning and tool calls."""
        count = self.counter.text
        output = count(reply.content) + count(reply.reasoning)
        output += sum(count(call.name) + count(call.arguments) for call in reply.tool_calls)
        return Usage(input_tokens=self.calibration.apply(self.counter.request(request)), output_tokens=output,
                     requests=1, estimated_requests=1)

    def learn_from_overflow(self) -> None:
        """The provider rejected the last request, so its prompt was larger than window - max_tokens:
        a proven lower bound for the calibration ratio."""
        request = self.last_request
        if request is None:
            return
        local = self.counter.request(request)
        room = self.window - request.max_tokens - request.thinking.budget
        if local > 0 and room > 0:
            self.calibration.at_least(room / local)

    def learn_prompt_size(self, server_tokens: int) -> None:
        """The server named the rejected prompt's size in its own tokens (llama.cpp, llama-cpp-python,
        Anthropic, Mistral): its ratio to our count holds for what is sent next (a summary request
        included), even when no response ever reports usage (llama-cpp-python)."""
        if self.last_request is None:
            return
        local = self.counter.request(self.last_request)
        if local > 0:
            self.calibration.at_least(server_tokens / local)


def split_reply(room: int, thinking: Thinking, max_tokens: int) -> tuple[Thinking, int]:
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


def tail_tokens(counter: TokenCounter, tail: str) -> int:
    """As `TokenCounter.request` counts a tail: one more message."""
    return MESSAGE_OVERHEAD + counter.text(tail) if tail else 0


def turn_finished(history: Sequence[Message]) -> bool:
    """The model answered without tool calls: between tasks, everything so far is history."""
    return bool(history) and isinstance(history[-1], AssistantMessage) and not history[-1].tool_calls
