"""Anthropic Messages over httpx.

Request mapping:
- system blocks become text blocks; a block marked `cache` gets `cache_control: ephemeral` (Anthropic
  allows four breakpoints per request: at most three go to the system prompt, the last is for the
  conversation), and the last content block of the history gets the conversation breakpoint, so each
  request caches everything up to its newest message and the next request reads it back;
- consecutive tool results (and any user text after them) form one user message, tool results first,
  as the API requires; consecutive assistant messages are merged the same way;
- an assistant turn is its text plus `tool_use` blocks with the parsed arguments. Arguments that are
  not a JSON object (the model wrote malformed JSON, and the tool layer told it so) are sent as
  `{"_raw_arguments": "<what it wrote>"}`, so the model can still see its mistake;
- extended thinking (`ModelRequest.thinking`) sends `thinking: {type: enabled, budget_tokens}` and
  asks for `max_tokens + budget`; each thinking block is kept with its signature (redacted ones with
  their data) and sent back first in its assistant message, as the API requires during tool use.
  Without thinking in the request, no thinking block is sent (the reasoning text never is);
- `ModelRequest.tail` is an extra text block after the conversation breakpoint (in the last user
  message, or a new one), so it is never part of the cached prefix.

Usage: Anthropic counts `input_tokens` without the cached parts, so `Usage.input_tokens` is the whole
prompt (input + cache read + cache creation), the same meaning as OpenAI's `prompt_tokens`; the
cached parts are also reported separately. Stop reasons are normalised to OpenAI's names (`stop`,
`tool_calls`, `length`) so the loop reads one vocabulary.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any, cast

from swecli.llm.base import (
    CancelToken,
    ModelRequest,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolCallStarted,
    TransientError,
)
from swecli.llm.calls import IdAllocator, PendingCall, ids_in, to_tool_calls
from swecli.llm.errors import classify_stream_error, non_stream_error
from swecli.llm.retry import Retryable
from swecli.llm.sse import SSEEvent
from swecli.llm.transport import EncodedParts, Endpoint, HttpProvider, dumps_json
from swecli.messages import (
    AssistantMessage,
    ImagePart,
    Message,
    SystemBlock,
    ThinkingBlock,
    ToolMessage,
    ToolSchema,
    Usage,
    UserMessage,
)
from swecli.models.vision import sends_images

API_VERSION = "2023-06-01"
EPHEMERAL = {"type": "ephemeral"}
MAX_SYSTEM_BREAKPOINTS = 3
STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
                "model_context_window_exceeded": "length"}
"""To OpenAI's vocabulary; `pause_turn` and `refusal` keep their names (see `ResponseDone.finish_reason`)."""


class AnthropicProvider(HttpProvider):
    default_name = "anthropic"
    thinking_budget_sent = True
    """Extended thinking asks for `max_tokens + budget`: the budget shares the reply's room in the window."""
    images: bool | None = None
    """Send images (True), their one-line stand-ins (False), or decide from the model's name (None);
    set by the factory from `images.accept`."""
    default_base_url = "https://api.anthropic.com"
    default_key_env = "ANTHROPIC_API_KEY"

    @property
    def url(self) -> str:
        # Users configure the host (like the official SDK); tolerate a base URL that already ends in /v1.
        return f"{self.base_url}/messages" if self.base_url.endswith("/v1") else f"{self.base_url}/v1/messages"

    def stream(self, request: ModelRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        body = self.encoded_body(request)
        endpoint = Endpoint(self.name, self.key_env, self.url, self._headers())
        taken = ids_in(request.messages)

        return self._attempts(endpoint, body, lambda: AnthropicStream(self.name, taken, self.model), cancel)

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        body = self._settings(request)
        body["messages"] = wire_messages(request, images=sends_images(self.images, self.model))
        if request.tools:
            body["tools"] = wire_tools(request.tools)
        return body

    def encoded_body(self, request: ModelRequest) -> bytes:
        """`request_body(request)` as the JSON sent, each history message's content blocks encoded once for as
        long as they are sent (`EncodedParts`); the last message, which carries the cache breakpoint, is
        encoded for each request."""
        parts = [dumps_json(key) + b":" + dumps_json(value) for key, value in self._settings(request).items()]
        with self._encoded.request() as encoded:
            parts.append(b'"messages":' + encoded_messages(request, sends_images(self.images, self.model), encoded))
            if request.tools:
                tools = encoded.of(request.tools, True, functools.partial(_tools_json, request.tools))
                parts.append(b'"tools":' + tools)
        return b"{" + b",".join(parts) + b"}"

    def _settings(self, request: ModelRequest) -> dict[str, Any]:
        """The body's fields besides the messages and the tools."""
        body: dict[str, Any] = {"model": self.model, "max_tokens": request.max_tokens, "stream": True}
        if request.thinking.on:
            # The budget comes on top of max_tokens, so the answer and its tool calls keep their room.
            body["max_tokens"] = request.max_tokens + request.thinking.budget
            body["thinking"] = {"type": "enabled", "budget_tokens": request.thinking.budget}
        system = wire_system(request.system)
        if system:
            body["system"] = system
        return body

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION, "Accept": "text/event-stream"}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers


