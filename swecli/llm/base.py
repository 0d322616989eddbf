"""The one small protocol every provider implements, and the typed errors they raise.

A provider turns a `ModelRequest` into a stream of `StreamEvent`s ending with exactly one
`ResponseDone`. Wire formats, HTTP and retries stay inside the provider modules.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from swecli.llm.thinking import Thinking
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolSchema, Usage


@dataclass(frozen=True)
class ModelRequest:
    system: tuple[SystemBlock, ...]
    messages: tuple[Message, ...]
    tools: tuple[ToolSchema, ...] = ()
    max_tokens: int = 8192
    tail: str = ""
    """Small dynamic text (recitation, failure evidence) sent after the history, never cached."""
    thinking: Thinking = field(default_factory=Thinking)
    """Extended thinking / reasoning effort for this request (off unless the loop asks)."""


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True)
class ToolCallStarted:
    """The model began a tool call (its arguments are still streaming)."""

    index: int
    id: str
    name: str


@dataclass(frozen=True)
class ProviderNote:
    """Something the user should read once about how the provider is being talked to (a fallback
    it switched to for the rest of the session)."""

    text: str


@dataclass(frozen=True)
class ResponseDone:
    message: AssistantMessage
    usage: Usage | None
    """None when the server did not report usage (llama.cpp ignores `include_usage`)."""
    finish_reason: str = "stop"
    """In OpenAI's vocabulary: `stop`, `tool_calls`, `length` (cut at the output limit), plus
    `refusal` (the model declined; the message content is its explanation) and Anthropic's
    `pause_turn` (the turn is not over: send the history back as it is to let it go on)."""
    model: str = ""


StreamEvent = TextDelta | ReasoningDelta | ToolCallStarted | ProviderNote | ResponseDone


@dataclass
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


class ProviderError(Exception):
    """A provider failed in a way the user should read about. `str()` is one clear sentence."""


class AuthError(ProviderError):
    pass


class RateLimitError(ProviderError):
    pass


class TransientError(ProviderError):
    """5xx, timeouts, dropped connections: retried with backoff before it reaches the loop."""


class ContextOverflowError(ProviderError):
    """The request did not fit the model's context window: the context engine compacts and retries."""


class StreamingToolsUnsupported(ProviderError):
    """The server cannot stream a response when tools are offered (llama-cpp-python's
    `chatml-function-calling`): the provider asks without streaming instead."""


class Cancelled(Exception):
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
