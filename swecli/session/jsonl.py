"""JSON Lines files that survive a kill: one object per line, each written with a single write().

Writes go straight to an O_APPEND file descriptor (no user-space buffer), so once `append()`
returns the line is in the kernel and a SIGKILL of swecli cannot lose it. `fsync` is optional
(`durable=True`): it only adds protection against a power loss or an OS crash, and costs a disk
round trip per line, which a busy session would feel on slow disks.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import field
from pathlib import Path
from typing import Any

from swecli.records import datarecord
from swecli.session.private import open_private


class AppendOnlyFile:
    def __init__(self, path: Path, durable: bool = False) -> None:
        self.path = path
        self.durable = durable
        self._lock = threading.Lock()
        # 0600: transcripts hold the project's code and the conversation; they are nobody else's.
        self._fd: int | None = open_private(path, "a")
        self._end_torn_line()

    def _end_torn_line(self) -> None:
        """A kill mid-write can leave a last line without its newline; end it so the next line
        starts clean (the reader reports the torn fragment and skips it)."""
        size = os.fstat(self._require_fd()).st_size
        if size == 0:
            return
        with self.path.open("rb") as f:
            f.seek(size - 1)
            if f.read(1) != b"\n":
                self._write_bytes(b"\n")

    def _require_fd(self) -> int:
        if self._fd is None:
            raise ValueError(f"{self.path} is closed")
        return self._fd

    def _write_bytes(self, data: bytes) -> None:
        fd = self._require_fd()
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if self.durable:
            os.fsync(fd)

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str) + "\n"
        with self._lock:
            self._write_bytes(line.encode("utf-8"))

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    @property
    def closed(self) -> bool:
        return self._fd is None


@datarecord
class JsonlContents:
    """The records of a JSONL file that could be read, and why the others could not."""

    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """One sentence per line that could not be read (a torn last line after a kill, a bad edit)."""


def read_jsonl(path: Path) -> JsonlContents:
    """Every valid object line of the file; invalid lines are reported, never fatal."""
    contents = JsonlContents()
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        torn = number == len(lines)  # the last chunk has no newline after it: a write cut short
        try:
            obj = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            obj = None
        if isinstance(obj, dict):
            contents.records.append(obj)
        elif torn:
            contents.problems.append(f"{path.name}:{number}: incomplete last line (the write was cut short); skipped")
        else:
            contents.problems.append(f"{path.name}:{number}: not a JSON object; skipped")
    return contents
