"""The scripted server's own options, where a test or a bench relies on them."""

from __future__ import annotations

import contextlib

import httpx

from swecli.testing.server import Reply, ScriptedLLM


def test_a_thinking_reply_starts_its_response_at_once() -> None:
    # `Reply.think`: the headers and the stream's first event first, then the model's thinking, as the real
    # streaming APIs answer (a 60 s think before the headers would end this in the client's 10 s timeout)
    with ScriptedLLM([Reply("hello", think=60)]) as llm, httpx.Client(timeout=10) as client, client.stream(
            "POST", f"{llm.base_url}/chat/completions",
            json={"model": "scripted-model", "stream": True, "messages": [{"role": "user", "content": "hi"}]}) as r:
        assert r.status_code == 200 and r.headers["content-type"] == "text/event-stream"
        lines = r.iter_lines()
        first = next(line for line in lines if line)
        assert '"role": "assistant"' in first and "hello" not in first
        llm.stop()  # while it thinks: the rest is never sent (without `think` it was, at once, "hello" first)
        with contextlib.suppress(httpx.RemoteProtocolError):  # the stream cut short, as a stopped server does
            assert not any("hello" in line for line in lines)
