"""A pseudo-terminal driver for the REPL tests: the real `swecli` process, seen as a person sees it.

Output is matched on text with the terminal's escape sequences removed, moving forward through the
output (each `expect` starts where the last one matched), so a test reads as a sequence of things
that must appear in order. Cursor position requests are answered as a real terminal would, so
prompt-toolkit draws its bottom toolbar.

`in_process` is the REPL without a terminal, for what a typed line does where keys, the screen and the
process are not the subject (a `swecli` start in a pty costs seconds of CPU; each behaviour that depends
on the terminal keeps a pty test).
"""

from __future__ import annotations

import fcntl
import io
import os
import re
import struct
import sys
import termios
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pexpect

if TYPE_CHECKING:
    from swecli.testing.server import ScriptedLLM, Step
    from swecli.ui.repl import Repl

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78MDEc]")
CURSOR_POSITION_REQUEST = "\x1b[6n"
SPINNER_FRAME = re.compile(r"[\u2800-\u28ff] [^\r\n]*· esc to interrupt")
"""One frame of the status line a running turn animates (`ui/render.py`)."""
TOOLBAR = re.compile(r" mode · ctx \d+%")
"""The input prompt's bottom toolbar (mode and context meter, `ui/input.py`). prompt-toolkit draws it with
the prompt, after it has put the terminal in raw mode and started reading keys; nothing else shows it
(the welcome line says `· default mode · /path`), so once it follows a `❯ ` the prompt takes keys."""
ROWS, COLS = 50, 160
TIMEOUT = 30.0
"""Generous: the machine is shared and slow at times; no test asserts on timing."""

ESC = "\x1b"
ALT_ENTER = "\x1b\r"
SHIFT_TAB = "\x1b[Z"


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


def _redrawn_lines(raw: str) -> set[str]:
    """The lines in a piece of output, without the spinner's frames (they change every tenth of a second)."""
    text = SPINNER_FRAME.sub("", strip_ansi(raw))
    return {line.strip() for line in re.split(r"[\r\n]+", text) if line.strip()}


