"""A scripted LLM server on loopback, speaking the OpenAI and Anthropic wire formats.

Tests (and benchmarks) drive swecli's real provider code over real HTTP with it:

    with ScriptedLLM([Reply(calls=[Call("read_file", {"path": "a.py"})]), Reply("done")]) as llm:
        run swecli with base_url=llm.base_url ...
        assert llm.requests[1]["messages"][-1]["role"] == "tool"

Each chat POST consumes the next step. A step is a `Reply` (streamed as SSE when the request asks
for `stream`, else one JSON body), a `Fail` (an HTTP error with a provider-shaped body, or any status
and body: an HTML proxy page), `Drop` (the connection dies mid-stream: closed, or reset), `Garbled`
(a malformed SSE line in the middle of a stream), `Silent` (the server accepts and then sends nothing),
`EmptyStream` (HTTP 200 with no events, as llama.cpp answers an oversized streamed request), `Raw`
(exact bytes with a status and content type: a recorded answer replayed in pieces), or a callable
that receives the request body and returns a step. A request with no step left is answered
500 and recorded as a failure; `assert_done()` (called on a clean exit from the `with` block) fails on
such extra calls and on unused steps.

The metadata endpoints answer like the server named by `ServerInfo.kind` (llama.cpp `/props`, vLLM
and OpenRouter `/v1/models`, Ollama `/api/ps` and `/api/show`, LM Studio `/api/v0/models`), so the
context-window probe is tested over real HTTP; `metadata_requests` records what was asked.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Wire = Literal["openai", "anthropic"]
SERVE_POLL = 0.01
"""Seconds between the serving loop's looks at `stop`'s request. socketserver's default, 0.5 s, cost every
`with ScriptedLLM` nearly half a second in `shutdown` (the wait restarts at each request, and the last one
was just answered); a look is one `select` call."""


@dataclass
class Call:
    name: str
    args: dict[str, Any] | str = field(default_factory=dict)
    """A dict is sent as JSON; a string is sent verbatim (to script malformed arguments)."""
    id: str = ""

    @property
    def arguments(self) -> str:
        return self.args if isinstance(self.args, str) else json.dumps(self.args)


@dataclass
class Reply:
    text: str = ""
    reasoning: str = ""
    calls: list[Call] = field(default_factory=list)
    usage: dict[str, int] | bool = True
    """True: estimate from the request; False: send none (llama.cpp); a dict: exactly these numbers
    (keys prompt_tokens, completion_tokens, cached_tokens, cache_creation_tokens)."""
    finish_reason: str | None = ""
    """"": the natural one (tool calls or stop); None: never sent (the stream ends with usage and
    [DONE] only, as kimi-k2 through OpenRouter does)."""
    refusal: str = ""
    """OpenAI wire: streamed as `delta.refusal` (Anthropic: send `finish_reason="refusal"` with text)."""
    thinking_signature: str = "sig"
    """Anthropic wire: the signature of the thinking block sent for `reasoning` ("" sends none)."""
    chunk: int = 7
    """Characters per streamed text fragment; small, to exercise delta assembly."""
    delay: float = 0.0
    """Seconds between streamed events (for interrupt tests)."""
    think: float = 0.0
    """Seconds between the stream's first event and the rest: a streaming API starts its response (the
    headers, Anthropic's `message_start`, OpenAI's role chunk) at once and then thinks; a callable step that
    sleeps thinks before the headers instead."""
    hold: threading.Event | None = None
    """Streamed: pause halfway until this is set (at most a minute), so a test can act while the answer is
    visibly under way and then let it finish, instead of racing a slow stream."""
    model: str = ""


@dataclass
class Fail:
    status: int
    body: dict[str, Any] | str = ""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = ""
    """Default: application/json for a dict body, text/plain for a string."""

    @staticmethod
    def html_page(status: int = 200, title: str = "502 Bad Gateway") -> Fail:
        """What nginx (or another proxy) sends when the server behind it is down, here with `status`."""
        page = (f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n<center><h1>{title}</h1></center>"
                "\r\n<hr><center>nginx/1.24.0</center>\r\n</body>\r\n</html>\r\n")
        return Fail(status, page, content_type="text/html")

    @staticmethod
    def anthropic_overloaded() -> Fail:
        return Fail(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})

    @staticmethod
    def rate_limited(retry_after: float = 0) -> Fail:
        return Fail(429, {"error": {"message": "Rate limit reached", "type": "rate_limit_error",
                                    "code": "rate_limit_exceeded"}},
                    {"Retry-After": str(retry_after)})

    @staticmethod
    def overloaded(status: int = 500) -> Fail:
        return Fail(status, {"error": {"message": "The server had an error", "type": "server_error"}})

    @staticmethod
    def context_overflow(wire: Wire = "openai", requested: int = 12018, limit: int = 8192,
                         completion: int | None = None) -> Fail:
        """The server's context-length error. With `completion` (OpenAI's and llama-cpp-python's wording), the
        sizes are split: `requested` is the prompt and the completion (max_tokens) together, and the prompt's
        size calibrates swecli's count, so give real numbers. Anthropic names the prompt alone."""
        if wire == "anthropic":
            return Fail(400, {"type": "error", "error": {
                "type": "invalid_request_error",
                "message": f"prompt is too long: {requested} tokens > {limit} maximum"}})
        split = f" ({requested - completion} in the messages, {completion} in the completion)" if completion else ""
        return Fail(400, {"error": {
            "code": "context_length_exceeded", "type": "invalid_request_error",
            "message": f"This model's maximum context length is {limit} tokens. However, you requested "
                       f"{requested} tokens{split}. Please reduce the length of the messages or completion."}})

    @staticmethod
    def unauthorized() -> Fail:
        return Fail(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                    "code": "invalid_api_key"}})


