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
  history message untouched and the whole history stays cacheable;
- `tool_choice: "auto"` goes with every request that offers tools (every provider's default, but
  llama-cpp-python's function-calling chat format puts the tools into the prompt only when it is sent);
- `reasoning_effort` when thinking is on, for reasoning models (see `swecli.models.thinking`).

Stream deviations handled (real servers' recorded traffic replays in tests/llm/test_recorded.py):
no usage chunk (llama.cpp ignores `include_usage`: `ResponseDone.usage` is None and the loop counts
locally); usage of zeros (also None); Groq's usage under `x_groq`; reasoning-token counts kept;
`<think>` reasoning inside the content; Mistral's content as typed parts (`text`, `thinking`);
tool-call chunks without index or id; an OpenAI `refusal` (the finish reason becomes `refusal`);
a stream that ends with its usage chunk and `[DONE]` but no finish reason is complete (kimi-k2 through
OpenRouter), while one cut short without usage (`[DONE]` or EOF with no finish reason, as llama.cpp
does when a second request arrives) is retried.

An empty 200 body is how llama.cpp answers a streamed request larger than its context, and how
llama-cpp-python's `chatml-function-calling` answers a streamed request whose answer is a tool call.
The empty body is retried once (a one-off hiccup then goes unnoticed). If it comes again for a request
offering tools, swecli asks once without streaming: an answer with a tool call means the server cannot
stream tool calls, so requests with tools go unstreamed for the rest of the session (said once, as a
`ProviderNote`); a context-length error (with the server's numbers) or another empty body means the
request was too large. Otherwise the empty body is reported as `ContextOverflowError`, so the context
engine compacts instead of the turn failing: a false alarm costs one compaction, a missed overflow
would end the user's turn.
A server that says it cannot stream tool calls (`StreamingToolsUnsupported`) is believed at once.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any, cast

from swecli.llm.base import (
    CancelToken,
    ContextOverflowError,
    ModelRequest,
    ProviderNote,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    StreamingToolsUnsupported,
    TextDelta,
    ToolCallStarted,
    TransientError,
)
from swecli.llm.calls import IdAllocator, PendingCall, ids_in, to_tool_calls
from swecli.llm.errors import classify_stream_error, json_object, non_stream_error
from swecli.llm.retry import Retryable
from swecli.llm.sse import SSEEvent
from swecli.llm.think import Piece, ThinkSplitter, split_bare_close
from swecli.llm.transport import EncodedParts, Endpoint, HttpProvider, dumps_json
from swecli.messages import AssistantMessage, ImagePart, Message, ToolMessage, ToolSchema, Usage, UserMessage
from swecli.models.vision import sends_images

EMPTY_STREAM = ("the server returned an empty stream, which llama.cpp does when the request exceeds its "
                "context")
STREAMING_OFF = "swecli asks it without streaming from now on (answers appear whole, not word by word)"


class EmptyStream(ContextOverflowError):
    """HTTP 200 with no event at all: llama.cpp's answer to a streamed request larger than its context,
    and llama-cpp-python's to a streamed request offering tools it cannot stream."""


class OpenAIProvider(HttpProvider):
    default_name = "openai"
    stream_tools = True
    """False once the server said it cannot stream when tools are offered: such requests are then
    sent without streaming for the rest of the session."""
    images: bool | None = None
    """Send images (True), their one-line stand-ins (False), or decide from the model's name (None);
    set by the factory from `images.accept`."""

    def stream(self, request: ModelRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        probing = bool(request.tools) and self.stream_tools
        try:
            yield from self._call(request, cancel)
        except StreamingToolsUnsupported as refused:
            if not probing:
                raise
            self.stream_tools = False
            yield ProviderNote(f"{refused}; {STREAMING_OFF}")
            yield from self._call(request, cancel)
        except EmptyStream as empty:
            if not probing:
                raise
            yield from self._probe_unstreamed(request, cancel, empty.attempts)

    def _probe_unstreamed(self, request: ModelRequest, cancel: CancelToken | None,
                          sent: int) -> Iterator[StreamEvent]:
        """Empty streams (after the retry) for a request offering tools: either the server cannot stream
        tool calls, or the request is too large. Asked once without streaming, an oversized request gets
        a real context-length error (with the server's numbers), and an answer with a tool call means
        streaming was the problem: requests with tools then go unstreamed for the rest of the session."""
        self.stream_tools = False
        try:
            events = list(self._call(request, cancel, empty_is_final=True))  # unstreamed: it arrives whole
        except ContextOverflowError as overflow:
            self.stream_tools = True
            overflow.attempts += sent  # every request the user waited for
            raise
        done = events[-1]
        if isinstance(done, ResponseDone) and done.message.tool_calls:
            yield ProviderNote(f"{self.name} sent an empty stream for a request offering tools and answered it "
                               f"with a tool call without streaming, so it cannot stream tool calls; {STREAMING_OFF}")
        else:
            self.stream_tools = True  # answered without a tool call: nothing shows that streaming was the problem
        yield from events

    def _call(self, request: ModelRequest, cancel: CancelToken | None,
              empty_is_final: bool = False) -> Iterator[StreamEvent]:
        """One model call with its retries; `empty_is_final`: an empty body is raised at once, not retried."""
        body = self.encoded_body(request)
        endpoint = Endpoint(self.name, self.key_env, f"{self.base_url}/chat/completions", self._headers())
        taken = ids_in(request.messages)
        return self._attempts(endpoint, body, lambda: OpenAIStream(self.name, taken, self.model,
                                                                   empty_is_final=empty_is_final), cancel)

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        return {"model": self.model, "messages": wire_messages(request, sends_images(self.images, self.model)),
                **({"tools": wire_tools(request.tools)} if request.tools else {}), **self._settings(request)}

    def encoded_body(self, request: ModelRequest) -> bytes:
        """`request_body(request)` as the JSON sent (keys in another order), each history message encoded once
        for as long as it is sent (`EncodedParts`)."""
        images = sends_images(self.images, self.model)
        with self._encoded.request() as encoded:
            system = "\n\n".join(block.text for block in request.system if block.text)
            messages = [dumps_json({"role": "system", "content": system})] if system else []
            messages += encoded_history(request.messages, images, encoded)
            if request.tail:
                messages.append(dumps_json({"role": "user", "content": request.tail}))
            parts = [b'{"model":' + dumps_json(self.model), b'"messages":[' + b",".join(messages) + b"]"]
            if request.tools:
                tools = encoded.of(request.tools, True, functools.partial(_tools_json, request.tools))
                parts.append(b'"tools":' + tools)
        parts += [dumps_json(key) + b":" + dumps_json(value) for key, value in self._settings(request).items()]
        return b",".join(parts) + b"}"

    def _settings(self, request: ModelRequest) -> dict[str, Any]:
        """The body's fields besides the model, the messages and the tools."""
        streamed = self.stream_tools or not request.tools
        body: dict[str, Any] = {"stream": streamed}
        if streamed:
            body["stream_options"] = {"include_usage": True}
        if request.tools:
            # Every provider's default, but llama-cpp-python's function-calling chat format puts the
            # tools into the prompt only when it is sent.
            body["tool_choice"] = "auto"
        # OpenAI's own newer models (o-series, gpt-5) refuse `max_tokens`; compatible servers know only it.
        body["max_completion_tokens" if self.name == "openai" else "max_tokens"] = request.max_tokens
        effort = request.thinking.openai_effort(self.model)
        if effort:
            body["reasoning_effort"] = effort
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
    return [item if isinstance(item, dict) else wire_message(item, images) for item in wire_items(request, images)]


def wire_items(request: ModelRequest, images: bool = True) -> Iterator[Message | dict[str, Any]]:
    """The request's messages in the order they are sent: each history message as it is (`wire_message`
    maps it), and the messages made for this request (the system message, the tool images, the tail)."""
    system = "\n\n".join(block.text for block in request.system if block.text)
    if system:
        yield {"role": "system", "content": system}
    returned: list[ImagePart] = []
    for message in request.messages:
        if returned and not isinstance(message, ToolMessage):
            yield tool_images_message(returned)
            returned = []
        yield message
        if images and isinstance(message, ToolMessage):
            returned.extend(message.images)
    if returned:
        yield tool_images_message(returned)
    if request.tail:
        yield {"role": "user", "content": request.tail}


def encoded_history(history: tuple[Message, ...], images: bool, encoded: EncodedParts.Using) -> list[bytes]:
    """The history's items of `wire_items` as JSON (the tool images after a run of results included), resumed
    from the last request's when this one begins with its history (`EncodedParts.resume`)."""
    start, state = encoded.resume(history, images)
    items = list(cast("tuple[bytes, ...]", state)) if start else []
    returned: list[ImagePart] = []
    for message in history[start:]:
        if returned and not isinstance(message, ToolMessage):
            items.append(dumps_json(tool_images_message(returned)))
            returned = []
        items.append(encoded.of(message, images, functools.partial(_message_json, message, images)))
        if images and isinstance(message, ToolMessage):
            returned.extend(message.images)
    if returned:  # the run's images close the history now; the next request may put them elsewhere
        return [*items, dumps_json(tool_images_message(returned))]
    encoded.hold(history, images, tuple(items))
    return items


def _message_json(message: Message, images: bool) -> bytes:
    return dumps_json(wire_message(message, images))


def _tools_json(tools: tuple[ToolSchema, ...]) -> bytes:
    return dumps_json(wire_tools(tools))


def wire_tools(tools: tuple[ToolSchema, ...]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": t.parameters}} for t in tools]


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

    def __init__(self, provider: str, taken_ids: set[str], model: str = "", empty_is_final: bool = False) -> None:
        self.provider = provider
        self.empty_is_final = empty_is_final
        """An empty stream is raised at once, not retried (the provider asks without streaming instead)."""
        self.done = False
        self.model = model
        self._ids = IdAllocator(taken_ids)
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._think = ThinkSplitter()
        self._calls: dict[int, PendingCall] = {}
        self._refusal: list[str] = []
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
        usage = chunk.get("usage") or (chunk.get("x_groq") or {}).get("usage")  # Groq sends it under x_groq
        if isinstance(usage, dict):
            self._usage = parse_usage(usage)
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
        elif isinstance(delta.get("content"), list):
            events.extend(self._content_parts(delta["content"]))
        if isinstance(delta.get("refusal"), str) and delta["refusal"]:
            self._refusal.append(delta["refusal"])  # shown as a refusal at the end, not as the answer
        for fragment in delta.get("tool_calls") or []:
            if isinstance(fragment, dict):
                events.extend(self._tool_fragment(fragment))
        if choice.get("finish_reason"):
            self._finish = str(choice["finish_reason"])
        return events

    def _content_parts(self, parts: list[Any]) -> list[StreamEvent]:
        """Content as typed parts (Mistral): `text` parts, and `thinking` parts holding text parts."""
        pieces: list[Piece] = []
        for part in parts:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                pieces.extend(self._think.feed(part["text"]))
            elif part.get("type") == "thinking":
                inner = part.get("thinking")
                texts = [p.get("text") for p in inner if isinstance(p, dict)] if isinstance(inner, list) else [inner]
                pieces.extend(("reasoning", t) for t in texts if isinstance(t, str) and t)
        return self._content(pieces)

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
        if not self._finish and self.done and self._usage is not None:
            # `[DONE]` after the usage chunk: the whole answer was sent, only its finish reason is
            # missing (kimi-k2 through OpenRouter). Retrying would bill the same answer again.
            self._finish = "tool_calls" if self._calls else "stop"
        if not self._finish:
            raise self._incomplete(stray)
        events.extend(self._content(self._think.flush()))
        for call in self._calls.values():
            call.complete = True
        content, reasoning = "".join(self._text), "".join(self._reasoning)
        if not self._think.saw_block and (split := split_bare_close(content)) is not None:
            reasoning = "\n".join(part for part in (reasoning, split[0]) if part)
            content = split[1]
        finish = self._finish
        if self._refusal:
            content, finish = content or "".join(self._refusal), "refusal"
        message = AssistantMessage(content=content, reasoning=reasoning,
                                   tool_calls=to_tool_calls([self._calls[i] for i in sorted(self._calls)], self._ids))
        return [*events, ResponseDone(message, self._usage, finish, self.model)]

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
            empty = EmptyStream(f"{EMPTY_STREAM} ({self.provider})")
            return empty if self.empty_is_final else Retryable(empty, max_retries=1)
        return Retryable(TransientError(f"the response from {self.provider} ended before it was complete "
                                        "(no finish reason)"))


def parse_usage(raw: dict[str, Any]) -> Usage | None:
    """The usage object of a chunk or answer; None when it holds no counts (a real prompt is never
    0 tokens), so the loop counts locally instead of showing zeros."""
    details = raw.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if cached is None:
        cached = raw.get("prompt_cache_hit_tokens", 0)  # DeepSeek's name for it
    output = raw.get("completion_tokens_details") or {}
    reasoning = output.get("reasoning_tokens") if isinstance(output, dict) else None
    usage = Usage(input_tokens=int(raw.get("prompt_tokens") or 0), output_tokens=int(raw.get("completion_tokens") or 0),
                  cache_read_tokens=int(cached or 0), reasoning_tokens=int(reasoning or 0), requests=1)
    return usage if usage.total_tokens else None

