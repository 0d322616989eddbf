"""One streamed HTTP request, read so that an interrupt is noticed within a fraction of a second.

The request runs in a worker thread that hands raw byte pieces to the caller through a queue; the
caller waits on the queue in short slices and checks the `CancelToken` between them. This covers
every phase with one mechanism: connecting, a server thinking for minutes before its first byte
(llama.cpp processing a long prompt), and a silent stall mid-stream. On cancel the caller stops at
once, shuts the socket down so the server sees the disconnect and stops generating (and billing),
and leaves the worker to finish on its own.

While nothing arrives the caller also keeps time (`Pacing`): every few seconds of silence it yields a
`Waiting` event (the front ends show the wait); a silence longer than `Settings.request_timeout` fails
the attempt like a dropped connection (SSE comments, the keep-alives some proxies send while the model
is stuck, do not count as progress); and once the call's deadline (`Settings.request_deadline`) has
passed, an attempt that has received no event yet gives up, naming the setting.

`stream_sse` drives one attempt: it classifies HTTP errors, feeds bytes to the SSE parser and the
wire-format handler, and turns transport failures into `Retryable` errors.
"""

from __future__ import annotations

import contextlib
import functools
import json
import queue
import socket
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from swecli.llm.base import (
    Cancelled,
    CancelToken,
    ProviderError,
    RateLimitError,
    StreamEvent,
    TransientError,
    Waiting,
)
from swecli.llm.errors import classify_status, is_retryable_status
from swecli.llm.retry import (
    Deadline,
    Retryable,
    RetryNotice,
    RetryPolicy,
    format_seconds,
    parse_retry_after,
    retry_stream,
)
from swecli.llm.sse import SSEEvent, SSEParser
from swecli.messages import AssistantMessage
from swecli.records import datarecord

if TYPE_CHECKING:
    import ssl

    import httpx

POLL_SECONDS = 0.1
"""How often a waiting caller looks at the cancel token."""
HEARTBEAT_SECONDS = 20.0
"""How often a silent server's wait is reported (`Waiting`): often enough to show life, rarely enough
for a CI log. Shorter for short stall limits: at least four reports before an attempt is given up."""
BACKSTOP_SECONDS = 5.0
"""httpx's own read timeout trails `Pacing.stall` by this much, so the clearer message comes first."""


@datarecord(frozen=True)
class Pacing:
    """How long one attempt waits for a silent server, and how often it says so."""

    stall: float
    """Seconds without an event before the attempt fails (`Settings.request_timeout`)."""
    heartbeat: float
    deadline: Deadline | None = None

    @classmethod
    def for_timeout(cls, timeout: float, deadline: Deadline | None = None) -> Pacing:
        return cls(timeout, min(HEARTBEAT_SECONDS, max(timeout / 4, POLL_SECONDS)), deadline)


class StreamHandler(Protocol):
    """A wire format's view of one streamed response."""

    done: bool
    """True once the response is complete (`[DONE]`, `message_stop`): reading stops there."""

    def handle(self, event: SSEEvent) -> list[StreamEvent]: ...

    def finish(self, stray: str) -> list[StreamEvent]:
        """Ends with the closing `ResponseDone`; raises (often `Retryable`) when the stream was cut short.
        `stray` is the body's non-SSE text, if any."""
        ...

    def partial(self) -> AssistantMessage:
        """What arrived so far, for `Cancelled`: only complete tool calls."""
        ...


def dumps_json(value: Any) -> bytes:
    """JSON as httpx's `json=` encodes it (UTF-8: the parts are joined as bytes, with no second encoding)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


@datarecord(frozen=True)
class EncodedPrefix:
    """A wire's encoding state after the leading messages of the last request, to resume from."""

    messages: tuple[object, ...]
    variant: object
    state: object
    """The wire's own: what it had made of `messages` (immutable: later requests resume from it)."""
    entries: dict[int, tuple[object, object, bytes]]
    """The kept parts of `messages`, carried into every request that resumes (so a later request that
    cannot resume, a message replaced in the middle, still finds the ones before it)."""


