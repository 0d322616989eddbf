"""The one small protocol every provider implements, and the typed errors they raise.

A provider turns a `ModelRequest` into a stream of `StreamEvent`s ending with exactly one
`ResponseDone`. Wire formats, HTTP and retries stay inside the provider modules.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import field
from typing import Literal, Protocol

from swecli.errors import ControlFlow, SwecliError
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolSchema, Usage
from swecli.models.thinking import Thinking
from swecli.records import datarecord


@datarecord(frozen=True)
class ModelRequest:
    """Everything one model call sends, in the order the prompt cache sees it."""

    system: tuple[SystemBlock, ...]
    messages: tuple[Message, ...]
    tools: tuple[ToolSchema, ...] = ()
    max_tokens: int = 8192
    tail: str = ""
    """Small dynamic text (recitation, failure evidence) sent after the history, never cached."""
    thinking: Thinking = field(default_factory=Thinking)
    """Extended thinking / reasoning effort for this request (off unless the loop asks)."""


@datarecord(frozen=True)
class TextDelta:
    """A piece of the answer's text as it streams in."""

    kind: Literal["text_delta"] = field(default="text_delta", init=False, repr=False)
    text: str


@datarecord(frozen=True)
class ReasoningDelta:
    """A piece of the model's reasoning as it streams in (shown apart, never sent back as text)."""

    kind: Literal["reasoning_delta"] = field(default="reasoning_delta", init=False, repr=False)
    text: str


@datarecord(frozen=True)
class ToolCallStarted:
    """The model began a tool call (its arguments are still streaming)."""

    index: int
    id: str
    name: str


@datarecord(frozen=True)
class ProviderNote:
    """Something the user should read once about how the provider is being talked to (a fallback
    it switched to for the rest of the session)."""

    text: str


@datarecord(frozen=True)
class ResponseDone:
    """The whole reply, once the stream ended."""

    message: AssistantMessage
    usage: Usage | None
    """None when the server did not report usage (llama.cpp ignores `include_usage`)."""
    finish_reason: str = "stop"
    """In OpenAI's vocabulary: `stop`, `tool_calls`, `length` (cut at the output limit), plus
    `refusal` (the model declined; the message content is its explanation) and Anthropic's
    `pause_turn` (the turn is not over: send the history back as it is to let it go on)."""
    model: str = ""


@datarecord(frozen=True)
class Waiting:
    """Nothing has arrived from the server for `seconds` (sent every few seconds of silence, so a front
    end can show the wait instead of looking frozen)."""

    kind: Literal["waiting"] = field(default="waiting", init=False, repr=False)
    seconds: float
    provider: str
    limit: float
    """The silence after which the attempt fails (`Settings.request_timeout`)."""


StreamEvent = TextDelta | ReasoningDelta | ToolCallStarted | Waiting | ProviderNote | ResponseDone


@datarecord
class CancelToken:
    """Set by the UI (Esc / Ctrl-C); providers and tools check it and stop within a second."""

    _event: threading.Event = field(default_factory=threading.Event)

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def reset(self) -> None:
        self._event.clear()

    def wait(self, seconds: float) -> bool:
        return self._event.wait(seconds)


class Provider(Protocol):
    name: str
    model: str

    def stream(self, request: ModelRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        """Stream one model response. Raises `ProviderError` subclasses on failure."""
        ...

    def close(self) -> None: ...


def sends_thinking_budget(provider: Provider) -> bool:
    """Whether `provider` asks for a thinking budget on top of `max_tokens` (Anthropic's wire): only then
    does the budget take a share of the reply's room in the window. The OpenAI wire sends an effort
    word, which costs no room of its own (the reasoning comes out of max_tokens)."""
    return bool(getattr(provider, "thinking_budget_sent", False))


class ProviderError(SwecliError):
    """A provider failed in a way the user should read about. `str()` is one clear sentence."""

    attempts: int = 1
    """Requests sent before giving up (set by the retry loop)."""
    _reason: str = ""

    @property
    def reason(self) -> str:
        """The sentence without the notes the retry loop added."""
        return self._reason or str(self)

    def with_note(self, note: str, attempts: int) -> ProviderError:
        """The same error (same type and details) with `note` added to its sentence."""
        import copy

        noted = copy.copy(self)
        noted._reason = self.reason
        noted.args = (f"{self} ({note})",)
        noted.attempts = attempts
        return noted


class AuthError(ProviderError):
    pass


class RateLimitError(ProviderError):
    pass


class TransientError(ProviderError):
    """5xx, timeouts, dropped connections: retried with backoff before it reaches the loop."""


class ContextOverflowError(ProviderError):
    """The request did not fit the model's context window: the context engine compacts and retries."""

    def __init__(self, message: str, *, server_window: int | None = None, requested: int | None = None,
                 prompt_tokens: int | None = None) -> None:
        super().__init__(message)
        self.server_window = server_window
        """The window the server said it has, when its error message names it."""
        self.requested = requested
        """The request's size in the server's tokens, when its error message names it."""
        self.prompt_tokens = prompt_tokens
        """The prompt alone in the server's tokens, when the message says so (llama.cpp, llama-cpp-python,
        Anthropic, Mistral): the exact ratio of the server's count to swecli's for that request."""


class StreamingToolsUnsupported(ProviderError):
    """The server cannot stream a response when tools are offered (llama-cpp-python's
    `chatml-function-calling`): the provider asks without streaming instead."""


class Cancelled(ControlFlow):
    """The user interrupted; whatever was received so far is attached."""

    def __init__(self, partial: AssistantMessage | None = None) -> None:
        super().__init__("interrupted by user")
        self.partial = partial


def complete(provider: Provider, request: ModelRequest, cancel: CancelToken | None = None) -> ResponseDone:
    """Run one request to its end and return the final response (for summaries, /init, reflection)."""
    for event in provider.stream(request, cancel):
        if isinstance(event, ResponseDone):
            return event
    raise ProviderError(f"{provider.name} ended the response without finishing it")
