"""The wait for a silent server, over real HTTP: `Waiting` reports, the stall limit, the deadline."""

from __future__ import annotations

import contextlib
import random

import pytest

from swecli.llm.anthropic import AnthropicProvider
from swecli.llm.base import ModelRequest, ProviderError, ResponseDone, StreamEvent, TransientError, Waiting
from swecli.llm.openai import OpenAIProvider
from swecli.llm.retry import RetryNotice
from swecli.llm.transport import HEARTBEAT_SECONDS, HttpProvider, Pacing
from swecli.messages import Message, UserMessage
from swecli.testing.server import Reply, ScriptedLLM, Silent, Wire

REQUEST = ModelRequest(system=(), messages=(UserMessage(content="hi"),))


def provider(llm: ScriptedLLM, wire: Wire, notices: list[RetryNotice] | None = None, **extra: float) -> HttpProvider:
    cls = OpenAIProvider if wire == "openai" else AnthropicProvider
    return cls(model="m", base_url=llm.base_url, api_key="k", sleep=lambda s: None,
               on_retry=(notices if notices is not None else []).append, **extra)  # type: ignore[arg-type]


def collect(p: HttpProvider) -> list[StreamEvent]:
    try:
        return list(p.stream(REQUEST))
    finally:
        p.close()


def test_heartbeat_is_a_fraction_of_the_stall_limit() -> None:
    assert Pacing.for_timeout(600).heartbeat == HEARTBEAT_SECONDS == 20
    assert Pacing.for_timeout(60).heartbeat == 15
    assert Pacing.for_timeout(1).heartbeat == 0.25


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_slow_start_is_reported_while_it_lasts(wire: Wire) -> None:
    with ScriptedLLM([Silent(0.6), Reply("at last")], wire=wire) as llm:
        events = collect(provider(llm, wire, timeout=2.0))
    waits = [e for e in events if isinstance(e, Waiting)]
    assert waits and all(w.provider == wire and w.limit == 2.0 for w in waits)
    assert [w.seconds for w in waits] == sorted(w.seconds for w in waits)
    assert isinstance(events[-1], ResponseDone) and events[-1].message.content == "at last"


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_silence_past_the_stall_limit_fails_the_attempt_and_names_the_setting(wire: Wire) -> None:
    notices: list[RetryNotice] = []
    with ScriptedLLM([Silent(30, headers=True), Reply("second try")], wire=wire) as llm:
        events = collect(provider(llm, wire, notices, timeout=0.5))
    assert isinstance(events[-1], ResponseDone) and events[-1].message.content == "second try"
    assert len(notices) == 1 and "sent nothing for" in str(notices[0].error)
    assert "the limit set by request_timeout" in str(notices[0].error)


def test_keep_alive_comments_are_not_progress() -> None:
    """A proxy that sends `: keep-alive` while the model is stuck is still a silent server."""
    notices: list[RetryNotice] = []
    with ScriptedLLM([Silent(30, headers=True, keepalive=0.03), Reply("unstuck")]) as llm:
        events = collect(provider(llm, "openai", notices, timeout=0.6))
    assert len(notices) == 1 and "sent nothing for" in str(notices[0].error)
    assert any(isinstance(e, Waiting) for e in events)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_the_deadline_ends_a_wait_that_has_not_begun(wire: Wire) -> None:
    with ScriptedLLM([Silent(30)], wire=wire) as llm:
        with pytest.raises(TransientError, match=r"no answer from .* within the 0\.5s limit set by "
                                                 r"request_deadline; raise it"):
            collect(provider(llm, wire, timeout=60, deadline=0.5))
        assert len(llm.requests) == 1


def test_the_deadline_stops_further_retries() -> None:
    notices: list[RetryNotice] = []
    with ScriptedLLM([Silent(30), Silent(30), Silent(30)], strict=False) as llm:
        with pytest.raises(TransientError) as failure:
            collect(provider(llm, "openai", notices, timeout=0.3, deadline=0.5))
        requests = len(llm.requests)
    assert requests == len(notices) + 1 < 3 and failure.value.attempts == requests
    assert "request_deadline" in str(failure.value)


