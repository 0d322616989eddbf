"""Turn a provider's error answer (HTTP status + body, or an error event inside a stream) into one of
the typed errors of `swecli.llm.base`, with one sentence the user can act on.

Context-length errors get their own type because the context engine reacts to them (it compacts and
retries); every server words them differently, so they are recognised by code and by wording, and the
window and request size they name are kept (`overflow_numbers`).

An HTML page where an API answer belongs comes from something in between (nginx, a load balancer, a
captive portal): it is reduced to its title. A page that reports an outage ("502 Bad Gateway"), even
one sent with status 200, is a transient failure and retried like the same status would be.
"""

from __future__ import annotations

import json
import re
from typing import Any

from swecli.lazy import regex
from swecli.llm.base import (
    AuthError,
    ContextOverflowError,
    ProviderError,
    RateLimitError,
    StreamingToolsUnsupported,
    TransientError,
)
from swecli.records import datarecord

RETRYABLE_STATUSES = frozenset({408, 409, 429, 529})
"""Plus every 5xx: timeouts, lock conflicts, rate limits, overloaded."""

_OVERFLOW = regex(
    r"context_length_exceeded|context[ _-]?window|maximum context length|context length|context size|"
    r"exceed_context_size|prompt is too long|prompt too long|exceeds? (?:the )?context|context limit|"
    r"too many tokens in (?:the )?(?:prompt|input)|input is too long|request_too_large",
    re.IGNORECASE,
)
_UNSUPPORTED = r"(?:is |are )?(?:not supported|unsupported|not implemented)"
_NO_STREAMED_TOOLS = regex(
    rf"stream\w*(?: \w+){{0,3}} (?:tool|function)[\w ]{{0,20}} {_UNSUPPORTED}|"
    rf"(?:tool|function)[\w ]{{0,30}} (?:with|and|in) stream\w* {_UNSUPPORTED}",
    re.IGNORECASE,
)
"""llama-cpp-python: "Automatic streaming tool choice is not supported"; other servers word it alike."""
_NEEDS_JINJA = regex(r"\b(?:tools|tool_choice) param requires --jinja", re.IGNORECASE)
"""llama-server started with `--no-jinja` (its legacy chat templates) answers every request that offers
tools with HTTP 500 "tools param requires --jinja flag": not an outage, so it is not retried."""
NEEDS_JINJA_FIX = ("llama-server is running without Jinja chat templates (--no-jinja), which take no tools, and "
                   "every swecli request offers them: restart it without --no-jinja (--jinja is the default) and "
                   "with a chat template that supports tools (--chat-template-file FILE.jinja, e.g. one of "
                   "llama.cpp's models/templates/)")
_MAX_MESSAGE = 500

# What servers write in their context-length errors, window first, then the request's size:
# OpenAI/vLLM/OpenRouter/DeepSeek "maximum context length is 8192 tokens. However, you requested 12018",
# Anthropic "prompt is too long: 12018 tokens > 8192 maximum", llama-cpp-python "Requested tokens (5000)
# exceed context window of 4096", llama.cpp's JSON fields n_ctx / n_prompt_tokens, LM Studio "loaded with
# context length of only 4096 tokens", Mistral "Prompt contains 40000 tokens ... 32768 maximum context length".
_WINDOW = [regex(p, re.IGNORECASE) for p in (
    r"maximum context length is (\d[\d,]*)",
    r"(?:tokens|token) > (\d[\d,]*) maximum",
    r"context window of (\d[\d,]*)",
    r"context length of (?:only )?(\d[\d,]*)",
    r"\bn_ctx\W{1,4}(\d+)",
    r"(\d[\d,]*) maximum context length",
    r"context size \((\d[\d,]*) tokens\)",
)]
_REQUESTED = [regex(p, re.IGNORECASE) for p in (
    r"you requested (?:about )?(\d[\d,]*)",
    r"(\d[\d,]*) tokens > \d",
    r"requested tokens \((\d[\d,]*)\)",
    r"\bn_prompt_tokens\W{1,4}(\d+)",
    r"prompt contains (\d[\d,]*) tokens",
    r"your request has (\d[\d,]*) input tokens",
)]
_PROMPT_SIZE = [regex(r"\((\d[\d,]*) in (?:the messages|your prompt)", re.IGNORECASE), *_REQUESTED[1:]]
"""The sizes that count the prompt alone (OpenAI's and llama-cpp-python's "N in the messages", and every
size above but "you requested", which adds the completion): the server's own count of what swecli sent,
which calibrates the local count exactly."""
_HTML = regex(r"^\s*(?:<!doctype html|<html|<head|<body)|</html>|<title>", re.IGNORECASE)
_HTML_TITLE = regex(r"<(title|h1)[^>]*>(.*?)</\1>", re.IGNORECASE | re.DOTALL)
_OUTAGE = regex(r"\b5\d\d\b|bad gateway|service unavailable|gateway time-?out|temporarily unavailable|"
                     r"overloaded|origin is unreachable|web server is down", re.IGNORECASE)


