"""Turn a provider's error answer (HTTP status + body, or an error event inside a stream) into one of
the typed errors of `swecli.llm.base`, with one sentence the user can act on.

Context-length errors get their own type because the context engine reacts to them (it compacts and
retries); every server words them differently, so they are recognised by code and by wording.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from swecli.llm.base import (
    AuthError,
    ContextOverflowError,
    ProviderError,
    RateLimitError,
    StreamingToolsUnsupported,
    TransientError,
)

RETRYABLE_STATUSES = frozenset({408, 409, 429, 529})
"""Plus every 5xx: timeouts, lock conflicts, rate limits, overloaded."""

_OVERFLOW = re.compile(
    r"context_length_exceeded|context[ _-]?window|maximum context length|context length|context size|"
    r"exceed_context_size|prompt is too long|prompt too long|exceeds? (?:the )?context|context limit|"
    r"too many tokens in (?:the )?(?:prompt|input)|input is too long|request_too_large",
    re.IGNORECASE,
)
_UNSUPPORTED = r"(?:is |are )?(?:not supported|unsupported|not implemented)"
_NO_STREAMED_TOOLS = re.compile(
    rf"stream\w*(?: \w+){{0,3}} (?:tool|function)[\w ]{{0,20}} {_UNSUPPORTED}|"
    rf"(?:tool|function)[\w ]{{0,30}} (?:with|and|in) stream\w* {_UNSUPPORTED}",
    re.IGNORECASE,
)
"""llama-cpp-python: "Automatic streaming tool choice is not supported"; other servers word it alike."""
_MAX_MESSAGE = 500


@dataclass(frozen=True)
class ErrorInfo:
    message: str
    code: str = ""
    type: str = ""


def parse_error_body(body: bytes | str | Any) -> ErrorInfo:
    """The message, code and type of an error body in any of the shapes servers use."""
    data = _as_json(body)
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, str):  # {"error": "message"} (Ollama, some proxies)
            return ErrorInfo(_clip(error), str(data.get("code") or ""), str(data.get("type") or ""))
        if isinstance(error, dict):
            message = error.get("message") or error.get("msg") or error.get("detail") or data.get("message") or ""
            if not message:
                message = json.dumps(error)
            return ErrorInfo(_clip(str(message)), str(error.get("code") or ""), str(error.get("type") or ""))
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else str(body)
    return ErrorInfo(_clip(" ".join(text.split())))


def is_context_overflow(info: ErrorInfo, status: int = 400) -> bool:
    if status in (401, 403, 429):  # "tokens per minute" limits mention tokens too; they are not overflows
        return False
    if status == 413:  # request too large: compacting is the fix here as well
        return True
    return bool(_OVERFLOW.search(" ".join((info.code, info.type, info.message))))


def cannot_stream_tools(info: ErrorInfo) -> bool:
    return bool(_NO_STREAMED_TOOLS.search(info.message))


def classify_status(provider: str, key_env: str | None, status: int, body: bytes | str,
                    reason: str = "") -> ProviderError:
    """The typed error for an HTTP error answer."""
    info = parse_error_body(body)
    said = f": {info.message}" if info.message else ""
    if cannot_stream_tools(info):
        return StreamingToolsUnsupported(f"{provider} cannot stream answers that may call tools{said}")
    if status in (401, 403):
        env = key_env or "SWECLI_API_KEY"
        return AuthError(f"API key rejected by {provider} (set {env}); HTTP {status}{said}")
    if is_context_overflow(info, status):
        return ContextOverflowError(f"the request does not fit the model's context window ({provider}{said})")
    if status == 429:
        return RateLimitError(f"rate limited by {provider} (HTTP 429){said}")
    label = f"HTTP {status}{' ' + reason if reason else ''}"
    if is_retryable_status(status):
        return TransientError(f"{provider} is unavailable ({label}){said}")
    hint = " (check the model name and base_url)" if status == 404 else ""
    return ProviderError(f"{provider} refused the request ({label}){said}{hint}")


def classify_stream_error(provider: str, payload: Any) -> tuple[ProviderError, bool]:
    """An error sent inside a 200 stream (an `error` event or chunk): the error and whether to retry."""
    info = parse_error_body(payload if isinstance(payload, (bytes, str)) else json.dumps(payload))
    if cannot_stream_tools(info):
        return StreamingToolsUnsupported(f"{provider} cannot stream answers that may call tools: {info.message}"), False
    if is_context_overflow(info):
        return ContextOverflowError(f"the request does not fit the model's context window ({provider}: "
                                    f"{info.message})"), False
    kind = f"{info.type} {info.code}".lower()
    if "rate_limit" in kind or "429" in kind:
        return RateLimitError(f"rate limited by {provider}: {info.message}"), True
    server_side = info.code.isdigit() and is_retryable_status(int(info.code))
    if server_side or any(word in kind for word in ("overloaded", "server_error", "api_error", "timeout",
                                                    "unavailable")):
        return TransientError(f"{provider} failed mid-response: {info.message}"), True
    if "auth" in kind or "permission" in kind:
        return AuthError(f"API key rejected by {provider}: {info.message}"), False
    return ProviderError(f"{provider} sent an error: {info.message}"), False


def non_stream_error(provider: str, text: str) -> tuple[ProviderError, bool]:
    """A 200 answer that was not an event stream: an error body, or something else entirely."""
    data = _as_json(text)
    if isinstance(data, dict) and data.get("error"):
        return classify_stream_error(provider, data)
    snippet = _clip(" ".join(text.split()))
    return ProviderError(f"{provider} did not answer with an event stream (check base_url): {snippet}"), False


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUSES or 500 <= status <= 599


def json_object(text: str) -> dict[str, Any] | None:
    data = _as_json(text)
    return data if isinstance(data, dict) else None


def _as_json(body: bytes | str | Any) -> Any:
    if not isinstance(body, (bytes, str)):
        return body
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "..."