def test_a_streaming_answer_is_not_cut_by_the_deadline() -> None:
    """The deadline bounds the wait for an answer to begin, not a long answer in progress."""
    with ScriptedLLM([Reply("a long answer streaming slowly", chunk=3, delay=0.05)]) as llm:
        events = collect(provider(llm, "openai", timeout=5, deadline=0.2))
    assert isinstance(events[-1], ResponseDone) and events[-1].message.content == "a long answer streaming slowly"


def test_threads_that_ask_for_the_certificate_store_together_share_one() -> None:
    import threading

    from swecli.llm import transport

    saved = list(transport._SSL_CONTEXTS)
    transport._SSL_CONTEXTS.clear()  # as at start-up: nobody has built it yet
    try:
        got: list[object] = []
        askers = [threading.Thread(target=lambda: got.append(transport.ssl_context())) for _ in range(4)]
        prepared = transport.prepare_http(lambda: "https://api.example.com/v1")
        for asker in askers:
            asker.start()
        for thread in [prepared, *askers]:
            thread.join(60)
        assert len(got) == 4 and all(context is got[0] for context in got)  # built once, not once per caller
        assert transport.ssl_context() is got[0]
    finally:
        transport._SSL_CONTEXTS[:] = saved or transport._SSL_CONTEXTS


def test_a_plain_http_server_on_this_machine_costs_no_certificate_store() -> None:
    """The store is ~0.2 s of CPU that a local model's (or the scripted server's) client never uses; a redirect
    to https still goes through a verifying transport, which builds the store the first time it is used."""
    import socket
    import ssl

    import httpx

    from swecli.llm import transport

    saved = list(transport._SSL_CONTEXTS)
    transport._SSL_CONTEXTS.clear()
    try:
        with ScriptedLLM([Reply("hello")]) as llm:
            assert [e.message.content for e in collect(provider(llm, "openai")) if isinstance(e, ResponseDone)] \
                == ["hello"]
        assert transport._SSL_CONTEXTS == []  # the whole request went out without it
        options = transport.client_tls("http://127.0.0.1:8080/v1")
        assert isinstance(options["verify"], ssl.SSLContext)  # plain http's own: verifies, trusts nothing
        assert options["verify"].verify_mode == ssl.CERT_REQUIRED and options["verify"].check_hostname
        assert options["verify"].get_ca_certs() == []
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            port = closed.getsockname()[1]
        with httpx.Client(trust_env=False, **options) as client, pytest.raises(httpx.ConnectError):
            client.get(f"https://127.0.0.1:{port}/")
        assert len(transport._SSL_CONTEXTS) == 1  # the https request built the shared store first
        assert transport.needs_certificates("https://api.openai.com/v1")
        assert transport.needs_certificates("http://vm.example:8080/v1")  # not this machine: proxies, TLS later
        assert transport.needs_certificates("")  # not known yet
        assert not transport.needs_certificates("http://localhost:11434/v1")
    finally:
        transport._SSL_CONTEXTS[:] = saved or transport._SSL_CONTEXTS


def test_requests_one_after_another_do_not_start_a_thread_each() -> None:
    """The pumps that run requests are kept: starting a thread made every model call wait for it to come up."""
    import sys
    import threading

    started: list[threading.Thread] = []

    def first_call(*_: object) -> None:  # runs in each thread started from here on, once
        started.append(threading.current_thread())
        sys.setprofile(None)

    with ScriptedLLM([Reply(f"answer {n}") for n in range(6)]) as llm:
        p = provider(llm, "openai")
        threading.setprofile(first_call)
        try:
            answers = [e.message.content for _ in range(6) for e in p.stream(REQUEST) if isinstance(e, ResponseDone)]
        finally:
            threading.setprofile(None)  # type: ignore[arg-type]
            p.close()
    assert answers == [f"answer {n}" for n in range(6)]
    pumps = [thread for thread in started if "stream" in thread.name]  # not the scripted server's handlers
    assert len(pumps) <= 2  # one, or two when a request starts while the last one's pump still reads its end


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_connection_the_server_keeps_alive_serves_the_next_requests(wire: Wire) -> None:
    """Real APIs send a streamed reply in chunks and keep the connection for the next request; the scripted
    server does so with `keep_alive` (by default each reply ends its connection)."""
    for keep_alive, most in ((True, 2), (False, 6)):
        with ScriptedLLM([Reply(f"answer {n}") for n in range(6)], wire=wire, keep_alive=keep_alive) as llm:
            p = provider(llm, wire)
            try:
                answers = [e.message.content for _ in range(6) for e in p.stream(REQUEST)
                           if isinstance(e, ResponseDone)]
            finally:
                p.close()
        assert answers == [f"answer {n}" for n in range(6)]
        assert (llm.connections <= most) if keep_alive else (llm.connections == most)  # two: see above