class EncodedParts:
    """The JSON of each history message (and of the tool list) as last sent, kept by the object it was made
    from, for the wires, which send their bodies as encoded JSON. Messages and tool schemas are frozen, and a history
    is mostly the same message objects request after request (append-only, for the prompt cache), so a
    request encodes only what it has not sent before: httpx's `json=` encoded the whole body every time (4-8
    ms of CPU for a real 200-375-message history here, on the path of every tool call). What the last request
    did not use is dropped.

    A request that begins with the last request's leading messages (the same objects, in a C comparison of
    the two tuples) resumes from what the wire made of them (`resume`, `hold`) instead of looking each one
    up: the lookups alone were O(messages), 3-10 ms a request for a real 376-message history on this
    machine, on the loop's path between the reply and the next request."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[object, object, bytes]] = {}
        self._prefix: EncodedPrefix | None = None
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def request(self) -> Iterator[EncodedParts.Using]:
        using = EncodedParts.Using(self._kept, self._prefix)
        yield using
        with self._lock:
            self._kept = using.used
            self._prefix = using.held

    class Using:
        """One request's use of the kept parts."""

        def __init__(self, kept: dict[int, tuple[object, object, bytes]], prefix: EncodedPrefix | None) -> None:
            self.kept = kept
            self.used: dict[int, tuple[object, object, bytes]] = {}
            self.prefix = prefix
            self.held: EncodedPrefix | None = None

        def of(self, item: object, variant: object, encode: Callable[[], bytes]) -> bytes:
            """`item`'s JSON (`encode()`), from the last request when it is the very same object and `variant`
            (how it is mapped: images sent or not, thinking on or off) is the same."""
            entry = self.kept.get(id(item))
            if entry is None or entry[0] is not item or entry[1] != variant:
                entry = (item, variant, encode())
            self.used[id(item)] = entry
            return entry[2]

        def resume(self, messages: tuple[object, ...], variant: object) -> tuple[int, object]:
            """(how many of `messages` the last request's held state covers, that state), or (0, None) when
            `messages` does not begin with them or `variant` differs."""
            prefix = self.prefix
            if prefix is None or prefix.variant != variant or messages[:len(prefix.messages)] != prefix.messages:
                return 0, None
            self.used.update(prefix.entries)
            return len(prefix.messages), prefix.state

        def hold(self, messages: tuple[object, ...], variant: object, state: object) -> None:
            """Keep `state`, the wire's encoding of `messages` (the leading messages of this request, every
            one of them looked up with `of` or resumed), for the next request to resume from."""
            self.held = EncodedPrefix(messages, variant, state, dict(self.used))


@datarecord(frozen=True)
class Endpoint:
    """Where one request goes, with which headers, and the variable that holds its key (for error messages)."""

    provider: str
    key_env: str | None
    url: str
    headers: Mapping[str, str]


def make_client(timeout: float, base_url: str = "") -> httpx.Client:
    """Read/write timeouts are the stall limit; connecting gets less. A server on this machine is reached
    directly even when HTTP(S)_PROXY is set for the internet."""
    import httpx

    return httpx.Client(timeout=httpx.Timeout(timeout, connect=min(15.0, timeout)), follow_redirects=True,
                        trust_env=not is_loopback_url(base_url), **client_tls(base_url))


def needs_certificates(base_url: str) -> bool:
    """Whether a client of this server needs the certificate store before its first request: every server
    but a plain-http one on this machine (a local model, the scripted server; an empty URL is not known yet,
    so it counts as needing it)."""
    return not (base_url.startswith("http://") and is_loopback_url(base_url))