def wire_system(blocks: tuple[SystemBlock, ...]) -> list[dict[str, Any]]:
    present = [b for b in blocks if b.text.strip()]  # the API rejects empty text blocks
    cached = [i for i, b in enumerate(present) if b.cache][-MAX_SYSTEM_BREAKPOINTS:]
    wire: list[dict[str, Any]] = []
    for i, block in enumerate(present):
        item: dict[str, Any] = {"type": "text", "text": block.text}
        if i in cached:
            item["cache_control"] = dict(EPHEMERAL)
        wire.append(item)
    return wire


def wire_messages(request: ModelRequest, images: bool = True) -> list[dict[str, Any]]:
    """`images=False` (a model known not to take images) sends each image's one-line stand-in instead."""
    turns: list[dict[str, Any]] = []
    for message in request.messages:
        role = "assistant" if isinstance(message, AssistantMessage) else "user"
        blocks = content_blocks(message, images, request.thinking.on)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    if turns and turns[0]["role"] == "assistant":  # the API wants the conversation to open with a user turn
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": "(conversation continues)"}]})
    if turns:
        last = turns[-1]["content"]
        last[-1] = {**last[-1], "cache_control": dict(EPHEMERAL)}
    if request.tail:
        tail = {"type": "text", "text": request.tail}
        if turns and turns[-1]["role"] == "user":
            turns[-1]["content"].append(tail)
        else:
            turns.append({"role": "user", "content": [tail]})
    return turns


def encoded_messages(request: ModelRequest, images: bool, encoded: EncodedParts.Using) -> bytes:
    """`wire_messages(request, images)` as JSON, each message's blocks from `encoded` but the last one's; the
    turns before the last message resumed from the last request's when this one begins with them
    (`EncodedParts.resume`: the same messages, so the same turns)."""
    history, thinking = request.messages, request.thinking.on
    variant, leading = (images, thinking), request.messages[:-1]
    start, state = encoded.resume(leading, variant)
    turns = _Turns(state if start else None)
    for message in leading[start:]:
        part = encoded.of(message, variant, functools.partial(_blocks_json, message, images, thinking))
        turns.add(_role(message), part)
    if leading:
        encoded.hold(leading, variant, turns.state())
    if history:  # the cache breakpoint goes on the last message's last block
        blocks = content_blocks(history[-1], images, thinking)
        blocks[-1] = {**blocks[-1], "cache_control": dict(EPHEMERAL)}
        turns.add(_role(history[-1]), dumps_json(blocks)[1:-1])
    if request.tail:
        turns.add("user", dumps_json({"type": "text", "text": request.tail}))
    encoded_turns = turns.closed + ([_turn(turns.role, turns.parts)] if turns.parts else [])
    if history and _role(history[0]) == "assistant":  # the API wants the conversation to open with a user turn
        encoded_turns.insert(0, _turn("user", [dumps_json({"type": "text", "text": "(conversation continues)"})]))
    return b"[" + b",".join(encoded_turns) + b"]"


def _role(message: Message) -> str:
    return "assistant" if isinstance(message, AssistantMessage) else "user"


def _turn(role: str, parts: list[bytes]) -> bytes:
    return b'{"role":"' + role.encode() + b'","content":[' + b",".join(parts) + b"]}"