class RawCapture:
    """A loopback HTTP server that keeps every request's raw bytes (request line, headers, body) and answers
    each with a one-event OpenAI stream, setting a cookie when `cookie` is given."""

    def __init__(self, cookie: str = "") -> None:
        import socket
        import threading

        self.cookie = cookie
        self.requests: list[bytes] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            with connection:
                raw = b""
                while b"\r\n\r\n" not in raw:
                    raw += connection.recv(65536)
                head = raw.split(b"\r\n\r\n", 1)[0]
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                while len(raw) < len(head) + 4 + length:
                    raw += connection.recv(65536)
                self.requests.append(raw)
                chunk = ('{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}')
                cookie = f"Set-Cookie: {self.cookie}; Path=/\r\n" if self.cookie else ""
                connection.sendall((f"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n{cookie}"
                                    f"Connection: close\r\n\r\ndata: {chunk}\n\ndata: [DONE]\n\n").encode())

    def close(self) -> None:
        self._listener.close()


def _as_built_by_httpx(p: HttpProvider, raw: bytes) -> bytes:
    """What `client.build_request` would have sent for the same URL and body as `raw`, with the provider's
    headers as they are now (its key included: not copied from `raw`, so a stale one fails the comparison), the
    way requests were built before templates, serialized as httpcore writes it."""
    import h11

    head, body = raw.split(b"\r\n\r\n", 1)
    target = head.split(b"\r\n")[0].split(b" ")[1].decode()
    own = {**p._headers(), "Content-Type": "application/json"}  # type: ignore[attr-defined]
    request = p._client.build_request("POST", p.base_url.removesuffix("/v1") + target, content=body, headers=own)
    connection = h11.Connection(our_role=h11.CLIENT)
    return b"".join(connection.send(event) or b"" for event in (
        h11.Request(method=b"POST", target=request.url.raw_path, headers=request.headers.raw),
        h11.Data(data=request.content), h11.EndOfMessage()))


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_requests_made_from_the_template_are_the_bytes_build_request_makes(wire: Wire) -> None:
    """Each model call's request is made from a kept template, not `Client.build_request`: the same bytes on the
    wire, for the first request (which makes the template) and the next ones (which reuse it with another body)."""
    from swecli.llm import transport

    server = RawCapture()
    cls = OpenAIProvider if wire == "openai" else AnthropicProvider
    p = cls(model="m", base_url=server.base_url, api_key="k", max_retries=0)
    def send(text: str) -> None:
        with contextlib.suppress(ProviderError):  # the reply is OpenAI's: the Anthropic wire refuses it
            list(p.stream(ModelRequest(system=(), messages=(UserMessage(content=text),))))

    try:
        for text in ("hi", "a longer question with \u00e9 in it", "hi"):
            send(text)
        url = transport._TEMPLATES._kept[p._client][0]  # made once, kept for this client
        assert url == f"{server.base_url}/{'chat/completions' if wire == 'openai' else 'messages'}"
        assert len(server.requests) == 3
        for raw in server.requests:
            assert raw == _as_built_by_httpx(p, raw)
        assert server.requests[0] == server.requests[2] != server.requests[1]
        p._api_key = "k2"  # another key on the same client (a key replaced mid-session): a new template
        send("hi")
        assert len(server.requests) == 4 and b"k2" in server.requests[3].split(b"\r\n\r\n")[0]
        assert server.requests[3] == _as_built_by_httpx(p, server.requests[3]) != server.requests[0]
    finally:
        p.close()
        server.close()
    assert p._client not in transport._TEMPLATES._kept  # closed: forgotten


