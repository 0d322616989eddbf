"""Incremental Server-Sent Events parser.

Bytes arrive from the socket in pieces of any size: a piece may end inside a UTF-8 character, between
the `\\r` and `\\n` of a line break, or in the middle of a field name. The parser buffers raw bytes and
only decodes complete lines; line breaks are ASCII bytes, which never occur inside a multibyte UTF-8
sequence, so a complete line is always a complete piece of text.

Follows the WHATWG event-stream rules that matter for LLM APIs: `\\r\\n`, `\\n` and `\\r` line endings,
`:` comments, `data` lines joined with `\\n`, `event` names, one optional space after the colon, and a
blank line that dispatches the event. Lines that are not SSE at all (a server answering plain JSON
with status 200: an error, or a whole answer from a server that ignores `stream`) are kept in `stray`.
"""

from __future__ import annotations

from swecli.lazy import regex
from swecli.records import datarecord

_LINE_BREAK = regex(rb"[\r\n]")
_STRAY_LIMIT = 4_000_000  # a whole non-streamed JSON answer must fit; SSE streams never fill it


@datarecord(frozen=True)
class SSEEvent:
    """One Server-Sent Event, its data lines joined."""

    event: str
    """The `event:` name; "message" when the server sent none (OpenAI never does)."""
    data: str
    id: str = ""


class SSEParser:
    def __init__(self) -> None:
        self._buffer = bytearray()  # the last line's start, not yet ended
        self._skip_lf = False  # the last piece ended with "\r": a "\n" starting the next one is the same break
        self._started = False
        self._event = ""
        self._data: list[str] = []
        self._id = ""
        self._stray: list[str] = []
        self._stray_size = 0

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume one piece of the body; returns the events it completed (possibly none)."""
        if not chunk:
            return []
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._skip_lf = False
        crlf = b"\r" in chunk  # never in the kept part: a "\r" is always a line break, consumed when seen
        if not crlf and b"\n" not in chunk:  # inside a long line (a whole JSON answer): kept, not rescanned
            self._buffer += chunk
            return []
        buffer = bytes(self._buffer) + chunk if self._buffer else chunk
        if crlf:
            lines, rest = self._split_any(buffer)
        else:  # every real API ends its lines with "\n" alone: split in C, on the loop's path at every reply
            *lines, rest = buffer.split(b"\n")
        self._buffer = bytearray(rest)
        events: list[SSEEvent] = []
        for line in lines:
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def _split_any(self, buffer: bytes) -> tuple[list[bytes], bytes]:
        """The complete lines of `buffer` ended by "\r\n", "\n" or "\r"; what follows the last is kept."""
        lines: list[bytes] = []
        pos = 0
        while (match := _LINE_BREAK.search(buffer, pos)) is not None:
            end = match.start()
            lines.append(buffer[pos:end])
            pos = end + 1
            if buffer[end] == 0x0D:  # "\r": swallow the "\n" of a "\r\n", even one not yet received
                if pos < len(buffer):
                    if buffer[pos] == 0x0A:
                        pos += 1
                else:
                    self._skip_lf = True
        return lines, buffer[pos:]

    def close(self) -> list[SSEEvent]:
        """End of body. Be lenient: a last line or event without its terminating blank line still counts."""
        events: list[SSEEvent] = []
        if self._buffer:
            line = bytes(self._buffer)
            self._buffer.clear()
            event = self._line(line)
            if event is not None:
                events.append(event)
        if self._data:
            events.append(self._dispatch())
        return events

    def _line(self, raw: bytes) -> SSEEvent | None:
        if not self._started:
            self._started = True
            raw = raw.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark before the first line
        line = raw.decode("utf-8", errors="replace")
        if not line:
            if self._data:
                return self._dispatch()
            self._event = ""  # an event without data lines is not dispatched (per the spec)
            return None
        if line.startswith(":"):
            return None  # a comment (keep-alive)
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            self._id = value
        elif name != "retry":
            self._keep_stray(line)
        return None

    def _dispatch(self) -> SSEEvent:
        event = SSEEvent(self._event or "message", "\n".join(self._data), self._id)
        self._event, self._data = "", []
        return event

    @property
    def stray(self) -> str:
        """The body's non-SSE lines, if any."""
        return "\n".join(self._stray)

    def _keep_stray(self, line: str) -> None:
        if self._stray_size < _STRAY_LIMIT:
            self._stray.append(line)
            self._stray_size += len(line) + 1