class _Turns:
    """Messages merged into turns as they are encoded (consecutive messages of one role are one turn): the
    closed turns' JSON, and the open turn's role and message parts. `state()` is what a later request resumes
    from (`EncodedParts.hold`), immutable."""

    def __init__(self, state: object = None) -> None:
        closed, self.role, parts = cast("tuple[tuple[bytes, ...], str, tuple[bytes, ...]]", state or ((), "", ()))
        self.closed, self.parts = list(closed), list(parts)

    def add(self, role: str, part: bytes) -> None:
        if self.parts and role != self.role:
            self.closed.append(_turn(self.role, self.parts))
            self.parts = []
        self.role = role
        self.parts.append(part)

    def state(self) -> tuple[tuple[bytes, ...], str, tuple[bytes, ...]]:
        return tuple(self.closed), self.role, tuple(self.parts)


def _blocks_json(message: Message, images: bool, thinking: bool) -> bytes:
    """A message's content blocks as JSON, without the list's brackets (a turn joins several messages')."""
    return dumps_json(content_blocks(message, images, thinking))[1:-1]


def wire_tools(tools: tuple[ToolSchema, ...]) -> list[dict[str, Any]]:
    return [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools]


def _tools_json(tools: tuple[ToolSchema, ...]) -> bytes:
    return dumps_json(wire_tools(tools))


def image_block(image: ImagePart) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.data}}


def content_blocks(message: Message, images: bool = True, thinking: bool = False) -> list[dict[str, Any]]:
    """One message as content blocks; an assistant's signed thinking blocks lead (as the API wants
    them) when the request has thinking enabled."""
    if isinstance(message, UserMessage):
        text = message.content if message.content.strip() else "(empty message)"
        if message.images and images:  # images before the text that refers to them, as Anthropic advises
            return [*map(image_block, message.images), {"type": "text", "text": text}]
        return [{"type": "text", "text": "\n".join([text, *(i.stand_in() for i in message.images)])}]
    if isinstance(message, ToolMessage):
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
        if message.images and images:
            result["content"] = [{"type": "text", "text": message.content or "(image)"},
                                 *map(image_block, message.images)]
        elif message.content or message.images:
            result["content"] = "\n".join([message.content, *(i.stand_in() for i in message.images)]).strip()
        if message.is_error:
            result["is_error"] = True
        return [result]
    blocks: list[dict[str, Any]] = [thinking_block(b) for b in message.thinking] if thinking else []
    if message.content.strip():
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input(call.arguments)})
    return blocks or [{"type": "text", "text": "(no answer)"}]


def thinking_block(block: ThinkingBlock) -> dict[str, Any]:
    if block.redacted:
        return {"type": "redacted_thinking", "data": block.redacted}
    return {"type": "thinking", "thinking": block.text, "signature": block.signature}


def tool_input(arguments: str) -> dict[str, Any]:
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"_raw_arguments": arguments}