def test_the_template_of_a_provider_nobody_closed_goes_with_it() -> None:
    """The templates hold their clients weakly: a provider dropped without `close` (and its connection pool) is
    not kept alive by them."""
    import gc
    import time
    import weakref

    from swecli.llm import transport

    server = RawCapture()
    p = OpenAIProvider(model="m", base_url=server.base_url, api_key="k")
    try:
        assert [e.message.content for e in p.stream(REQUEST) if isinstance(e, ResponseDone)] == ["ok"]
        client = weakref.ref(p._client)
        assert p._client in transport._TEMPLATES._kept
        del p
        deadline = time.monotonic() + 10  # the request thread may still be reading the reply's end: wait for it
        while client() is not None and time.monotonic() < deadline:
            gc.collect()
            time.sleep(0.01)
        assert client() is None
    finally:
        server.close()


def test_a_cookie_the_server_set_is_sent_back_as_before() -> None:
    """A load balancer's sticky-session cookie: a client holding cookies builds its requests with
    `build_request`, whose cookie header the template would not carry."""
    server = RawCapture(cookie="lb=node-7")
    p = OpenAIProvider(model="m", base_url=server.base_url, api_key="k")
    try:
        answers = [e.message.content for _ in range(2) for e in p.stream(REQUEST) if isinstance(e, ResponseDone)]
    finally:
        p.close()
        server.close()
    assert answers == ["ok", "ok"]
    assert b"\r\nCookie: " not in server.requests[0].split(b"\r\n\r\n")[0]
    assert b"\r\nCookie: lb=node-7\r\n" in server.requests[1].split(b"\r\n\r\n")[0] + b"\r\n"
    assert server.requests[1] == _as_built_by_httpx(p, server.requests[1])


def _session_requests() -> list[ModelRequest]:
    """A real session's requests in order (`../shared/trajectories`, the first file): its last 12 prefixes that
    end before an assistant message, as the loop sends them one tool call after another."""
    from swecli.messages import AssistantMessage
    from swecli.testing.shared import load_trajectory, trajectory_paths

    system, tools, history = load_trajectory(trajectory_paths()[0])
    ends = [i for i, m in enumerate(history) if isinstance(m, AssistantMessage) and i > 0][-12:]
    return [ModelRequest(system=system, messages=tuple(history[:end]), tools=tools, tail="Plan: go on")
            for end in ends]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_growing_session_resumes_from_the_last_request_and_sends_the_same_body(wire: Wire) -> None:
    """Each request begins with the last one's history: its encoding resumes from what the wire held (the
    messages are not looked up one by one), and the body is still exactly `request_body`'s JSON."""
    import json

    def encoded(state: object) -> tuple[object, ...]:  # the held messages' (OpenAI) or closed turns' JSON
        return state if wire == "openai" else state[0]  # type: ignore[index,return-value]

    p = (OpenAIProvider if wire == "openai" else AnthropicProvider)(model="m", base_url="http://127.0.0.1:9")
    requests = _session_requests()
    for n, req in enumerate(requests):
        last = p._encoded._prefix
        p._encoded._kept = {}  # nothing to look up: only a resumed request has the last one's very bytes objects
        assert json.loads(p.encoded_body(req)) == p.request_body(req)
        if n:
            assert last is not None and p._encoded._prefix is not None
            before, now = encoded(last.state), encoded(p._encoded._prefix.state)
            assert len(before) > 0 and all(a is b for a, b in zip(before, now, strict=False))
        held = p._encoded._prefix
        assert held is not None
        assert held.messages == (req.messages if wire == "openai" else req.messages[:-1])  # kept for the next
        if n:
            previous = requests[n - 1].messages
            assert held.messages[:len(previous) - 1] == previous[:-1]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_message_replaced_in_the_middle_is_sent_new_and_the_ones_before_it_are_not_encoded_again(
        wire: Wire) -> None:
    """Decay or compaction replaces an old message by a new object: the request cannot resume, the new message
    is encoded, and the messages before it are still found kept (the resumed requests carried their parts),
    the same bytes objects, not encoded again. Images sent or not (another variant) cannot resume either."""
    import json
    from dataclasses import replace

    p = (OpenAIProvider if wire == "openai" else AnthropicProvider)(model="m", base_url="http://127.0.0.1:9")
    first, second = _session_requests()[:2]
    p.encoded_body(first)
    early = {i: p._encoded._kept[id(m)][2] for i, m in enumerate(first.messages[:10])}
    p.encoded_body(second)  # resumed
    changed = second.messages[10].model_copy(update={"content": "[folded: see .swecli/outputs/1]"})
    third = replace(second, messages=(*second.messages[:10], changed, *second.messages[11:]))
    sent = json.loads(p.encoded_body(third))
    assert sent == p.request_body(third) and "[folded: see .swecli/outputs/1]" in json.dumps(sent)
    assert all(p._encoded._kept[id(third.messages[i])][2] is early[i] for i in early)
    p.images = False  # another variant: every message mapped again
    assert json.loads(p.encoded_body(third)) == p.request_body(third)
    assert p._encoded._prefix is not None and p._encoded._prefix.variant in (False, (False, False))


