"""Every recorded provider interaction in ../shared/recorded, replayed through the providers over HTTP.

The corpus holds 280 real answers (OpenAI, Anthropic, OpenRouter, Groq, Mistral, xAI, Ollama,
DeepSeek, Hugging Face...; see ../shared/README.md). Each body is served byte for byte with its
recorded status and content type, once in small pieces (1 to 61 bytes, each flushed) and once in
large ones, to the real provider code; what it parses is compared with what a small reference
reader in this file takes from the same bytes: text, reasoning, tool calls (name and parsed
arguments), usage (input, output, cached, reasoning) and the stop reason, or the typed error of an error body.

The reference reader is deliberately naive and separate from the code under test: it splits the
body on blank lines, joins `data:` lines, and reads the JSON fields the wire formats document.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from swecli.llm.anthropic import AnthropicProvider
from swecli.llm.base import (
    AuthError,
    ContextOverflowError,
    ModelRequest,
    ProviderError,
    RateLimitError,
    ResponseDone,
    TransientError,
)
from swecli.llm.openai import OpenAIProvider
from swecli.messages import UserMessage
from swecli.testing.server import Raw, ScriptedLLM

CORPUS = "shared/recorded/fixtures.jsonl.gz"
SMALL = (1, 2, 3, 5, 8, 13, 21, 34, 61)
LARGE = (65_536,)


def corpus_path() -> Path | None:
    """../shared/recorded beside the checkout (a worktree may sit deeper: look up every parent)."""
    for folder in Path(__file__).resolve().parents:
        candidate = folder / CORPUS
        if candidate.is_file():
            return candidate
    return None


def load() -> list[dict[str, Any]]:
    path = corpus_path()
    if path is None:
        return []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


FIXTURES = load()
pytestmark = pytest.mark.skipif(not FIXTURES, reason=f"the recorded corpus ../{CORPUS} is not beside this checkout")


# -- the reference reader -------------------------------------------------------------------------

@dataclass
class Expected:
    text: str = ""
    reasoning: str = ""
    calls: list[tuple[str, Any]] = field(default_factory=list)
    usage: tuple[int, int, int, int] | None = None
    """input, output, cached, reasoning"""
    stop: str = ""
    error: type[Exception] | None = None
    error_text: str = ""


def data_payloads(body: bytes) -> Iterator[tuple[str, str]]:
    """(event name, data) of each SSE event: blank-line separated blocks, `data:` lines joined."""
    text = body.decode("utf-8")
    for block in re.split(r"\r\n\r\n|\n\n|\r\r", text.replace("\r\n", "\n")):
        name, data = "", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if data:
            yield name, "\n".join(data)


def error_type(status: int, error: dict[str, Any]) -> type[Exception]:
    """The typed error an error answer means, from its status, type and wording."""
    kind = f"{error.get('type', '')} {error.get('code', '')}".lower()
    message = str(error.get("message", "")).lower()
    if status in (401, 403) or "auth" in kind:
        return AuthError
    if status == 429 or "rate_limit" in kind:
        return RateLimitError
    if "context" in message or "prompt is too long" in message:
        return ContextOverflowError
    if status >= 500 or "overloaded" in kind:
        return TransientError
    return ProviderError


def expect_error(status: int, payload: dict[str, Any]) -> Expected:
    error = payload.get("error", payload)
    error = error if isinstance(error, dict) else {"message": str(error)}
    return Expected(error=error_type(status, error), error_text=str(error.get("message", ""))[:60])


@dataclass
class _OpenAIStream:
    """What the chunks of an OpenAI-style stream add up to, read independently of the provider."""

    out: Expected = field(default_factory=Expected)
    content: str = ""
    refusal: str = ""
    calls: dict[int, list[str]] = field(default_factory=dict)
    seen: list[Any] = field(default_factory=list)

    def delta(self, delta: dict[str, Any]) -> None:
        parts = delta.get("content") or ""
        if isinstance(parts, list):  # Mistral: typed parts, its reasoning as `thinking` parts
            for part in parts:
                if part["type"] == "text":
                    self.content += part["text"]
                elif part["type"] == "thinking":
                    self.out.reasoning += "".join(p.get("text", "") for p in part["thinking"])
        else:
            self.content += parts
        self.refusal += delta.get("refusal") or ""
        self.out.reasoning += delta.get("reasoning_content") or delta.get("reasoning") or ""
        for call in delta.get("tool_calls") or []:
            if "index" not in call:  # Mistral, Ollama: whole calls, each with its own id
                self.seen.append(call.get("id"))
            name_args = self.calls.setdefault(call.get("index", len(set(self.seen)) - 1), ["", ""])
            function = call.get("function") or {}
            name_args[0] += function.get("name") or ""
            name_args[1] += function.get("arguments") or ""


def expect_openai(body: bytes) -> Expected:
    stream = _OpenAIStream()
    out = stream.out
    usage: dict[str, Any] | None = None
    done = False
    for _, data in data_payloads(body):
        if data.strip() == "[DONE]":
            done = True
            break
        chunk = json.loads(data)
        if chunk.get("error"):
            return expect_error(200, chunk)
        usage = chunk.get("usage") or (chunk.get("x_groq") or {}).get("usage") or usage
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) == 0:
                stream.delta(choice.get("delta") or {})
                out.stop = choice.get("finish_reason") or out.stop
    out.text, out.reasoning = split_think(stream.content, out.reasoning)
    out.calls = [(name, json.loads(args or "{}")) for name, args in (stream.calls[i] for i in sorted(stream.calls))]
    if usage and (usage.get("prompt_tokens") or usage.get("completion_tokens")):
        details = usage.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens") or usage.get("prompt_cache_hit_tokens") or 0
        reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
        out.usage = (usage["prompt_tokens"], usage["completion_tokens"], cached, reasoning)
    if not out.stop and done and usage:
        out.stop = "tool_calls" if stream.calls else "stop"  # a complete stream that never named its finish reason
    if stream.refusal:
        out.text, out.stop = out.text or stream.refusal, "refusal"
    return out


def split_think(content: str, reasoning: str) -> tuple[str, str]:
    """Open models put their reasoning inline: `<think>...</think>` at the start of the content."""
    match = re.match(r"\s*<think>(.*?)</think>\s*(.*)", content, re.DOTALL)
    if not match:
        return content, reasoning
    return match.group(2), reasoning + match.group(1)


ANTHROPIC_STOPS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def expect_anthropic(body: bytes) -> Expected:
    out = Expected()
    blocks: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] = {}
    for _, data in data_payloads(body):
        event = json.loads(data)
        kind = event.get("type")
        if kind == "error":
            return expect_error(200, event)
        if kind == "message_start":
            usage.update(event["message"].get("usage") or {})
        elif kind == "content_block_start":
            block = event["content_block"]
            blocks[event["index"]] = {"type": block["type"], "name": block.get("name", ""),
                                      "text": block.get("text") or block.get("thinking") or "", "json": ""}
        elif kind == "content_block_delta":
            delta, block = event["delta"], blocks[event["index"]]
            block["text"] += delta.get("text") or delta.get("thinking") or ""
            block["json"] += delta.get("partial_json") or ""
        elif kind == "message_delta":
            out.stop = event["delta"].get("stop_reason") or out.stop
            usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
    ordered = [blocks[i] for i in sorted(blocks)]
    out.text = "".join(b["text"] for b in ordered if b["type"] == "text")
    out.reasoning = "".join(b["text"] for b in ordered if b["type"] == "thinking")
    out.calls = [(b["name"], json.loads(b["json"] or "{}")) for b in ordered if b["type"] == "tool_use"]
    cached = usage.get("cache_read_input_tokens") or 0
    prompt = (usage.get("input_tokens") or 0) + cached + (usage.get("cache_creation_input_tokens") or 0)
    thinking = (usage.get("output_tokens_details") or {}).get("thinking_tokens") or 0
    out.usage = (prompt, usage.get("output_tokens") or 0, cached, thinking) if prompt else None
    out.stop = ANTHROPIC_STOPS.get(out.stop, out.stop)
    return out


def expected(record: dict[str, Any], body: bytes) -> Expected:
    """What the reference reader takes from `body`, read once per record (each is replayed twice)."""
    key = (record["id"], body)
    if key not in _EXPECTED:
        _EXPECTED[key] = _read(record, body)
    return _EXPECTED[key]


_EXPECTED: dict[tuple[str, bytes], Expected] = {}


def _read(record: dict[str, Any], body: bytes) -> Expected:
    if record["status"] != 200:
        return expect_error(record["status"], json.loads(body))
    return expect_anthropic(body) if record["wire"] == "anthropic" else expect_openai(body)


# -- replaying through the providers ---------------------------------------------------------------

@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedLLM]:
    with ScriptedLLM(strict=False) as llm:
        yield llm


def content_type(record: dict[str, Any]) -> str:
    headers = {k.lower(): v for k, v in record["headers"].items()}
    value = headers.get("content-type", "application/json")
    return str(value[0] if isinstance(value, list) else value)


def replay(server: ScriptedLLM, record: dict[str, Any], body: bytes, piece: tuple[int, ...]) -> ResponseDone:
    server.add(Raw(body, record["status"], content_type(record), piece))
    provider_type = AnthropicProvider if record["wire"] == "anthropic" else OpenAIProvider
    model = str((record.get("request") or {}).get("model") or "recorded")
    # base_url ends in /v1: the Anthropic provider then posts to /v1/messages, the OpenAI one to /v1/chat/...
    provider = provider_type(model=model, base_url=server.base_url, api_key="k", max_retries=0)
    try:
        request = ModelRequest(system=(), messages=(UserMessage(content="replay"),))
        events = list(provider.stream(request))
    finally:
        provider.close()
    done = events[-1]
    assert isinstance(done, ResponseDone)
    return done


@pytest.mark.parametrize("piece", [SMALL, LARGE], ids=["small-pieces", "large-pieces"])
@pytest.mark.parametrize("record", FIXTURES, ids=[r["id"] for r in FIXTURES])
def test_recorded_answer_parses_exactly(server: ScriptedLLM, record: dict[str, Any], piece: tuple[int, ...]) -> None:
    body = base64.b64decode(record["body_b64"])
    want = expected(record, body)
    if want.error is not None:
        with pytest.raises(ProviderError) as caught:
            replay(server, record, body, piece)
        assert type(caught.value) is want.error, str(caught.value)
        assert want.error_text in str(caught.value)
        return
    done = replay(server, record, body, piece)
    message = done.message
    assert message.content == want.text
    assert message.reasoning == want.reasoning
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == want.calls
    u = done.usage
    got = (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.reasoning_tokens) if u else None
    assert got == want.usage
    assert done.finish_reason == want.stop


def test_the_corpus_covers_what_it_should() -> None:
    """280 interactions on both wires; a corpus that lost its tool calls, reasoning, cached or reasoning
    token counts or error bodies would test less without failing anything above."""
    wants = [expected(r, base64.b64decode(r["body_b64"])) for r in FIXTURES]
    assert len(FIXTURES) == 280 and {r["wire"] for r in FIXTURES} == {"openai", "anthropic"}
    assert sum(bool(w.calls) for w in wants) >= 100 and sum(bool(w.reasoning) for w in wants) >= 10
    assert sum(bool(w.usage and w.usage[2]) for w in wants) >= 3 and sum(bool(w.usage and w.usage[3]) for w in wants)
    assert {w.error for w in wants} >= {AuthError, RateLimitError, ProviderError}
    assert {w.stop for w in wants} >= {"stop", "tool_calls", "length", "pause_turn"}