def client_tls(base_url: str) -> dict[str, Any]:
    """`httpx.Client` keyword arguments for TLS. Building the certificate store costs ~250 M instructions
    (~0.2 s of CPU), which a plain-http server on this machine never uses: its client gets a verifying
    context that trusts nothing (so that a TLS connection it was not meant to make fails closed) and
    `https://` mounted on a transport that builds the real store when a redirect first leads there.
    Loopback clients never use proxies (`trust_env` is off for them), so the mount replaces none."""
    if needs_certificates(base_url):
        return {"verify": ssl_context()}
    import ssl

    return {"verify": ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT), "mounts": {"https://": _lazy_https()}}


def _lazy_https() -> httpx.BaseTransport:
    import httpx

    class LazyHTTPS(httpx.BaseTransport):
        """httpx's own transport with the shared certificate store, built on the first https request."""

        def __init__(self) -> None:
            self._inner: httpx.HTTPTransport | None = None
            self._lock = threading.Lock()

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            with self._lock:
                if self._inner is None:
                    self._inner = httpx.HTTPTransport(verify=ssl_context())
            return self._inner.handle_request(request)

        def close(self) -> None:
            if self._inner is not None:
                self._inner.close()

    return LazyHTTPS()


_SSL_CONTEXTS: list[ssl.SSLContext] = []
_SSL_LOCK = threading.Lock()


def ssl_context() -> ssl.SSLContext:
    """One certificate store for every client of the process: loading it takes 0.2-0.5 s, which each new
    `httpx.Client` would otherwise pay (the window probe and the provider both make one at start). The
    first caller builds it (`prepare_http` starts that on a thread at start-up); a caller that comes
    while it is being built waits for it instead of building a second."""
    with _SSL_LOCK:
        if not _SSL_CONTEXTS:
            import httpx

            _SSL_CONTEXTS.append(httpx.create_ssl_context())
        return _SSL_CONTEXTS[0]


def prepare_http(base_url: Callable[[], str]) -> threading.Thread:
    """Import httpx and build `ssl_context()` on a thread, beside the session's imports: the provider's
    client needs both before the first request, and OpenSSL reads the certificate bundle (~0.2 s of CPU)
    without holding the GIL. Before, a provider whose window was cached (or set) built them on the main
    thread, in `make_provider`. `base_url` is called once httpx is in (the settings are read meanwhile):
    a plain-http server on this machine needs no store (`client_tls`). An error is left for the client's
    own call to raise."""

    def prepare() -> None:
        with contextlib.suppress(Exception):
            import httpx  # noqa: F401  (the import is the point: it holds the GIL while the settings load)

            if needs_certificates(base_url()):
                ssl_context()

    thread = threading.Thread(target=prepare, name="swecli-http", daemon=True)
    thread.start()
    return thread


def is_loopback_url(url: str) -> bool:
    import ipaddress
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def stream_sse(client: httpx.Client, endpoint: Endpoint, body: bytes, handler: StreamHandler,
               cancel: CancelToken | None, pacing: Pacing | None = None) -> Iterator[StreamEvent]:
    channel = _Channel(client, endpoint, body)
    watch = _Silence(endpoint, pacing)
    complete = False
    try:
        head = yield from channel.wait(cancel, None, watch)
        if isinstance(head, _Failed):
            raise _transport_error(endpoint, head.error)
        assert isinstance(head, _Head)
        if head.status >= 400:
            raise _http_error(endpoint, head)
        parser = SSEParser()
        while not handler.done:
            item = yield from channel.wait(cancel, handler, watch)
            if isinstance(item, _Failed):
                raise _transport_error(endpoint, item.error)
            events = parser.close() if item is _END else parser.feed(item) if isinstance(item, bytes) else []
            if events:
                watch.progress()
            else:  # bytes that are no event (keep-alive comments): time goes on as if nothing came
                yield from watch.tick()
            for event in events:
                yield from _handle(endpoint, handler, event)
                if handler.done:
                    break
            if item is _END:
                break
        closing = handler.finish(parser.stray)
        complete = True
        yield from closing
    finally:
        channel.close(complete)