def test_thinking_turned_on_sends_the_signed_blocks_the_resumed_turns_had_left_out() -> None:
    """Thinking is part of how a message is mapped (Anthropic sends an assistant's signed blocks back only with
    thinking on): a request that turns it on cannot resume from one that had it off, nor the reverse."""
    import json
    from dataclasses import replace

    from swecli.messages import AssistantMessage, ThinkingBlock, ToolCall, ToolMessage
    from swecli.models.thinking import Thinking

    p = AnthropicProvider(model="m", base_url="http://127.0.0.1:9")
    history = (UserMessage(content="look"), AssistantMessage(
        content="", thinking=(ThinkingBlock(text="hmm", signature="sig-1"),),
        tool_calls=(ToolCall(id="c1", name="ls", arguments="{}"),)), ToolMessage(tool_call_id="c1", name="ls",
                                                                                   content="a.py"))
    off = ModelRequest(system=(), messages=history[:2])
    on = replace(ModelRequest(system=(), messages=history), thinking=Thinking(budget=2048))
    for request in (off, on, replace(on, messages=(*history, UserMessage(content="go on")), thinking=Thinking())):
        sent = json.loads(p.encoded_body(request))
        assert sent == p.request_body(request)
        assert ("sig-1" in json.dumps(sent)) == request.thinking.on


def _random_message(rng: random.Random) -> Message:
    from swecli.messages import AssistantMessage, ImagePart, ThinkingBlock, ToolCall, ToolMessage

    image = ImagePart(media_type="image/png", data="AAAA", width=1, height=1, path=f"{rng.randrange(3)}.png")
    kind = rng.randrange(5)
    if kind == 0:
        return UserMessage(content=f"u{rng.randrange(9)}", images=(image,) if rng.random() < 0.3 else ())
    if kind == 1:
        thinking = (ThinkingBlock(text="t", signature=f"s{rng.randrange(9)}"),) if rng.random() < 0.5 else ()
        calls = (ToolCall(id=f"c{rng.randrange(9)}", name="ls"),) if rng.random() < 0.5 else ()
        return AssistantMessage(content=f"a{rng.randrange(9)}", thinking=thinking, tool_calls=calls)
    return ToolMessage(tool_call_id="c1", name="ls", content=f"t{rng.randrange(9)}",
                       images=(image,) if rng.random() < 0.4 else ())


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_any_sequence_of_edits_sends_the_body_of_the_request_as_it_is(wire: Wire) -> None:
    """Whatever happens between two requests (a message appended, replaced, dropped; images sent or not; thinking
    on or off; a tail or none), the resumed encoding sends `request_body`'s JSON, never a stale part of the last."""
    import json

    from swecli.messages import SystemBlock
    from swecli.models.thinking import Thinking

    for seed in range(80):
        rng = random.Random(seed)
        p: OpenAIProvider | AnthropicProvider = (OpenAIProvider if wire == "openai" else AnthropicProvider)(
            model="m", base_url="http://127.0.0.1:9")
        history: list[Message] = []
        for _ in range(25):
            edit = rng.random()
            if edit < 0.6 or not history:
                history.append(_random_message(rng))
            elif edit < 0.75:
                history[rng.randrange(len(history))] = _random_message(rng)
            elif edit < 0.85:
                history.pop()
            else:
                p.images = rng.choice([True, False])
            thinking = Thinking(budget=rng.choice([0, 2048]))
            request = ModelRequest(system=(SystemBlock(text="s"),), messages=tuple(history),
                                   tail=rng.choice(["", "Plan: go on"]), thinking=thinking)
            assert json.loads(p.encoded_body(request)) == p.request_body(request), (seed, request)