class Terminal:
    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.child = pexpect.spawn(argv[0], argv[1:], cwd=str(cwd), env=env, dimensions=(ROWS, COLS),
                                   encoding="utf-8", codec_errors="replace", timeout=TIMEOUT)
        self.raw = ""
        self.pos = 0

    @property
    def text(self) -> str:
        return strip_ansi(self.raw)

    def _pump(self, wait: float) -> None:
        try:
            data = self.child.read_nonblocking(65536, wait)
        except pexpect.TIMEOUT:
            return
        if CURSOR_POSITION_REQUEST in data:
            self.child.send(f"\x1b[{ROWS};1R")
        self.raw += data

    def expect(self, needle: str | re.Pattern[str], timeout: float = TIMEOUT) -> str:
        """Wait until `needle` appears after the previous match; return the text it matched."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text
            if isinstance(needle, str):
                at = text.find(needle, self.pos)
                if at >= 0:
                    self.pos = at + len(needle)
                    return needle
            else:
                match = needle.search(text, self.pos)
                if match:
                    self.pos = match.end()
                    return match.group(0)
            if time.monotonic() > deadline:
                raise AssertionError(f"never saw {needle!r}; output since the last match:\n{text[self.pos:][-3000:]}")
            try:
                self._pump(0.1)
            except pexpect.EOF:
                if time.monotonic() > deadline or not self.child.isalive():
                    raise AssertionError(f"swecli exited before showing {needle!r}; output since the last "
                                         f"match:\n{self.text[self.pos:][-3000:]}") from None

    def prompt(self) -> None:
        """Wait for the input prompt to be ready for typing: a `❯ ` and, after it, the toolbar drawn with
        it (a `❯ ` alone may be a line of the transcript). The position stays after the `❯ `, so the
        toolbar can still be expected. No quiet period is waited for: keys typed from here on are read."""
        self.expect("❯ ")
        self.wait_for(TOOLBAR)

    def wait_for(self, needle: re.Pattern[str], timeout: float = TIMEOUT) -> None:
        """Wait until `needle` appears after the previous match, without moving past it."""
        pos = self.pos
        try:
            self.expect(needle, timeout)
        finally:
            self.pos = pos

    def settle(self, quiet: float = 0.3) -> None:
        """Read until the output has been quiet a moment (prompt-toolkit finished drawing).

        While a turn runs, the live region (spinner, queued and typed lines) is redrawn every tenth of a
        second: its spinner frames, and lines drawn again unchanged, are not new output. Otherwise settling
        during a turn waited out the whole TIMEOUT and raced whatever the turn was doing (a `sleep 30` that
        Esc was meant to stop ran to its end about one time in three)."""
        deadline = time.monotonic() + TIMEOUT
        last, shown = len(self.raw), set[str]()
        while time.monotonic() < deadline:
            try:
                self._pump(quiet)
            except pexpect.EOF:
                return
            lines = _redrawn_lines(self.raw[last:])
            if lines <= shown:  # nothing new: silence, or the live region drawn again as it was
                return
            last, shown = len(self.raw), lines

    def keys_read(self, timeout: float = TIMEOUT) -> None:
        """Wait until swecli has read every key sent so far (its terminal's input queue is empty), for a key
        whose effect shows nothing: the next key then cannot arrive in the same read as this one."""
        slave = os.open(os.readlink(f"/proc/{self.child.pid}/fd/0"), os.O_RDWR | os.O_NOCTTY)
        try:
            deadline = time.monotonic() + timeout
            while struct.unpack("i", fcntl.ioctl(slave, termios.FIONREAD, b"\0" * 4))[0]:
                if time.monotonic() > deadline:
                    raise AssertionError(f"swecli did not read the keys sent to it: {self.since()[-2000:]}")
                try:
                    self._pump(0.05)
                except pexpect.EOF:
                    raise AssertionError(f"swecli exited before reading its keys: {self.since()[-2000:]}") from None
        finally:
            os.close(slave)

    def since(self) -> str:
        """Everything shown after the last match (for negative checks)."""
        return self.text[self.pos:]

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def line(self, text: str) -> None:
        """Type `text` and Enter, as one write: the prompt reads keys in order, whatever arrives together."""
        self.child.send(text + "\r")

    def exit_status(self, timeout: float = TIMEOUT) -> int:
        deadline = time.monotonic() + timeout
        while self.child.isalive() and time.monotonic() < deadline:
            try:
                self._pump(0.2)
            except pexpect.EOF:
                break
        while self.child.isalive() and time.monotonic() < deadline:  # the end of output comes a moment before
            time.sleep(0.01)  # the process is reaped: a look at its state, not at the terminal
        if not self.child.isalive():
            self.child.ptyproc.delayafterclose = 0  # gone already: pexpect's fixed 0.1 s wait is for nothing
        self.child.close()
        assert self.child.exitstatus is not None, f"swecli did not exit: {self.text[-2000:]}"
        return int(self.child.exitstatus)

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


def spawn_swecli(base_url: str, project: Path, home: Path, *extra: str) -> Terminal:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWECLI_") and not k.endswith("_API_KEY")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), TERM="xterm-256color",
               COLUMNS=str(COLS), LINES=str(ROWS))
    argv = [sys.executable, "-m", "swecli", "--provider", "openai-compatible", "--base-url", base_url,
            "--model", "scripted-model", *extra]
    return Terminal(argv, project, env)


@dataclass
class SharedRepl:
    """One real `swecli` REPL in a pty that serves several checks in turn (`tests/ui/test_repl.py` `repl`):
    a check whose subject is the terminal but not the process's start or exit gets it at an empty
    default-mode prompt with a new conversation, adds the steps it scripts (`script`), and reads the
    requests (`requests`) and output (`shown`, `raw_since`) from its own start only. A REPL start costs
    ~2 s of CPU; the checks stay independent (a new conversation, the default mode, files of their own),
    and a check that fails, leaves steps unused or cannot be brought back to that state closes the
    session: the next check starts a new one, so one failure cannot fail the others."""

    term: Terminal
    llm: ScriptedLLM
    project: Path
    first_request: int = 0
    text_at: int = 0
    raw_at: int = 0

    def begin(self) -> None:
        """A check starts here: what it reads is from now on."""
        self.first_request, self.text_at, self.raw_at = len(self.llm.requests), self.term.pos, len(self.term.raw)

    def script(self, *steps: Step) -> None:
        self.llm.add(*steps)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The requests the server got since this check began."""
        return self.llm.requests[self.first_request:]

    def shown(self) -> str:
        return self.term.text[self.text_at:]

    def raw_since(self) -> str:
        return self.term.raw[self.raw_at:]

    def reset(self) -> None:
        """Back to a new conversation in default mode at a ready prompt (after a check that passed)."""
        assert not self.llm.steps, f"{len(self.llm.steps)} scripted step(s) were never requested"
        self.term.line("/mode default")
        self.term.expect("Mode: default")
        self.term.prompt()
        self.term.line("/clear")
        self.term.expect("Started a new conversation.")
        self.term.prompt()

    def close(self) -> None:
        self.term.close()
        self.llm.stop()


def in_process(project: Path, llm: ScriptedLLM, *, continue_latest: bool = False, **settings: Any) -> Repl:
    """The REPL without a terminal, its console writing to a buffer (`output`): for what a typed line does
    where the terminal is not the subject, without the seconds of CPU a `swecli` start in a pty costs."""
    from rich.console import Console

    from swecli.config import Settings
    from swecli.ui.repl import Repl

    config = Settings(provider="openai-compatible", model="scripted-model", base_url=llm.base_url, **settings)
    console = Console(file=io.StringIO(), width=COLS, color_system=None, force_terminal=False, highlight=False)
    return Repl(project, config, console, continue_latest=continue_latest)


def output(repl: Repl) -> str:
    """Everything an in-process REPL has shown."""
    file = repl.console.file
    assert isinstance(file, io.StringIO)
    return file.getvalue()


def shown_for(project: Path, llm: ScriptedLLM, task: str, **settings: Any) -> str:
    """Everything an in-process REPL shows for one typed `task`, its session closed afterwards."""
    repl = in_process(project, llm, **settings)
    try:
        repl.submit(task)
    finally:
        repl.close()
    return output(repl)


def assert_in_order(shown: str, lines: Iterable[str]) -> None:
    """Each of `lines` appears in `shown`, each after the one before."""
    at = 0
    for line in lines:
        found = shown.find(line, at)
        assert found >= 0, f"{line!r} not shown after position {at}:\n{shown}"
        at = found + len(line)
