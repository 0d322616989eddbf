"""The whole output of a tool, kept when what the model sees is a cut of it.

A tool that caps what it returns (bash's `tools.max_output_chars`, grep's match limit, list_files'
entry limit) also writes everything it produced into a `Spool`; `Spool.finish()` gives the
`FullOutput` the tool puts on its result (`ToolResult.full`). The context engine then saves it whole
under `.swecli/tool_results/` and gives the model a bounded preview, so the cap limits what the model
sees, never what is saved. Line and byte counts are always those of the whole output.

Small outputs stay in memory; past `MEMORY_BYTES` the spool moves to a temporary file, so a command
that prints gigabytes never holds them in memory. Past `SAVE_LIMIT_BYTES` (a runaway command) bytes
are counted but not stored, except the last `TAIL_BYTES`, which are always kept: the saved file then
says where the gap is. A spooled temporary file belongs to the `FullOutput`: `save_to` moves it,
`discard` (or garbage collection) deletes it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from dataclasses import field
from pathlib import Path
from typing import BinaryIO

from swecli.records import datarecord

MEMORY_BYTES = 1 << 20
"""Output kept in memory before the spool moves to a temporary file."""
SAVE_LIMIT_BYTES = 256 << 20
"""Bytes stored at most; a runaway command's output past this is counted, and its last TAIL_BYTES kept."""
TAIL_BYTES = 64 << 10
"""The last bytes of an output, always at hand (previews, and what follows a gap)."""
_READ_BACK = 1 << 16


class Spool:
    """Accumulates an output of any size; `finish()` hands it over as a `FullOutput`."""

    def __init__(self, memory_bytes: int = MEMORY_BYTES, save_limit: int = SAVE_LIMIT_BYTES) -> None:
        self.memory_bytes = memory_bytes
        self.save_limit = save_limit
        self.total = 0
        self.newlines = 0
        self.stored = 0
        self.longest_line = 0
        self._line = 0
        self._last = b"\n"
        self._memory = bytearray()
        self._file: BinaryIO | None = None
        self._path: Path | None = None
        self._tail = bytearray()

    def write(self, data: bytes | str) -> None:
        if isinstance(data, str):
            data = data.encode("utf-8", errors="replace")
        if not data:
            return
        self.total += len(data)
        self._count_lines(data)
        self._last = data[-1:]
        self._tail += data
        if len(self._tail) > TAIL_BYTES:
            del self._tail[: len(self._tail) - TAIL_BYTES]
        room = self.save_limit - self.stored
        if room > 0:
            self._store(data[:room])

    def _count_lines(self, data: bytes) -> None:
        newlines = data.count(b"\n")
        self.newlines += newlines
        if not newlines:
            self._line += len(data)
        else:  # split() and max() run in C: no Python loop per line, even for millions of lines
            pieces = data.split(b"\n")
            self.longest_line = max(self.longest_line, self._line + len(pieces[0]), max(map(len, pieces[1:-1]),
                                                                                          default=0))
            self._line = len(pieces[-1])
        self.longest_line = max(self.longest_line, self._line)

    def _store(self, data: bytes) -> None:
        self.stored += len(data)
        if self._file is None and len(self._memory) + len(data) <= self.memory_bytes:
            self._memory += data
            return
        if self._file is None:
            fd, name = tempfile.mkstemp(prefix="swecli-output-", suffix=".txt")
            self._file, self._path = os.fdopen(fd, "wb"), Path(name)
            self._file.write(self._memory)
            self._memory = bytearray()
        self._file.write(data)

    @property
    def lines(self) -> int:
        """Lines as read_file numbers them: a final newline ends the last line rather than starting one."""
        return self.newlines + (0 if self._last == b"\n" else 1)

    def head(self, size: int) -> bytes:
        """The first `size` bytes (what was stored of them)."""
        if self._file is None:
            return bytes(self._memory[:size])
        self._file.flush()
        assert self._path is not None
        with self._path.open("rb") as fh:
            return fh.read(size)

    def tail(self, size: int) -> bytes:
        """The last `size` bytes (at most TAIL_BYTES)."""
        return bytes(self._tail[-size:]) if size > 0 else b""

    def finish(self) -> FullOutput:
        """The output as a FullOutput (the spool must not be written to afterwards)."""
        dropped = self.total - self.stored
        if self._file is None:
            data = bytes(self._memory)
            if dropped:
                data += _gap_note(dropped) + self.tail(TAIL_BYTES)
            return FullOutput(data=data, size=self.total, lines=self.lines, longest_line=self.longest_line,
                              dropped=dropped, tail_data=self.tail(TAIL_BYTES))
        if dropped:
            self._file.write(_gap_note(dropped) + self.tail(TAIL_BYTES))
        self._file.close()
        assert self._path is not None
        return FullOutput(path=self._path, size=self.total, lines=self.lines, longest_line=self.longest_line,
                          dropped=dropped, tail_data=self.tail(TAIL_BYTES))

    def discard(self) -> None:
        """Nothing was cut, so nothing needs keeping: drop the spool (and its temporary file)."""
        if self._file is not None:
            self._file.close()
        if self._path is not None:
            self._path.unlink(missing_ok=True)
        self._file, self._path, self._memory = None, None, bytearray()