@dataclass
class Drop:
    """Send `after` SSE events of the reply, then close the connection without finishing."""

    reply: Reply = field(default_factory=lambda: Reply("partial answer that never ends"))
    after: int = 2
    reset: bool = False
    """Reset the connection (TCP RST, "connection reset by peer") instead of closing it."""


@dataclass
class Garbled:
    """Send `after` SSE events of the reply, then a malformed line, then the rest."""

    reply: Reply = field(default_factory=lambda: Reply("an answer with a broken line in it"))
    after: int = 2
    line: str = 'data: {"choices": [{"index": 0, "delta": {"content": "cut'


@dataclass
class Silent:
    """Accept the request and send nothing for `seconds` (or until the server stops), then hang up."""

    seconds: float = 60.0
    headers: bool = False
    """Send the 200 status and headers first (a proxy that answered, a model that never starts)."""
    keepalive: float = 0.0
    """With `headers`: send an SSE comment (`: keep-alive`) this often, as some proxies do, and nothing else."""


@dataclass
class EmptyStream:
    """HTTP 200 with an empty body."""


@dataclass
class Raw:
    """Exactly these bytes with this status and content type (a recorded answer, an HTML error page),
    written in pieces of `piece` bytes (sizes cycle through the tuple), each flushed on its own."""

    body: bytes
    status: int = 200
    content_type: str = "text/event-stream"
    piece: tuple[int, ...] = (65_536,)
    headers: dict[str, str] = field(default_factory=dict)


Outcome = Reply | Fail | Drop | Garbled | Silent | EmptyStream | Raw
Step = Outcome | Callable[[dict[str, Any]], Outcome]


@dataclass
class ServerInfo:
    """What the metadata endpoints say about the served model."""

    kind: Literal["plain", "llamacpp", "vllm", "ollama", "lmstudio", "openrouter"] = "plain"
    window: int = 0
    """The context the server runs the model with (llama.cpp n_ctx, vLLM max_model_len, ...)."""
    trained: int = 131_072
    """The model's own maximum (llama.cpp n_ctx_train, Ollama model_info, LM Studio max_context_length)."""
    loaded: bool = True
    """Ollama / LM Studio: the model is loaded (only then is `window` reported as its loaded size)."""
    num_ctx: int = 0
    """Ollama: `num_ctx` in the model's parameters (0: none set)."""
    supports_tools: bool | None = None
    """llama.cpp: `chat_template_caps.supports_tools` in `/props` (False: the chat template has no tools
    section, as gemma's, so the server leaves the tool schemas out of the prompt); None: no caps sent."""
    metadata_delay: float = 0.0
    """Seconds every metadata answer (`/v1/models`, `/props`, ...) waits first: a busy server on a loaded
    machine."""
    metadata_gate: threading.Event | None = None
    """When given, a metadata answer waits for it instead (at most `metadata_delay`): a server that stays busy
    until the test has seen what start-up says while it waits, with no race between two clocks."""