def _handle(endpoint: Endpoint, handler: StreamHandler, event: SSEEvent) -> list[StreamEvent]:
    try:
        return handler.handle(event)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # a chunk of an unexpected shape
        raise Retryable(TransientError(f"{endpoint.provider} sent a stream event swecli cannot read "
                                       f"({type(exc).__name__}: {exc}): {event.data[:200]}")) from None


class _Silence:
    """Keeps time while one attempt waits: `Waiting` reports, the stall limit and the deadline."""

    def __init__(self, endpoint: Endpoint, pacing: Pacing | None) -> None:
        self.endpoint = endpoint
        self.pacing = pacing
        self.since = time.monotonic()
        self.next_report = pacing.heartbeat if pacing is not None else 0.0
        self.progressed = False

    def progress(self) -> None:
        self.since = time.monotonic()
        self.next_report = self.pacing.heartbeat if self.pacing is not None else 0.0
        self.progressed = True

    def tick(self) -> Iterator[StreamEvent]:
        pacing = self.pacing
        if pacing is None:
            return
        silent = time.monotonic() - self.since
        where = f"{self.endpoint.provider} at {self.endpoint.url}"
        if pacing.deadline is not None and not self.progressed and pacing.deadline.passed():
            raise Retryable(TransientError(f"no answer from {where} within {pacing.deadline.limit()}"),
                            max_retries=0)
        if silent >= pacing.stall:
            raise Retryable(TransientError(f"{where} sent nothing for {format_seconds(silent)}, the limit set by "
                                           "request_timeout"))
        if silent >= self.next_report:
            self.next_report += pacing.heartbeat
            yield Waiting(silent, self.endpoint.provider, pacing.stall)


# -- the worker thread and what it hands over -----------------------------------------------------

@datarecord(frozen=True)
class _Head:
    """The status line and headers of a response, handed from the worker to the caller."""

    status: int
    reason: str
    headers: dict[str, str]
    body: bytes
    """Only for error statuses: the whole (small) error body."""


@datarecord(frozen=True)
class _Failed:
    """An error raised in the worker thread, handed to the caller to raise."""

    error: Exception


_END = object()
_Item = Any  # _Head | bytes | _Failed | _END


class _Pumps:
    """Long-lived threads that run the requests' `_Channel._pump`s. Starting a thread per request made the
    caller wait for the new thread to come up (`Thread.start` waits for it to run) on every model call; an
    idle pump is woken through its queue instead. A pump whose request was cancelled finishes it on its own
    (its socket is shut down) and then waits for the next one; a request that finds every pump busy starts
    another, so there are as many as requests have been under way at once."""

    def __init__(self) -> None:
        self._idle: list[queue.SimpleQueue[Callable[[], None]]] = []
        self._lock = threading.Lock()

    def run(self, job: Callable[[], None]) -> None:
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), daemon=True, name="swecli-stream").start()
        inbox.put(job)

    def _serve(self, inbox: queue.SimpleQueue[Callable[[], None]]) -> None:
        while True:
            inbox.get()()  # the job hands its own errors to its caller (`_Channel._pump`)
            with self._lock:
                self._idle.append(inbox)


_PUMPS = _Pumps()


