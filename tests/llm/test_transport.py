"""The wait for a silent server, over real HTTP: `Waiting` reports, the stall limit, the deadline."""

from __future__ import annotations

import pytest

from swecli.llm.anthropic import AnthropicProvider
from swecli.llm.base import ModelRequest, ResponseDone, StreamEvent, TransientError, Waiting
from swecli.llm.openai import OpenAIProvider
from swecli.llm.retry import RetryNotice
from swecli.llm.transport import HEARTBEAT_SECONDS, HttpProvider, Pacing
from swecli.messages import UserMessage
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
