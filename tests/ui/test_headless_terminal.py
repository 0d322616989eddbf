"""`swecli -p`'s answer on a terminal: the model's text is what a hostile repository steers (prompt injection), and
raw escape sequences in it act on the user's terminal. Measured before: an answer holding OSC 0, `ESC [2J` and
OSC 52 reached the terminal as is (the window retitled, the screen cleared, the clipboard written: the user's
next paste is the model's). A pipe still gets the answer's exact text."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pexpect

from swecli.testing.server import Reply, ScriptedLLM

HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;cm0gLXJmIH4K\x07answer"


def swecli_p(base_url: str) -> list[str]:
    return [sys.executable, "-m", "swecli", "--provider", "openai-compatible", "--base-url", base_url, "--model",
            "scripted-model", "-p", "go", "--mode", "auto"]


def test_escape_sequences_in_the_answer_are_shown_not_obeyed_on_a_terminal(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    with ScriptedLLM([Reply(HOSTILE)]) as llm:
        argv = swecli_p(llm.base_url)
        child = pexpect.spawn(argv[0], argv[1:], cwd=str(tmp_path), env=env, timeout=120)
        child.expect(pexpect.EOF)
        shown = child.before
    assert b"\x1b]52" not in shown and b"\x1b]0;" not in shown and b"\x1b[2J" not in shown, shown
    assert b"\\x1b]52;c;cm0gLXJmIH4K\\x07answer" in shown, shown
    with ScriptedLLM([Reply(HOSTILE)]) as llm:
        piped = subprocess.run(swecli_p(llm.base_url), cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=120, stdin=subprocess.DEVNULL)
    assert piped.stdout == HOSTILE + "\n", piped.stderr