def _gap_note(dropped: int) -> bytes:
    return (f"\n[swecli: {dropped:,} bytes of this output were not saved (over the {SAVE_LIMIT_BYTES >> 20} MiB "
            f"limit for one output); its last {TAIL_BYTES >> 10} KiB follow]\n").encode()


@datarecord
class FullOutput:
    """A tool's whole output: in memory (`data`) or in a temporary file (`path`) that this object owns."""

    size: int
    """Bytes of the whole output, as produced."""
    lines: int
    longest_line: int = 0
    """In bytes: previews say when lines are too long to read with read_file."""
    data: bytes | None = None
    path: Path | None = None
    dropped: int = 0
    """Bytes over SAVE_LIMIT_BYTES that were counted but not stored (a gap marked in the saved text)."""
    tail_data: bytes = b""
    """The output's last bytes (up to TAIL_BYTES), for the tail of a preview."""
    status: str = ""
    """What the tool reports beside the output (`exit code 1`, `Found 3 matches across 2 files`): every
    view of the output ends with it."""
    _cleanup: weakref.finalize | None = field(default=None, repr=False)  # type: ignore[type-arg]

    def __post_init__(self) -> None:
        if self.path is not None:
            self._cleanup = weakref.finalize(self, _unlink, self.path)

    @staticmethod
    def of_text(text: str) -> FullOutput:
        spool = Spool()
        spool.write(text)
        return spool.finish()

    def head_lines(self, count: int) -> list[str]:
        """The first `count` lines (decoded; a line cut by the read-back window is returned cut)."""
        if count <= 0:
            return []
        if self.data is not None:
            return _split(self.data, count, from_end=False)
        assert self.path is not None
        lines: list[str] = []
        with self.path.open("rb") as fh:
            while len(lines) < count and (raw := fh.readline(_READ_BACK)):
                if not raw.endswith(b"\n"):
                    _skip_rest_of_line(fh)  # a huge line: its start is enough for a preview
                lines.append(_decode(raw.rstrip(b"\n")))
        return lines

    def tail_lines(self, count: int) -> list[str]:
        """The last `count` lines of the output (from its last TAIL_BYTES)."""
        if count <= 0:
            return []
        source = self.tail_data if (self.path is not None or self.dropped) else (self.data or b"")
        return _split(source, count, from_end=True)

    def text(self, max_bytes: int) -> str | None:
        """The whole text when it is at most `max_bytes`, else None."""
        if self.size > max_bytes or self.dropped:
            return None
        if self.data is not None:
            return _decode(self.data)
        assert self.path is not None
        return _decode(self.path.read_bytes())

    def chunks(self, size: int = 1 << 20) -> Iterator[bytes]:
        """The stored bytes (gap note included) in pieces of at most `size`: never all in memory at once."""
        if self.data is not None:
            for start in range(0, len(self.data), size):
                yield self.data[start:start + size]
            return
        assert self.path is not None
        with self.path.open("rb") as fh:
            while piece := fh.read(size):
                yield piece

    def save_to(self, target: Path) -> None:
        """Store the output at `target` (the temporary file is moved there). Raises OSError."""
        target.parent.mkdir(parents=True, exist_ok=True)
        if self.data is not None:
            target.write_bytes(self.data)
            return
        assert self.path is not None
        shutil.move(str(self.path), str(target))
        if self._cleanup is not None:
            self._cleanup.detach()
        self.path = target

    def discard(self) -> None:
        if self._cleanup is not None:
            self._cleanup()


def _unlink(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def _skip_rest_of_line(fh: BinaryIO) -> None:
    while chunk := fh.readline(_READ_BACK):
        if chunk.endswith(b"\n"):
            return


def _decode(data: bytes) -> str:
    """As the model and the terminal get it: control sequences visible, not obeyed (tools.visible)."""
    from swecli.tools.visible import visible

    return visible(data.decode("utf-8", errors="replace"))


def _split(data: bytes, count: int, *, from_end: bool) -> list[str]:
    if data.endswith(b"\n"):
        data = data[:-1]
    if not data:
        return []
    if from_end:
        parts = data.rsplit(b"\n", count)
        return [_decode(p) for p in parts[-count:]]
    return [_decode(p) for p in data.split(b"\n", count)[:count]]