class ScriptedLLM:
    def __init__(self, steps: list[Step] | None = None, wire: Wire = "openai", model: str = "scripted-model",
                 strict: bool = True, info: ServerInfo | None = None, keep_alive: bool = False) -> None:
        self.steps: list[Step] = list(steps or [])
        self.wire = wire
        self.keep_alive = keep_alive
        """A whole streamed reply is sent in chunks on a connection kept open for the next request, as the real
        APIs and llama.cpp send it; otherwise (the default, what the fault steps build on) the end of the
        reply is the end of the connection, and every request opens a new one."""
        self.model = model
        self.strict = strict
        self.info = info or ServerInfo()
        self.requests: list[dict[str, Any]] = []
        self.times: list[float] = []
        """`time.monotonic()` of each chat request's arrival (to check the waits between retries)."""
        self.headers: list[dict[str, str]] = []
        self.metadata_requests: list[str] = []
        self.failures: list[str] = []
        self.connections = 0
        """Connections accepted so far."""
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> ScriptedLLM:
        handler = type("Handler", (_Handler,), {"llm": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(SERVE_POLL,), daemon=True,
                         name="scripted-llm").start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.stop()
        if exc_type is None and self.strict:
            self.assert_done()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """What a user would configure: `.../v1` for OpenAI-compatible, the host for Anthropic."""
        root = f"http://127.0.0.1:{self.port}"
        return root + "/v1" if self.wire == "openai" else root

    def add(self, *steps: Step) -> None:
        with self._lock:
            self.steps.extend(steps)

    def assert_done(self) -> None:
        problems = list(self.failures)
        if self.steps:
            problems.append(f"{len(self.steps)} scripted step(s) were never requested")
        if problems:
            raise AssertionError("scripted LLM: " + "; ".join(problems))

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> Outcome:
        with self._lock:
            self.requests.append(body)
            self.times.append(time.monotonic())
            self.headers.append(headers)
            rejected = unpaired_tool_results(body, self.wire)
            if rejected is not None:  # what the real APIs answer; no scripted step is used up
                self.failures.append(f"request #{len(self.requests)} was rejected: {rejected.body}")
                return rejected
            if not self.steps:
                self.failures.append(f"unexpected extra request #{len(self.requests)}")
                return Fail(500, {"error": {"message": "scripted server: no step left for this request",
                                            "type": "server_error"}})
            step = self.steps.pop(0)
        return step(body) if callable(step) else step


class _Handler(BaseHTTPRequestHandler):
    llm: ScriptedLLM
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: without this each answer waits ~40 ms

    def log_message(self, format: str, *args: object) -> None:
        return

    def setup(self) -> None:
        super().setup()
        with self.llm._lock:
            self.llm.connections += 1

    def _held_by_metadata_delay(self) -> bool:
        """Wait as `ServerInfo.metadata_delay` says; True when the server stopped meanwhile."""
        info = self.llm.info
        if info.metadata_gate is None:
            return self.llm._stopping.wait(info.metadata_delay)
        info.metadata_gate.wait(info.metadata_delay)
        return self.llm._stopping.is_set()

    def do_GET(self) -> None:
        path = self.path.rstrip("/")
        self.llm.metadata_requests.append(f"GET {path}")
        if self.llm.info.metadata_delay and self._held_by_metadata_delay():
            return  # the server is stopping: no answer
        answer = _metadata(self.llm, "GET", path)
        if answer is None:
            self._json(404, {"error": {"message": f"no route {self.path}"}})
        else:
            self._json(200, answer)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._json(400, {"error": {"message": "body is not JSON"}})
            return
        path = self.path.rstrip("/")
        if path.startswith("/api/"):  # Ollama's own API, not a chat request
            self.llm.metadata_requests.append(f"POST {path}")
            answer = _metadata(self.llm, "POST", path)
            self._json(200, answer) if answer is not None else self._json(404, {"error": f"no route {path}"})
            return
        step = self.llm._next(body, {k.lower(): v for k, v in self.headers.items()})
        if self.llm.info.supports_tools is False:  # the template drops them: the prompt count has no tools
            body = {k: v for k, v in body.items() if k != "tools"}
        if isinstance(step, Fail):
            self._fail(step)
        elif isinstance(step, Raw):
            self._raw(step)
        elif isinstance(step, EmptyStream):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif isinstance(step, Silent):
            self._silent(step)
        elif isinstance(step, Drop):
            self._stream(body, step.reply, limit=step.after, reset=step.reset)
        elif isinstance(step, Garbled):
            self._stream(body, step.reply, garble=(step.after, step.line))
        elif body.get("stream"):
            self._stream(body, step)
        else:
            self._json(200, _full_body(self.llm, body, step))

    def _silent(self, step: Silent) -> None:
        if step.headers:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.flush()
        until = time.monotonic() + step.seconds
        while not self.llm._stopping.wait(min(step.keepalive or step.seconds, max(0.0, until - time.monotonic()))):
            if time.monotonic() >= until:
                break
            try:
                self.wfile.write(b": keep-alive\n\n")
                self.wfile.flush()
            except OSError:
                break  # the client gave up
        self.close_connection = True

    def _fail(self, step: Fail) -> None:
        data = step.body if isinstance(step.body, str) else json.dumps(step.body)
        raw = data.encode()
        self.send_response(step.status)
        default_type = "application/json" if not isinstance(step.body, str) else "text/plain"
        self.send_header("Content-Type", step.content_type or default_type)
        for k, v in step.headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up waiting (a timeout)
            self.wfile.write(raw)

    def _raw(self, step: Raw) -> None:
        self.send_response(step.status)
        self.send_header("Content-Type", step.content_type)
        for k, v in step.headers.items():
            self.send_header(k, v)
        self.send_header("Connection", "close")  # the end of the body is the end of the connection
        self.end_headers()
        offset, turn = 0, 0
        try:
            while offset < len(step.body):
                size = max(1, step.piece[turn % len(step.piece)])
                self.wfile.write(step.body[offset:offset + size])
                self.wfile.flush()
                offset, turn = offset + size, turn + 1
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _stream(self, body: dict[str, Any], reply: Reply, limit: int | None = None, reset: bool = False,
                garble: tuple[int, str] | None = None) -> None:
        chunked = self.llm.keep_alive and limit is None and garble is None and not reset
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header(*(("Transfer-Encoding", "chunked") if chunked else ("Connection", "close")))
        self.end_headers()
        events = list(_anthropic_events(self.llm, body, reply) if self.llm.wire == "anthropic" else
                      _openai_events(self.llm, body, reply))
        half = len(events) // 2
        if chunked:
            events = [f"{len(event.encode()):x}\r\n{event}\r\n" for event in events] + ["0\r\n\r\n"]
        try:
            for n, event in enumerate(events):
                if reply.hold is not None and n == half:
                    reply.hold.wait(60)
                if limit is not None and n >= limit:
                    break
                if garble is not None and n == garble[0]:
                    self.wfile.write((garble[1] + "\n\n").encode())
                self.wfile.write(event.encode())
                self.wfile.flush()
                if reply.think and n == 0 and self.llm._stopping.wait(reply.think):
                    chunked = False  # the server stopped while it "thought": nothing more to send
                    break
                if reply.delay and n < len(events) - 1:
                    time.sleep(reply.delay)
        except (BrokenPipeError, ConnectionResetError):
            chunked = False  # the client hung up (an interrupt): nothing more to send, nor to read
        if reset:
            # SO_LINGER with a zero timeout: close() sends RST instead of FIN ("connection reset by peer").
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        self.close_connection = not chunked


# -- what the real APIs reject ----------------------------------------------------------------------

def unpaired_tool_results(body: dict[str, Any], wire: Wire) -> Fail | None:
    """The 400 the real API answers when tool calls and results do not pair up (OpenAI: a `tool` message
    must answer a call of the assistant message before it, and every call must be answered before the next
    message; Anthropic: the `tool_result` blocks of a user message answer exactly the `tool_use` blocks of
    the assistant message before it), None for a valid history. Messages as the real APIs word them."""
    messages = body.get("messages") or []
    problem = _anthropic_pairing(messages) if wire == "anthropic" else _openai_pairing(messages)
    if problem is None:
        return None
    if wire == "anthropic":
        return Fail(400, {"type": "error", "error": {"type": "invalid_request_error", "message": problem}})
    return Fail(400, {"error": {"message": problem, "type": "invalid_request_error", "param": "messages",
                                "code": None}})


def _openai_pairing(messages: list[dict[str, Any]]) -> str | None:
    waiting: list[str] = []
    for message in messages:
        if message.get("role") == "tool":
            if message.get("tool_call_id") not in waiting:
                return ("Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                        "with 'tool_calls'.")
            waiting.remove(message["tool_call_id"])
            continue
        if waiting:
            break
        waiting = [call.get("id") for call in message.get("tool_calls") or []] if message.get("role") == "assistant" \
            else []
    if waiting:
        return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(waiting)}")
    return None


def _anthropic_pairing(messages: list[dict[str, Any]]) -> str | None:
    uses: list[str] = []
    for index, message in enumerate(messages):
        content = message.get("content")
        blocks: list[dict[str, Any]] = content if isinstance(content, list) else []
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        unexpected = [r for r in results if r not in uses]
        if unexpected:
            return (f"messages.{index}.content: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{', '.join(map(str, unexpected))}. Each `tool_result` block must have a corresponding "
                    "`tool_use` block in the previous message.")
        missing = [u for u in uses if u not in results]
        if missing:
            return (f"messages.{index - 1}: `tool_use` ids were found without `tool_result` blocks immediately "
                    f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` "
                    "block in the next message.")
        uses = [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"] \
            if message.get("role") == "assistant" else []
    return None


# -- metadata endpoints ----------------------------------------------------------------------------

def _metadata(llm: ScriptedLLM, method: str, path: str) -> dict[str, Any] | None:
    """The answer of the server `llm.info.kind` at `path`, None for a route that server does not have."""
    info, model = llm.info, llm.model
    if method == "GET" and path.endswith("/models") and not path.startswith("/api/"):
        return {"object": "list", "data": [_listed_model(info, model)]}
    routes: dict[str, dict[str, Any]] = {}
    if info.kind == "llamacpp":
        props: dict[str, Any] = {"default_generation_settings": {"n_ctx": info.window, "n_predict": -1},
                                 "total_slots": 1, "model_path": f"/models/{model}.gguf"}
        if info.supports_tools is not None:  # as llama-server b6000+ reports its Jinja template's abilities
            props["chat_template_caps"] = {"supports_tools": info.supports_tools,
                                           "supports_tool_calls": info.supports_tools,
                                           "supports_system_role": True, "supports_parallel_tool_calls": False}
        routes["GET /props"] = props
    elif info.kind == "ollama":
        running = [{"name": model, "model": model, "context_length": info.window}] if info.loaded else []
        parameters = f"num_ctx                        {info.num_ctx}\nstop \"<end_of_turn>\"" if info.num_ctx \
            else 'stop "<end_of_turn>"'
        routes["GET /api/tags"] = {"models": [{"name": model, "model": model}]}
        routes["GET /api/ps"] = {"models": running}
        routes["POST /api/show"] = {"parameters": parameters, "details": {"family": "gemma3"},
                                    "model_info": {"general.architecture": "gemma3",
                                                   "gemma3.context_length": info.trained}}
    elif info.kind == "lmstudio":
        entry: dict[str, Any] = {"id": model, "object": "model", "type": "llm", "arch": "gemma3",
                                 "state": "loaded" if info.loaded else "not-loaded",
                                 "max_context_length": info.trained}
        if info.loaded:
            entry["loaded_context_length"] = info.window
        routes["GET /api/v0/models"] = {"object": "list", "data": [entry]}
    elif info.kind == "plain":
        routes["GET /api/tags"] = {"models": [{"name": model}]}
    return routes.get(f"{method} {path}")


def _listed_model(info: ServerInfo, model: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": model, "object": "model", "owned_by": "scripted"}
    if info.kind == "vllm":
        entry["max_model_len"] = info.window
    elif info.kind == "openrouter":
        entry.update(context_length=info.window, top_provider={"context_length": info.window})
    elif info.kind == "llamacpp":
        entry["meta"] = {"n_ctx_train": info.trained}  # the training context: not the window it runs
    return entry


# -- wire formats ----------------------------------------------------------------------------------

def _estimate_usage(body: dict[str, Any], reply: Reply) -> dict[str, int]:
    if isinstance(reply.usage, dict):
        return reply.usage
    sizes: list[tuple[int, int]] = []
    messages = _without_image_data(body.get("messages", []), sizes)
    prompt = len(json.dumps(messages)) + len(json.dumps(body.get("tools", [])))
    prompt += len(json.dumps(body.get("system", "")))
    out = len(reply.text) + len(reply.reasoning) + sum(len(c.arguments) + len(c.name) for c in reply.calls)
    return {"prompt_tokens": max(1, prompt // 4) + _image_tokens(body, sizes), "completion_tokens": max(1, out // 4)}


def image_sizes(body: dict[str, Any]) -> list[tuple[int, int]]:
    """(width, height) of every image in a request body, either wire, in order (for tests)."""
    sizes: list[tuple[int, int]] = []
    _without_image_data(body.get("messages", []), sizes)
    return sizes


def _without_image_data(value: Any, sizes: list[tuple[int, int]]) -> Any:
    """The body with each image's base64 replaced by "" (a real server counts an image by its pixels,
    not its bytes); the images' sizes are collected in `sizes`."""
    if isinstance(value, list):
        return [_without_image_data(v, sizes) for v in value]
    if not isinstance(value, dict):
        return value
    if value.get("type") == "image_url":
        sizes.append(_size(str(value["image_url"]["url"]).split(",", 1)[-1]))
        return {"type": "image_url", "image_url": {"url": ""}}
    if value.get("type") == "image" and isinstance(value.get("source"), dict):
        sizes.append(_size(str(value["source"].get("data", ""))))
        return {"type": "image", "source": {**value["source"], "data": ""}}
    return {k: _without_image_data(v, sizes) for k, v in value.items()}


def _size(data: str) -> tuple[int, int]:
    import base64
    import io

    from PIL import Image

    with Image.open(io.BytesIO(base64.b64decode(data))) as image:
        return image.size


def _image_tokens(body: dict[str, Any], sizes: list[tuple[int, int]]) -> int:
    from swecli.models.vision import anthropic_tokens, tile_count

    if "system" in body or body.get("anthropic_version"):  # the Anthropic wire
        return sum(anthropic_tokens(w, h) for w, h in sizes)
    return sum(85 + 170 * tile_count(w, h) for w, h in sizes)


def _pieces(text: str, size: int) -> Iterator[str]:
    for i in range(0, len(text), max(1, size)):
        yield text[i:i + size]


def _call_id(call: Call, index: int, turn: int) -> str:
    return call.id or f"call_{turn}_{index}"


def _openai_events(llm: ScriptedLLM, body: dict[str, Any], reply: Reply) -> Iterator[str]:
    turn = len(llm.requests)
    base = {"id": f"chatcmpl-{turn}", "object": "chat.completion.chunk", "created": 0,
            "model": reply.model or llm.model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return "data: " + json.dumps({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) \
            + "\n\n"

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(reply.reasoning, reply.chunk):
        yield chunk({"reasoning_content": piece})
    for piece in _pieces(reply.text, reply.chunk):
        yield chunk({"content": piece})
    for piece in _pieces(reply.refusal, reply.chunk):
        yield chunk({"refusal": piece})
    for i, call in enumerate(reply.calls):
        yield chunk({"tool_calls": [{"index": i, "id": _call_id(call, i, turn), "type": "function",
                                     "function": {"name": call.name, "arguments": ""}}]})
        for piece in _pieces(call.arguments, reply.chunk):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    if reply.finish_reason is not None:
        yield chunk({}, reply.finish_reason or ("tool_calls" if reply.calls else "stop"))
    wants_usage = (body.get("stream_options") or {}).get("include_usage")
    if reply.usage is not False and wants_usage:
        yield "data: " + json.dumps({**base, "choices": [], "usage": _openai_usage(body, reply)}) + "\n\n"
    yield "data: [DONE]\n\n"


def _openai_usage(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    u = _estimate_usage(body, reply)
    return {"prompt_tokens": u["prompt_tokens"], "completion_tokens": u["completion_tokens"],
            "total_tokens": u["prompt_tokens"] + u["completion_tokens"],
            "prompt_tokens_details": {"cached_tokens": u.get("cached_tokens", 0)}}


def _anthropic_events(llm: ScriptedLLM, body: dict[str, Any], reply: Reply) -> Iterator[str]:
    turn = len(llm.requests)
    u = _estimate_usage(body, reply) if reply.usage is not False else {}

    def event(kind: str, data: dict[str, Any]) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"

    yield event("message_start", {"message": {
        "id": f"msg_{turn}", "type": "message", "role": "assistant", "content": [], "model": reply.model or llm.model,
        "stop_reason": None, "usage": {"input_tokens": u.get("prompt_tokens", 0), "output_tokens": 1,
                                       "cache_read_input_tokens": u.get("cached_tokens", 0),
                                       "cache_creation_input_tokens": u.get("cache_creation_tokens", 0)}}})
    yield event("ping", {})
    blocks: list[tuple[dict[str, Any], str, str, str]] = []
    if reply.reasoning:
        blocks.append(({"type": "thinking", "thinking": ""}, "thinking_delta", "thinking", reply.reasoning))
    if reply.text:
        blocks.append(({"type": "text", "text": ""}, "text_delta", "text", reply.text))
    for i, call in enumerate(reply.calls):
        start = {"type": "tool_use", "id": _call_id(call, i, turn).replace("call_", "toolu_"), "name": call.name,
                 "input": {}}
        blocks.append((start, "input_json_delta", "partial_json", call.arguments))
    for index, (start, delta_type, key, text) in enumerate(blocks):
        yield event("content_block_start", {"index": index, "content_block": start})
        for piece in _pieces(text, reply.chunk):
            yield event("content_block_delta", {"index": index, "delta": {"type": delta_type, key: piece}})
        if delta_type == "thinking_delta" and reply.thinking_signature:
            yield event("content_block_delta", {"index": index, "delta": {
                "type": "signature_delta", "signature": reply.thinking_signature}})
        yield event("content_block_stop", {"index": index})
    stop = None if reply.finish_reason is None else reply.finish_reason or ("tool_use" if reply.calls else "end_turn")
    yield event("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None},
                                  "usage": {"output_tokens": u.get("completion_tokens", 0)}})
    yield event("message_stop", {})


def _full_body(llm: ScriptedLLM, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    """The non-streamed response for the same reply."""
    turn = len(llm.requests)
    if llm.wire == "anthropic":
        u = _estimate_usage(body, reply)
        content: list[dict[str, Any]] = []
        if reply.reasoning:
            content.append({"type": "thinking", "thinking": reply.reasoning, "signature": reply.thinking_signature})
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        for i, call in enumerate(reply.calls):
            content.append({"type": "tool_use", "id": _call_id(call, i, turn).replace("call_", "toolu_"),
                            "name": call.name, "input": json.loads(call.arguments or "{}")})
        return {"id": f"msg_{turn}", "type": "message", "role": "assistant", "model": reply.model or llm.model,
                "content": content, "stop_reason": reply.finish_reason or ("tool_use" if reply.calls else "end_turn"),
                "usage": {"input_tokens": u["prompt_tokens"], "output_tokens": u["completion_tokens"]}}
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.refusal:
        message["refusal"] = reply.refusal
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.calls:
        message["tool_calls"] = [{"id": _call_id(c, i, turn), "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments}}
                                 for i, c in enumerate(reply.calls)]
    result: dict[str, Any] = {
        "id": f"chatcmpl-{turn}", "object": "chat.completion", "model": reply.model or llm.model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": reply.finish_reason or ("tool_calls" if reply.calls else "stop")}]}
    if reply.usage is not False:
        result["usage"] = _openai_usage(body, reply)
    return result