class _Channel:
    def __init__(self, client: httpx.Client, endpoint: Endpoint, body: bytes) -> None:
        self._items: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._quiet = threading.Event()
        self._response: httpx.Response | None = None
        _PUMPS.run(functools.partial(self._pump, client, endpoint, body))

    def wait(self, cancel: CancelToken | None, handler: StreamHandler | None,
             watch: _Silence) -> Generator[StreamEvent, None, _Item]:
        """The next item from the worker; meanwhile `Waiting` reports (and the stall and deadline checks)."""
        while True:
            if cancel is not None and cancel.cancelled:
                raise Cancelled(handler.partial() if handler is not None else None)
            try:
                return self._items.get(timeout=POLL_SECONDS)
            except queue.Empty:
                yield from watch.tick()

    def close(self, complete: bool = False) -> None:
        """After a complete response the worker reads the end of the body (a few bytes) so the connection
        goes back to the pool; otherwise it is stopped, a blocked read woken by shutting the socket down."""
        if complete:
            self._quiet.set()
            return
        self._stop.set()
        response = self._response
        if response is None:
            return
        stream = response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            # The plain-socket shutdown, also for TLS: it wakes the reader without touching SSL state.
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)

    def _pump(self, client: httpx.Client, endpoint: Endpoint, body: bytes) -> None:
        try:
            with _sent(client, _TEMPLATES.request(client, endpoint, body)) as response:
                self._response = response
                if self._stop.is_set():
                    return
                if response.status_code >= 400:
                    response.read()
                    self._items.put(_Head(response.status_code, response.reason_phrase, dict(response.headers),
                                          response.content))
                    return
                self._items.put(_Head(response.status_code, response.reason_phrase, {}, b""))
                for piece in response.iter_bytes():
                    if self._stop.is_set():
                        return
                    if not self._quiet.is_set():
                        self._items.put(piece)
            self._items.put(_END)
        except Exception as exc:  # handed to the caller, who decides; nobody may be listening any more
            if not self._stop.is_set():
                self._items.put(_Failed(exc))


@contextlib.contextmanager
def _sent(client: httpx.Client, request: httpx.Request) -> Iterator[httpx.Response]:
    """`client.stream(...)` for a request already built: sent, its response closed after use."""
    response = client.send(request, stream=True)
    try:
        yield response
    finally:
        response.close()


class RequestTemplates:
    """The `httpx.Request` of a model call, made from the last one built for the same client, URL and headers.

    `Client.build_request` merges the URL, the client's headers, cookies and query parameters and its timeout
    anew for every request (~0.3 ms of CPU here, on the path of every model call), though only the body and
    its length change from one model call to the next. A template is one `build_request` with an empty body
    (its `Content-Length` taken out); a request made from it carries its URL, its headers with the body's
    length appended last (where `build_request` puts it) and its extensions, so the bytes on the wire are
    the same (tests/llm/test_transport.py compares them). A client holding cookies (a server set one)
    builds every request with `build_request`, as before: the cookie header is the jar's business."""

    def __init__(self) -> None:
        import weakref

        self._kept: weakref.WeakKeyDictionary[httpx.Client, tuple[str, tuple[tuple[str, str], ...], httpx.Request]]
        self._kept = weakref.WeakKeyDictionary()  # a client nobody closed still goes when its provider goes
        self._lock = threading.Lock()

    def request(self, client: httpx.Client, endpoint: Endpoint, body: bytes) -> httpx.Request:
        import httpx

        headers = (*endpoint.headers.items(), ("Content-Type", "application/json"))
        if client.cookies:
            return client.build_request("POST", endpoint.url, content=body, headers=dict(headers))
        with self._lock:
            kept = self._kept.get(client)
        if kept is None or kept[0] != endpoint.url or kept[1] != headers:
            template = client.build_request("POST", endpoint.url, content=b"", headers=dict(headers))
            del template.headers["Content-Length"]
            kept = (endpoint.url, headers, template)
            with self._lock:
                self._kept[client] = kept
        template = kept[2]
        # `stream=`: the headers are complete (no second pass adding Host and the length), the body one piece.
        request = httpx.Request("POST", template.url, extensions=template.extensions, stream=httpx.ByteStream(body),
                                headers=httpx.Headers([*template.headers.raw, (b"Content-Length", b"%d" % len(body))]))
        request.read()  # as `content=` leaves it: `request.content` readable (the same bytes object, not a copy)
        return request

    def forget(self, client: httpx.Client) -> None:
        with self._lock:
            self._kept.pop(client, None)


