"""Providers: one small protocol (`base.Provider`) and its implementations over httpx. They know only
messages, models and config (the layer contract says so).

    base.py        the provider protocol, requests, stream events and the typed errors providers raise
    factory.py     the provider for resolved settings
    discovery.py   a provider when none is configured, and the model a local server serves
    window.py      the context window a server actually runs, asked of the server
    openai.py      OpenAI Chat Completions, for OpenAI and every OpenAI-compatible server
    anthropic.py   Anthropic Messages
    transport.py   one streamed HTTP request, interruptible within a fraction of a second
    sse.py         incremental Server-Sent Events parser
    retry.py       retries with backoff and jitter, honouring `Retry-After`
    errors.py      a provider's error answer turned into one typed error with one sentence
    calls.py       tool calls as they stream in, and their ids
    arguments.py   almost-JSON tool arguments repaired where the meaning is unambiguous
    think.py       `<think>` blocks moved out of streamed content into reasoning

Internal (used only inside the package, may change without notice): `anthropic`, `arguments`, `calls`,
`errors`, `openai`, `sse`, `think`, `transport`.

What other packages may use is re-exported here (`from swecli.llm import ...`); each name is imported from its
module the first time it is used, so importing the package costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from swecli.lazy import exports

if TYPE_CHECKING:
    from swecli.llm.base import AuthError as AuthError
    from swecli.llm.base import Cancelled as Cancelled
    from swecli.llm.base import CancelToken as CancelToken
    from swecli.llm.base import ContextOverflowError as ContextOverflowError
    from swecli.llm.base import ModelRequest as ModelRequest
    from swecli.llm.base import Provider as Provider
    from swecli.llm.base import ProviderError as ProviderError
    from swecli.llm.base import RateLimitError as RateLimitError
    from swecli.llm.base import ReasoningDelta as ReasoningDelta
    from swecli.llm.base import ResponseDone as ResponseDone
    from swecli.llm.base import StreamEvent as StreamEvent
    from swecli.llm.base import TextDelta as TextDelta
    from swecli.llm.base import Waiting as Waiting
    from swecli.llm.base import complete as complete
    from swecli.llm.discovery import discover as discover
    from swecli.llm.factory import make_provider as make_provider
    from swecli.llm.retry import RetryNotice as RetryNotice
    from swecli.llm.retry import format_seconds as format_seconds
    from swecli.llm.window import resolve_window as resolve_window

_EXPORTS = {
    "AuthError": "base",
    "CancelToken": "base",
    "Cancelled": "base",
    "ContextOverflowError": "base",
    "ModelRequest": "base",
    "Provider": "base",
    "ProviderError": "base",
    "RateLimitError": "base",
    "ReasoningDelta": "base",
    "ResponseDone": "base",
    "RetryNotice": "retry",
    "StreamEvent": "base",
    "TextDelta": "base",
    "Waiting": "base",
    "complete": "base",
    "discover": "discovery",
    "format_seconds": "retry",
    "make_provider": "factory",
    "resolve_window": "window",
}
__all__ = sorted(_EXPORTS)
__getattr__ = exports(__name__, _EXPORTS)