@datarecord(frozen=True)
class ErrorInfo:
    """What a server's error body says, whatever its shape."""

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
    if is_html(text):
        return ErrorInfo(html_title(text))
    return ErrorInfo(_clip(" ".join(text.split())))


def is_html(text: str) -> bool:
    return bool(_HTML.search(text[:2000]))


def html_title(text: str) -> str:
    """The title (or first heading) of an HTML page as plain text; its first words when it has neither."""
    match = _HTML_TITLE.search(text)
    inner = match.group(2) if match else re.sub(r"(?is)<(script|style)[^>]*>.*?</\1>", " ", text)
    words = " ".join(re.sub(r"<[^>]+>", " ", inner).split())
    return words if len(words) <= 120 else words[:120] + "..."


def overflow_numbers(text: str) -> tuple[int | None, int | None]:
    """(the server's window, the request's size) as a context-length error names them, None where it does not."""
    return _first_number(_WINDOW, text), _first_number(_REQUESTED, text)


def _first_number(patterns: list[re.Pattern[str]], text: str) -> int | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return int(match.group(1).replace(",", ""))
    return None


def overflow_error(provider: str, message: str, raw: str) -> ContextOverflowError:
    window, requested = overflow_numbers(raw)
    said = f"{provider}: {message}" if message else provider
    return ContextOverflowError(f"the request does not fit the model's context window ({said})",
                                server_window=window, requested=requested,
                                prompt_tokens=_first_number(_PROMPT_SIZE, raw))


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
    label = f"HTTP {status}{' ' + reason if reason else ''}"
    said = f": {info.message}" if info.message and info.message not in label else ""
    if cannot_stream_tools(info):
        return StreamingToolsUnsupported(f"{provider} cannot stream answers that may call tools{said}")
    if status in (401, 403):
        env = key_env or "SWECLI_API_KEY"
        return AuthError(f"API key rejected by {provider} (set {env}); HTTP {status}{said}")
    if is_context_overflow(info, status):
        raw = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else str(body)
        return overflow_error(provider, info.message, raw)
    if _NEEDS_JINJA.search(info.message):
        return ProviderError(f"{provider} refused the request ({label}){said}: {NEEDS_JINJA_FIX}")
    if status == 429:
        return RateLimitError(f"rate limited by {provider} (HTTP 429){said}")
    if is_retryable_status(status):
        return TransientError(f"{provider} is unavailable ({label}){said}")
    hint = " (check the model name and base_url)" if status == 404 else ""
    return ProviderError(f"{provider} refused the request ({label}){said}{hint}")


def classify_stream_error(provider: str, payload: Any) -> tuple[ProviderError, bool]:
    """An error sent inside a 200 stream (an `error` event or chunk): the error and whether to retry."""
    raw = payload if isinstance(payload, (bytes, str)) else json.dumps(payload)
    info = parse_error_body(raw)
    if cannot_stream_tools(info):
        return StreamingToolsUnsupported(f"{provider} cannot stream answers that may call tools: {info.message}"), False
    if is_context_overflow(info):
        text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
        return overflow_error(provider, info.message, text), False
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
    if is_html(text):
        return html_page_error(provider, text)
    snippet = _clip(" ".join(text.split()))
    return ProviderError(f"{provider} did not answer with an event stream (check base_url): {snippet}"), False


def html_page_error(provider: str, text: str) -> tuple[ProviderError, bool]:
    """An HTML page instead of an answer: an outage page is retried, anything else points at base_url."""
    title = html_title(text)
    named = f' ("{title}")' if title else ""
    if _OUTAGE.search(title or text[:2000]):
        return TransientError(f"{provider} is unavailable: a proxy answered with an error page{named} "
                              "instead of a response"), True
    return ProviderError(f"{provider} answered with a web page{named} instead of an API response; "
                         "check base_url"), False


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