_TEMPLATES = RequestTemplates()


def _http_error(endpoint: Endpoint, head: _Head) -> Exception:
    error = classify_status(endpoint.provider, endpoint.key_env, head.status, head.body, head.reason)
    # An overflow, a server that cannot stream tools or one that takes no tools (llama-server --no-jinja)
    # answers the same way every time: only what classify_status calls transient is retried.
    if is_retryable_status(head.status) and isinstance(error, (TransientError, RateLimitError)):
        return Retryable(error, retry_after=parse_retry_after(head.headers))
    return error


def _transport_error(endpoint: Endpoint, exc: Exception) -> Exception:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return Retryable(TransientError(f"{endpoint.provider} did not answer in time ({type(exc).__name__}) "
                                        f"at {endpoint.url}; see request_timeout"))
    if isinstance(exc, httpx.ConnectError):
        # Nothing listens there (a local server not started, a wrong port): a couple of quick retries
        # cover a restart, more would only keep the user waiting for the inevitable message.
        return Retryable(TransientError(f"cannot connect to {endpoint.provider} at {endpoint.url} ({exc}); "
                                        "is the server running and base_url right?"), max_retries=2)
    if isinstance(exc, httpx.TransportError):
        detail = str(exc) or type(exc).__name__
        return Retryable(TransientError(f"connection to {endpoint.provider} at {endpoint.url} failed: {detail}"))
    if isinstance(exc, httpx.HTTPError):
        return ProviderError(f"request to {endpoint.provider} failed: {exc}")
    return exc


class HttpProvider:
    """What the HTTP providers share: identity, API key, retry policy and one pooled client.

    Subclasses set the defaults (`default_name`, `default_base_url`, `default_key_env`) and speak
    their wire format; `key_env=""` means "the subclass's default" (None means no key variable).
    """

    default_name = ""
    default_base_url = ""
    default_key_env: str | None = None

    def __init__(  # noqa: PLR0913 (keyword-only settings of one client)
            self, *, model: str, base_url: str = "", api_key: str = "", name: str = "", key_env: str | None = "",
            timeout: float = 600.0, max_retries: int = 5, sleep: Callable[[float], None] | None = None,
            on_retry: Callable[[RetryNotice], None] | None = None, client: httpx.Client | None = None,
            deadline: float | None = None, retry_base_delay: float = 1.0) -> None:
        self.name = name or self.default_name
        self.model = model
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.key_env = self.default_key_env if key_env == "" else key_env
        self._api_key = api_key
        self.retry = RetryPolicy(max_retries=max_retries, base_delay=retry_base_delay, sleep=sleep,
                                 on_retry=on_retry)
        self.timeout = timeout
        self.deadline = deadline
        """Seconds one model call may wait for an answer to begin, retries included (None: no limit)."""
        self._client = client or make_client(timeout + BACKSTOP_SECONDS, self.base_url)
        self._encoded = EncodedParts()
        """The JSON of the history messages (and tool list) the last request sent, for the wire's `encoded_body`."""

    def _attempts(self, endpoint: Endpoint, body: bytes, handler: Callable[[], StreamHandler],
                  cancel: CancelToken | None) -> Iterator[StreamEvent]:
        """One model call: `stream_sse` attempts with a fresh `handler()` each, under the retry policy,
        the stall limit and the deadline (which starts when the caller begins reading)."""
        deadline = Deadline.after(self.deadline) if self.deadline else None
        pacing = Pacing.for_timeout(self.timeout, deadline)

        def attempt() -> Iterator[StreamEvent]:
            return stream_sse(self._client, endpoint, body, handler(), cancel, pacing)

        yield from retry_stream(attempt, self.retry, cancel, deadline)

    def close(self) -> None:
        _TEMPLATES.forget(self._client)
        self._client.close()
