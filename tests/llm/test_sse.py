from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from swecli.llm.sse import SSEEvent, SSEParser

STREAM = (
    "\ufeffevent: message_start\r\ndata: {\"a\": \"h\u00e9llo \U0001f600\"}\r\n\r\n"
    ": keep-alive comment\n"
    "data: line one\ndata:line two\n\n"
    "event: ping\rdata: {}\r\r"
    "id: 7\ndata: \u4e2d\u6587\n\n"
).encode()
EXPECTED = [
    SSEEvent("message_start", '{"a": "h\u00e9llo \U0001f600"}'),
    SSEEvent("message", "line one\nline two"),
    SSEEvent("ping", "{}"),
    SSEEvent("message", "\u4e2d\u6587", "7"),
]


def parse(pieces: list[bytes]) -> list[SSEEvent]:
    parser = SSEParser()
    events = [e for piece in pieces for e in parser.feed(piece)]
    return events + parser.close()


def test_whole_stream() -> None:
    assert parse([STREAM]) == EXPECTED


def test_every_single_split_point() -> None:
    for cut in range(len(STREAM) + 1):
        assert parse([STREAM[:cut], STREAM[cut:]]) == EXPECTED, cut


def test_byte_by_byte() -> None:
    # Cuts inside every multibyte character and between every "\r" and "\n".
    assert parse([STREAM[i:i + 1] for i in range(len(STREAM))]) == EXPECTED


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_splits(cuts: list[int]) -> None:
    points = [0, *sorted(cuts), len(STREAM)]
    assert parse([STREAM[a:b] for a, b in itertools.pairwise(points)]) == EXPECTED


def test_crlf_split_does_not_make_an_empty_line() -> None:
    # "\r" at the end of one piece and "\n" at the start of the next are one line break, not two.
    parser = SSEParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\ndata: b\r") == []
    assert parser.feed(b"\n\r\n") == [SSEEvent("message", "a\nb")]


def test_last_event_without_blank_line_is_kept() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: [DONE]") == []
    assert parser.close() == [SSEEvent("message", "[DONE]")]


def test_event_without_data_is_not_dispatched() -> None:
    assert parse([b"event: ping\n\ndata: x\n\n"]) == [SSEEvent("message", "x")]


def test_empty_data_line_dispatches_empty_data() -> None:
    assert parse([b"data:\n\n"]) == [SSEEvent("message", "")]


def test_non_sse_body_is_kept_as_stray_text() -> None:
    parser = SSEParser()
    assert parser.feed(b'{"error": {"message": "boom"}}\n') == []
    assert parser.close() == []
    assert parser.stray == '{"error": {"message": "boom"}}'


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    assert parse([b"data: \xff\xfe ok\n\n"]) == [SSEEvent("message", "\ufffd\ufffd ok")]


SSE_TEXT = st.lists(st.sampled_from(["data:", "data: ", "event: e", ": c", "id: 1", "x", "\u00e9", "\r", "\n",
                                     "\r\n", "retry: 5"]), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(SSE_TEXT, st.lists(st.integers(min_value=0, max_value=200), max_size=8))
def test_any_text_parses_the_same_in_any_pieces(text: str, cuts: list[int]) -> None:
    """`\\n`-only pieces take a faster path than pieces with `\\r` (and a piece with no line break is only
    kept): whatever the mix of endings and cuts, the events and the stray text are those of the whole."""
    raw = text.encode()
    whole = SSEParser()
    expected = whole.feed(raw) + whole.close()
    points = [0, *sorted(min(c, len(raw)) for c in cuts), len(raw)]
    parser = SSEParser()
    events = [e for a, b in itertools.pairwise(points) for e in parser.feed(raw[a:b])] + parser.close()
    assert events == expected and parser.stray == whole.stray


def test_a_long_line_in_many_pieces_is_one_line() -> None:
    parser = SSEParser()
    line = b"data: " + b"y" * 100_000
    assert all(parser.feed(line[i:i + 1000]) == [] for i in range(0, len(line), 1000))
    assert parser.feed(b"\n\n") == [SSEEvent("message", "y" * 100_000)]
