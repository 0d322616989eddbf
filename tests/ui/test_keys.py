"""Key reading in cbreak mode, on a real pseudo-terminal pair."""

from __future__ import annotations

import os
import termios
from collections.abc import Iterator

import pytest

from swecli.ui.keys import CTRL_C, ENTER, ESC, KeyWatcher, classify


def test_classify() -> None:
    assert classify(b"\x1b") == ESC
    assert classify(b"\x03") == CTRL_C
    assert classify(b"ab\x03") == CTRL_C
    assert classify(b"\x1b[A") == ""  # an arrow key, not Esc
    assert classify(b"\r") == ENTER
    assert classify(b"y") == "y"


def test_a_word_typed_in_one_chunk_is_text_never_a_key() -> None:
    # Keys typed quickly arrive in one read: "esc", "enter" or "ctrl-c" typed is text, not the key it names.
    for word in (b"esc", b"enter", b"ctrl-c"):
        assert classify(word) == word.decode()
        assert classify(word) not in (ESC, ENTER, CTRL_C)


@pytest.fixture
def pty_pair() -> Iterator[tuple[int, int]]:
    master, slave = os.openpty()
    yield master, slave
    os.close(master)
    os.close(slave)


def test_watcher_reads_keys_and_restores_the_terminal(pty_pair: tuple[int, int]) -> None:
    master, slave = pty_pair
    before = termios.tcgetattr(slave)
    with KeyWatcher(slave) as keys:
        mode = termios.tcgetattr(slave)
        assert not mode[3] & (termios.ICANON | termios.ECHO | termios.ISIG)
        assert mode[1] == before[1]  # output processing untouched: newlines still work
        assert keys.read_key(0.05) is None
        os.write(master, b"\x1b")
        assert keys.read_key(5) == ESC
        os.write(master, b"\x1b[B")
        assert keys.read_key(5) == ""
        os.write(master, b"\x03")
        assert keys.read_key(5) == CTRL_C
        os.write(master, b"n")
        assert keys.read_key(5) == "n"
        with keys.paused():
            assert termios.tcgetattr(slave)[3] == before[3]
        assert not termios.tcgetattr(slave)[3] & termios.ICANON
        os.write(master, b"typed ahead")
        keys.drain()
        assert keys.read_key(0.05) is None
    assert termios.tcgetattr(slave) == before


def test_no_watcher_without_a_terminal(tmp_path: object) -> None:
    import io

    assert KeyWatcher.for_stream(io.StringIO()) is None