class AnthropicStream:
    """Assembles one streamed Messages response from its events."""

    def __init__(self, provider: str, taken_ids: set[str], model: str = "") -> None:
        self.provider = provider
        self.done = False
        self.model = model
        self._ids = IdAllocator(taken_ids)
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, PendingCall] = {}  # by content block index
        self._thinking: dict[int, dict[str, str]] = {}  # by content block index: text, signature, data
        self._stop_reason = ""
        self._usage: dict[str, int] = {}
        self._events = 0

    def handle(self, event: SSEEvent) -> list[StreamEvent]:
        try:
            data = json.loads(event.data) if event.data.strip() else {}
        except ValueError:
            raise Retryable(TransientError(f"{self.provider} sent a malformed event: {event.data[:200]}")) from None
        if not isinstance(data, dict):
            return []
        kind = str(data.get("type") or event.event)
        self._events += 1
        if kind == "error":
            error, retry = classify_stream_error(self.provider, data)
            raise Retryable(error) if retry else error
        if kind == "message_start":
            self._message_start(data.get("message") or {})
        elif kind == "content_block_start":
            return self._block_start(int(data.get("index", 0)), data.get("content_block") or {})
        elif kind == "content_block_delta":
            return self._delta(int(data.get("index", 0)), data.get("delta") or {})
        elif kind == "content_block_stop":
            if int(data.get("index", 0)) in self._calls:
                self._calls[int(data.get("index", 0))].complete = True
        elif kind == "message_delta":
            self._stop_reason = str((data.get("delta") or {}).get("stop_reason") or self._stop_reason)
            self._add_usage(data.get("usage"))
        elif kind == "message_stop":
            self.done = True
        return []

    def _message_start(self, message: dict[str, Any]) -> None:
        self.model = str(message.get("model") or self.model)
        self._add_usage(message.get("usage"))

    def _add_usage(self, usage: Any) -> None:
        # message_delta repeats the counts cumulatively (output_tokens, and sometimes the input ones).
        if isinstance(usage, dict):
            self._usage.update({k: int(v) for k, v in usage.items() if isinstance(v, int)})
            details = usage.get("output_tokens_details")
            if isinstance(details, dict) and isinstance(details.get("thinking_tokens"), int):
                self._usage["thinking_tokens"] = details["thinking_tokens"]

    def _block_start(self, index: int, block: dict[str, Any]) -> list[StreamEvent]:
        kind = block.get("type")
        if kind == "text":
            return self._delta(index, {"type": "text_delta", "text": block.get("text", "")})
        if kind == "thinking":
            self._thinking[index] = {"text": "", "signature": str(block.get("signature") or "")}
            return self._delta(index, {"type": "thinking_delta", "thinking": block.get("thinking", "")})
        if kind == "redacted_thinking":
            self._thinking[index] = {"data": str(block.get("data") or "")}
            return []
        if kind != "tool_use":
            return []  # server tools (web search...) run on Anthropic's side: nothing swecli runs
        call = PendingCall(name=str(block.get("name", "")))
        if block.get("input"):  # normally {} with the arguments streamed after it
            call.arguments.append(json.dumps(block["input"]))
        call.id, call.announced = self._ids.assign(str(block.get("id") or "")), True
        self._calls[index] = call
        return [ToolCallStarted(len(self._calls) - 1, call.id, call.name)]

    def _delta(self, index: int, delta: dict[str, Any]) -> list[StreamEvent]:
        kind = delta.get("type")
        if kind == "text_delta" and delta.get("text"):
            self._text.append(str(delta["text"]))
            return [TextDelta(str(delta["text"]))]
        if kind == "thinking_delta" and delta.get("thinking"):
            self._reasoning.append(str(delta["thinking"]))
            if index in self._thinking:
                self._thinking[index]["text"] += str(delta["thinking"])
            return [ReasoningDelta(str(delta["thinking"]))]
        if kind == "signature_delta" and index in self._thinking:
            self._thinking[index]["signature"] += str(delta.get("signature") or "")
        if kind == "input_json_delta" and index in self._calls:
            self._calls[index].arguments.append(str(delta.get("partial_json", "")))
        return []  # citations: not kept

    def partial(self) -> AssistantMessage:
        calls = [self._calls[i] for i in sorted(self._calls)]
        return AssistantMessage(content="".join(self._text), reasoning="".join(self._reasoning),
                                tool_calls=to_tool_calls([c for c in calls if c.complete], self._ids))

    def finish(self, stray: str) -> list[StreamEvent]:
        if not (self.done or self._stop_reason):
            raise self._incomplete(stray)
        calls = [self._calls[i] for i in sorted(self._calls)]
        message = AssistantMessage(content="".join(self._text), reasoning="".join(self._reasoning),
                                   tool_calls=to_tool_calls(calls, self._ids), thinking=self.thinking_blocks())
        finish = STOP_REASONS.get(self._stop_reason, self._stop_reason or "stop")
        return [ResponseDone(message, self.usage(), finish, self.model)]

    def thinking_blocks(self) -> tuple[ThinkingBlock, ...]:
        """The signed (or redacted) thinking blocks, in order; unsigned ones cannot be sent back."""
        blocks = (self._thinking[i] for i in sorted(self._thinking))
        return tuple(ThinkingBlock(text=b.get("text", ""), signature=b.get("signature", ""), redacted=b.get("data", ""))
                     for b in blocks if b.get("signature") or b.get("data"))

    def usage(self) -> Usage | None:
        u = self._usage
        cache_read = u.get("cache_read_input_tokens", 0)
        cache_write = u.get("cache_creation_input_tokens", 0)
        prompt = u.get("input_tokens", 0) + cache_read + cache_write
        if prompt == 0:
            return None  # not reported (a real prompt is never 0 tokens): the loop counts locally
        return Usage(input_tokens=prompt, output_tokens=u.get("output_tokens", 0), cache_read_tokens=cache_read,
                     cache_write_tokens=cache_write, reasoning_tokens=u.get("thinking_tokens", 0), requests=1)

    def _incomplete(self, stray: str) -> Exception:
        if stray:
            error, retry = non_stream_error(self.provider, stray)
            return Retryable(error) if retry else error
        what = "an empty stream" if self._events == 0 else "a stream that ended before the message was complete"
        return Retryable(TransientError(f"{self.provider} sent {what}"))
