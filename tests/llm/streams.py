"""Helpers for feeding hand-made SSE byte streams to a wire-format handler, split any way we like."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from swecli.llm.base import StreamEvent
from swecli.llm.sse import SSEParser
from swecli.llm.transport import StreamHandler


def run_pieces(handler: StreamHandler, pieces: Iterable[bytes]) -> list[StreamEvent]:
    """What `transport.stream_sse` does with the bytes, minus the HTTP."""
    parser = SSEParser()
    events: list[StreamEvent] = []
    for piece in pieces:
        for event in parser.feed(piece):
            events.extend(handler.handle(event))
            if handler.done:
                return [*events, *handler.finish(parser.stray)]
    for event in parser.close():
        events.extend(handler.handle(event))
    return [*events, *handler.finish(parser.stray)]


def splits(data: bytes, *cuts: int) -> list[bytes]:
    points = [0, *sorted(cuts), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(points)]
