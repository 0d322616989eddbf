"""Reading single keys while the agent works, so Esc and Ctrl-C can interrupt it.

While a turn runs, the main thread puts the terminal in cbreak mode without signals (no echo, no
line buffering, Ctrl-C arrives as a byte instead of SIGINT) and polls it. Output processing is left
alone, so the renderer's newlines still work. A lone ESC byte is the Esc key; ESC followed at once by
more bytes is an arrow or function key and is ignored.
"""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import field
from typing import Any, TextIO

from swecli.records import datarecord

# The names are the characters themselves, never words: a chunk of typed text is returned as it is, so a
# name that could be typed ("esc" typed quickly arrives as one chunk) would read as the key.
ESC = "\x1b"
CTRL_C = "\x03"
ENTER = "\r"
SEQUENCE_GAP = 0.03
"""Seconds to wait after an ESC byte for the rest of an escape sequence."""


def classify(data: bytes) -> str:
    """Name a chunk read from the terminal: ESC, CTRL_C, ENTER, an escape sequence (''), or the text."""
    if b"\x03" in data:
        return CTRL_C
    if data in (b"\x1b", b"\x1b\x1b"):
        return ESC
    if data.startswith(b"\x1b"):
        return ""
    if data in (b"\r", b"\n", b"\r\n"):
        return ENTER
    return data.decode("utf-8", errors="replace")


class KeyWatcher:
    """A terminal in cbreak mode, read one key at a time. Use as a context manager; `paused()`
    hands the terminal back in its normal mode (for a line prompt) and takes it again after."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._saved: list[Any] | None = None

    @staticmethod
    def for_stream(stream: TextIO = sys.stdin) -> KeyWatcher | None:
        """A watcher on `stream`, or None when it is not a terminal (or the platform has no termios)."""
        try:
            import termios  # noqa: F401

            fd = stream.fileno()
        except (ImportError, AttributeError, OSError, ValueError):
            return None
        return KeyWatcher(fd) if os.isatty(fd) else None

    def __enter__(self) -> KeyWatcher:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        import termios

        if self._saved is not None:
            return
        self._saved = termios.tcgetattr(self.fd)
        mode = termios.tcgetattr(self.fd)
        mode[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG | termios.IEXTEN)
        mode[6][termios.VMIN] = 1
        mode[6][termios.VTIME] = 0
        termios.tcsetattr(self.fd, termios.TCSANOW, mode)

    def stop(self) -> None:
        import termios

        if self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSANOW, self._saved)
            self._saved = None

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The terminal in its normal mode for the duration (a line prompt), then cbreak again."""
        active = self._saved is not None
        self.stop()
        try:
            yield
        finally:
            if active:
                self.start()

    def read_key(self, timeout: float) -> str | None:
        """The next key within `timeout` seconds (None if none came); see `classify` for the names."""
        if not self._ready(timeout):
            return None
        data = os.read(self.fd, 1024)
        if data == b"\x1b" and self._ready(SEQUENCE_GAP):
            data += os.read(self.fd, 1024)
        return classify(data)

    def drain(self) -> None:
        """Throw away keys typed while the agent worked, so they do not leak into the next prompt."""
        while self._ready(0):
            os.read(self.fd, 1024)

    def _ready(self, timeout: float) -> bool:
        readable, _, _ = select.select([self.fd], [], [], max(0.0, timeout))
        return bool(readable)


@datarecord
class TypeAhead:
    """Keys typed while the agent works (or while `Allow?` waits): Enter queues the line as the next
    message."""

    line: str = ""
    queued: list[str] = field(default_factory=list)

    def feed(self, key: str) -> None:
        if key == ENTER:
            self._enter()
            return
        for char in key:
            if char in "\r\n":
                self._enter()
            elif char in "\x7f\x08":
                self.line = self.line[:-1]
            elif char == "\x15":  # Ctrl-U
                self.line = ""
            elif char.isprintable():
                self.line += char

    def _enter(self) -> None:
        if self.line.strip():
            self.queued.append(self.line.strip())
        self.line = ""

    def take(self) -> list[str]:
        queued, self.queued = self.queued, []
        return queued
