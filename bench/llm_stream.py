"""Provider layer speed: SSE parsing throughput, per-request overhead on loopback, interrupt latency.

    /tmp/venv/bin/python bench/llm_stream.py
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from typing import Any

from swecli.llm.anthropic import AnthropicStream
from swecli.llm.base import Cancelled, CancelToken, ModelRequest, ResponseDone
from swecli.llm.openai import OpenAIProvider, OpenAIStream
from swecli.llm.sse import SSEParser
from swecli.messages import UserMessage
from swecli.testing.server import Reply, ScriptedLLM


def openai_stream(chunks: int) -> bytes:
    parts = []
    for i in range(chunks):
        delta = {"content": f"token{i} "} if i % 10 else {"tool_calls": [{"index": 0, "function": {"arguments": "ab"}}]}
        parts.append("data: " + json.dumps({"model": "m", "choices": [{"index": 0, "delta": delta}]}) + "\n\n")
    parts.append('data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
    return "".join(parts).encode()


def anthropic_stream(chunks: int) -> bytes:
    def ev(kind: str, **d: Any) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **d})}\n\n"

    parts = [ev("message_start", message={"usage": {"input_tokens": 5}}),
             ev("content_block_start", index=0, content_block={"type": "text", "text": ""})]
    parts += [ev("content_block_delta", index=0, delta={"type": "text_delta", "text": f"token{i} "})
              for i in range(chunks)]
    parts += [ev("content_block_stop", index=0), ev("message_delta", delta={"stop_reason": "end_turn"}),
              ev("message_stop")]
    return "".join(parts).encode()


def parse_rate(name: str, data: bytes, make: Any, piece: int = 4096) -> tuple[str, str, str]:
    best = float("inf")
    for _ in range(5):
        handler, parser = make(), SSEParser()
        start = time.perf_counter()
        for i in range(0, len(data), piece):
            for event in parser.feed(data[i:i + piece]):
                handler.handle(event)
        handler.finish(parser.stray)
        best = min(best, time.perf_counter() - start)
    events = data.count(b"\n\n")
    return name, f"{len(data) / best / 1e6:.1f} MB/s", f"{events / best / 1000:.0f}k events/s"


def request_overhead(n: int = 30) -> tuple[str, str, str]:
    req = ModelRequest(system=(), messages=(UserMessage(content="hi"),))
    with ScriptedLLM([Reply("ok") for _ in range(n)]) as llm:
        provider = OpenAIProvider(model="m", base_url=llm.base_url, name="llamacpp")
        times = []
        for _ in range(n):
            start = time.perf_counter()
            events = list(provider.stream(req))
            times.append(time.perf_counter() - start)
            assert isinstance(events[-1], ResponseDone)
    return "loopback request, 1-chunk reply", f"median {statistics.median(times) * 1000:.1f} ms", \
        f"max {max(times) * 1000:.1f} ms"


def cancel_latency(silent_before_headers: bool, runs: int = 5) -> tuple[str, str, str]:
    latencies = []
    for _ in range(runs):
        release = threading.Event()

        def slow(body: dict[str, Any], release: threading.Event = release) -> Reply:
            release.wait(30)
            return Reply("late")

        step = slow if silent_before_headers else Reply("x" * 40, chunk=1, delay=30)
        cancel = CancelToken()
        with ScriptedLLM([step], strict=False) as llm:
            provider = OpenAIProvider(model="m", base_url=llm.base_url, name="llamacpp")
            fired: list[float] = []

            def fire(token: CancelToken = cancel, stamps: list[float] = fired) -> None:
                stamps.append(time.perf_counter())
                token.cancel()

            threading.Timer(0.3, fire).start()
            try:
                list(provider.stream(ModelRequest(system=(), messages=(UserMessage(content="hi"),)), cancel))
            except Cancelled:
                latencies.append(time.perf_counter() - fired[0])
            release.set()
    what = "before the first byte" if silent_before_headers else "mid-stream"
    return f"interrupt, server silent {what}", f"median {statistics.median(latencies) * 1000:.0f} ms", \
        f"max {max(latencies) * 1000:.0f} ms"


def main() -> None:
    rows = [
        parse_rate("parse OpenAI stream (4 KB pieces)", openai_stream(20_000), lambda: OpenAIStream("x", set())),
        parse_rate("parse Anthropic stream (4 KB pieces)", anthropic_stream(20_000),
                   lambda: AnthropicStream("x", set())),
        parse_rate("parse OpenAI stream (1-byte pieces)", openai_stream(500), lambda: OpenAIStream("x", set()), 1),
        request_overhead(),
        cancel_latency(True),
        cancel_latency(False),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{width}}  {'value':>18}  {'':>18}")
    for name, a, b in rows:
        print(f"{name:<{width}}  {a:>18}  {b:>18}")


if __name__ == "__main__":
    main()
