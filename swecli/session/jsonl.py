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

from pydantic_core import PydanticSerializationError, to_json, to_jsonable_python

from swecli.records import datarecord
from swecli.session.private import open_private
from swecli.session.secrets import NO_REDACTION, Redactor


def encode_line(record: dict[str, Any], redactor: Redactor = NO_REDACTION) -> bytes:
    """One JSONL line of `record` (ending with its newline), with every secret of `redactor` replaced.

    Encoded by pydantic's encoder in one pass, then searched once for secrets; only a line that may hold
    one is encoded again from the redacted object (the same line as redacting first: see
    `Redactor.may_be_in_json`). The line parses to what `json.dumps(record, default=str)` wrote before;
    the text differs only where JSON allows two spellings (a float's exponent: `1e-5`, not `1e-05`) and
    for values JSON has no type for (pydantic writes a datetime, a set, a dataclass its own way; anything
    else still goes through `str`)."""
    try:
        data = to_json(record, fallback=str, inf_nan_mode="constants")
        if redactor.may_be_in_json(data):  # redact what the encoder writes: a Path's or a set's strings too
            plain = to_jsonable_python(record, fallback=str, inf_nan_mode="constants")
            data = to_json(redactor.redact_obj(plain), fallback=str, inf_nan_mode="constants")
    except PydanticSerializationError:  # what json refuses too (a lone surrogate): it says why, as before
        return _json_line(redactor.redact_obj(record))
    return data + b"\n"


def _json_line(record: dict[str, Any]) -> bytes:
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str) + "\n"
    return line.encode("utf-8")


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
        written = os.write(fd, data)
        if written < len(data):  # only a signal or a full disk cuts a write to a regular file short
            view = memoryview(data)[written:]
            while view:
                view = view[os.write(fd, view):]
        if self.durable:
            os.fsync(fd)

    def append(self, record: dict[str, Any]) -> None:
        self.append_line(encode_line(record))

    def append_line(self, line: bytes) -> None:
        """A line already encoded (ending with its newline), written with one write()."""
        with self._lock:
            self._write_bytes(line)

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
