"""OpenAI Chat Completions over httpx, for OpenAI itself and every OpenAI-compatible server
(OpenRouter, Fireworks, vLLM, llama.cpp, Ollama, LM Studio).

Request mapping (kept deterministic so earlier messages are byte-identical across requests, which is
what prefix prompt caching needs):
- the system blocks are joined into one leading system message;
- an assistant message with tool calls always carries `"content": ""`, never null: llama.cpp answers
  HTTP 500 to null content with tool calls;
- our `reasoning` is never sent back: it is not part of the Chat Completions request schema, some
  servers reject it (DeepSeek answers 400 to `reasoning_content` in input messages), and the chat
  templates of open reasoning models drop earlier turns' reasoning anyway, so it would only cost tokens;
- `ModelRequest.tail` (small dynamic text) goes last as a separate user message, only when non-empty.
  Appending it to the last user/tool message instead would change that message's bytes on the next
  request, so a cached prefix would end one message earlier; as its own message it leaves every
  history message untouched and the whole history stays cacheable.

Stream deviations handled (see ../shared/README.md): no usage chunk (llama.cpp ignores
`include_usage`: `ResponseDone.usage` is None and the loop counts locally); `<think>` reasoning inside
the content; tool-call chunks without index or id; a stream cut short (`[DONE]` or EOF with no finish
reason) is retried; an empty 200 body, which is how llama.cpp answers a streamed request larger than
its context, is retried once and then reported as `ContextOverflowError`, so the context engine
compacts instead of the turn failing. A false alarm costs one compaction; a missed overflow would end
the user's turn, so the overflow reading is the more useful one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from swecli.llm.base import (
    CancelToken,
    ContextOverflowError,
    ModelRequest,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolCallStarted,
    TransientError,
)
from swecli.llm.calls import IdAllocator, PendingCall, ids_in, to_tool_calls
from swecli.llm.errors import classify_stream_error, json_object, non_stream_error
from swecli.llm.retry import Retryable
from swecli.llm.sse import SSEEvent
from swecli.llm.think import Piece, ThinkSplitter, split_bare_close
from swecli.llm.transport import Endpoint, HttpProvider
from swecli.llm.vision import sends_images
from swecli.messages import AssistantMessage, ImagePart, Message, ToolMessage, Usage, UserMessage

if TYPE_CHECKING:
    pass

EMPTY_STREAM = ("the server returned an empty stream, which llama.cpp does when the request exceeds its "
                "context")


class OpenAIProvider(HttpProvider):
    default_name = "openai"
    images: bool | None = None
    """Send images (True), their one-line stand-ins (False), or decide from the model's name (None);
    set by the factory from `images.accept`."""

    def stream(self, request: ModelRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        body = self.request_body(request)
        endpoint = Endpoint(self.name, self.key_env, f"{self.base_url}/chat/completions", self._headers())
        taken = ids_in(request.messages)

        return self._attempts(endpoint, body, lambda: OpenAIStream(self.name, taken, self.model), cancel)

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": wire_messages(request, images=sends_images(self.images, self.model)),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                               "parameters": t.parameters}}
                             for t in request.tools]
        # OpenAI's own newer models (o-series, gpt-5) refuse `max_tokens`; compatible servers know only it.
        body["max_completion_tokens" if self.name == "openai" else "max_tokens"] = request.max_tokens
        return body

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers


def wire_messages(request: ModelRequest, images: bool = True) -> list[dict[str, Any]]:
    """`images=False` (a model known not to take images) sends each image's one-line stand-in instead.

    Chat Completions tool messages carry text only, so the images a run of tool results returned
    follow it as one user message (the same place every time: the mapping stays deterministic)."""
    messages: list[dict[str, Any]] = []
    system = "\n\n".join(block.text for block in request.system if block.text)
    if system:
        messages.append({"role": "system", "content": system})
    returned: list[ImagePart] = []
    for message in request.messages:
        if returned and not isinstance(message, ToolMessage):
            messages.append(tool_images_message(returned))
            returned = []
        messages.append(wire_message(message, images))
        if images and isinstance(message, ToolMessage):
            returned.extend(message.images)
    if returned:
        messages.append(tool_images_message(returned))
    if request.tail:
        messages.append({"role": "user", "content": request.tail})
    return messages


def image_url(image: ImagePart) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{image.data}"}}


def tool_images_message(images: list[ImagePart]) -> dict[str, Any]:
    names = ", ".join(image.path for image in images)
    return {"role": "user", "content": [{"type": "text", "text": f"The image(s) returned by the tool calls above: "
                                                                 f"{names}"}, *map(image_url, images)]}


def with_stand_ins(text: str, images: tuple[ImagePart, ...]) -> str:
    return "\n".join([text, *(image.stand_in() for image in images)]) if images else text


def wire_message(message: Message, images: bool = True) -> dict[str, Any]:
    if isinstance(message, UserMessage):
        if message.images and images:
            return {"role": "user", "content": [{"type": "text", "text": message.content},
                                                *map(image_url, message.images)]}
        return {"role": "user", "content": with_stand_ins(message.content, message.images)}
    if isinstance(message, ToolMessage):
        content = message.content if images else with_stand_ins(message.content, message.images)
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
    wire: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                              for c in message.tool_calls]
    return wire


class OpenAIStream:
    """Assembles one streamed chat completion from its chunks."""

    def __init__(self, provider: str, taken_ids: set[str], model: str = "") -> None:
        self.provider = provider
        self.done = False
        self.model = model
        self._ids = IdAllocator(taken_ids)
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._think = ThinkSplitter()
        self._calls: dict[int, PendingCall] = {}
        self._finish = ""
        self._usage: Usage | None = None
        self._chunks = 0

    def handle(self, event: SSEEvent) -> list[StreamEvent]:
        data = event.data.strip()
        if not data:
            return []
        if data == "[DONE]":
            self.done = True
            return []
        try:
            chunk = json.loads(data)
        except ValueError:
            raise Retryable(TransientError(f"{self.provider} sent a malformed stream chunk: {data[:200]}")) from None
        if not isinstance(chunk, dict):
            return []
        if chunk.get("error") or event.event == "error":
            error, retry = classify_stream_error(self.provider, chunk)
            raise Retryable(error) if retry else error
        self._chunks += 1
        self.model = str(chunk.get("model") or self.model)
        if isinstance(chunk.get("usage"), dict):
            self._usage = parse_usage(chunk["usage"])
        events: list[StreamEvent] = []
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                events.extend(self._choice(choice))
        return events

    def _choice(self, choice: dict[str, Any]) -> list[StreamEvent]:
        delta = choice.get("delta") or {}
        events: list[StreamEvent] = []
        # One of the two names: servers that send both (for compatibility) send the same text twice.
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            self._reasoning.append(reasoning)
            events.append(ReasoningDelta(reasoning))
        if isinstance(delta.get("content"), str) and delta["content"]:
            events.extend(self._content(self._think.feed(delta["content"])))
        for fragment in delta.get("tool_calls") or []:
            if isinstance(fragment, dict):
                events.extend(self._tool_fragment(fragment))
        if choice.get("finish_reason"):
            self._finish = str(choice["finish_reason"])
        return events

    def _content(self, pieces: list[Piece]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for kind, text in pieces:
            if kind == "reasoning":
                self._reasoning.append(text)
                events.append(ReasoningDelta(text))
            else:
                self._text.append(text)
                events.append(TextDelta(text))
        return events

    def _tool_fragment(self, fragment: dict[str, Any]) -> list[StreamEvent]:
        index = self._index_of(fragment)
        call = self._calls.setdefault(index, PendingCall())
        for earlier, other in self._calls.items():
            if earlier < index:
                other.complete = True  # a later call began, so this one's arguments are all here
        function = fragment.get("function") or {}
        if fragment.get("id") and not call.id and not call.announced:
            call.id = str(fragment["id"])
        name = function.get("name")
        if isinstance(name, str) and name and name != call.name:
            call.name += name  # sent whole by most servers; a few stream it, and some repeat it (ignored)
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arguments.append(arguments)
        elif isinstance(arguments, dict):  # a few servers send the parsed object
            call.arguments.append(json.dumps(arguments))
        if call.name and not call.announced:
            call.id, call.announced = self._ids.assign(call.id), True
            return [ToolCallStarted(len([c for c in self._calls.values() if c.announced]) - 1, call.id, call.name)]
        return []

    def _index_of(self, fragment: dict[str, Any]) -> int:
        index = fragment.get("index")
        if isinstance(index, int):
            return index
        # No index (some servers): a new id starts a new call, anything else continues the last one.
        known = {c.id for c in self._calls.values()}
        if fragment.get("id") and fragment["id"] not in known:
            return max(self._calls, default=-1) + 1
        return max(self._calls, default=0)

    def partial(self) -> AssistantMessage:
        self._content(self._think.flush())
        calls = [self._calls[i] for i in sorted(self._calls) if self._calls[i].name]
        return AssistantMessage(content="".join(self._text), reasoning="".join(self._reasoning),
                                tool_calls=to_tool_calls(calls, self._ids, only_complete=True))

    def finish(self, stray: str) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        whole = json_object(stray) if stray and not self._chunks else None
        if whole is not None and isinstance(whole.get("choices"), list) and whole["choices"]:
            events = self._whole_answer(whole)  # the server ignored `stream` and sent one JSON answer
        if not self._finish:
            raise self._incomplete(stray)
        events.extend(self._content(self._think.flush()))
        for call in self._calls.values():
            call.complete = True
        content, reasoning = "".join(self._text), "".join(self._reasoning)
        if not self._think.saw_block and (split := split_bare_close(content)) is not None:
            reasoning = "\n".join(part for part in (reasoning, split[0]) if part)
            content = split[1]
        message = AssistantMessage(content=content, reasoning=reasoning,
                                   tool_calls=to_tool_calls([self._calls[i] for i in sorted(self._calls)], self._ids))
        return [*events, ResponseDone(message, self._usage, self._finish, self.model)]

    def _whole_answer(self, body: dict[str, Any]) -> list[StreamEvent]:
        choice = body["choices"][0] if isinstance(body["choices"][0], dict) else {}
        message = dict(choice.get("message") or {})
        calls = message.pop("tool_calls", None) or []
        message["tool_calls"] = [{**c, "index": i} for i, c in enumerate(calls) if isinstance(c, dict)]
        chunk = {"model": body.get("model"), "usage": body.get("usage"),
                 "choices": [{"index": 0, "delta": message, "finish_reason": choice.get("finish_reason") or "stop"}]}
        return self.handle(SSEEvent("message", json.dumps(chunk)))

    def _incomplete(self, stray: str) -> Exception:
        if stray:
            error, retry = non_stream_error(self.provider, stray)
            return Retryable(error) if retry else error
        if self._chunks == 0:
            return Retryable(ContextOverflowError(f"{EMPTY_STREAM} ({self.provider})"), max_retries=1)
        return Retryable(TransientError(f"the response from {self.provider} ended before it was complete "
                                        "(no finish reason)"))


def parse_usage(raw: dict[str, Any]) -> Usage:
    details = raw.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if cached is None:
        cached = raw.get("prompt_cache_hit_tokens", 0)  # DeepSeek's name for it
    return Usage(input_tokens=int(raw.get("prompt_tokens") or 0), output_tokens=int(raw.get("completion_tokens") or 0),
                 cache_read_tokens=int(cached or 0), requests=1)

