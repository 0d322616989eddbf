"""Approvals as a person meets them in the REPL (scripted LLM over HTTP): read-only commands run without a
question in default mode, writes ask (in process), and, in the real REPL in a pseudo-terminal, a command the
sandbox blocked may run again outside it when the person says so."""

from __future__ import annotations

import io
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from swecli.testing.server import Call, Reply, ScriptedLLM, Step
from swecli.tools.sandbox import unavailable_reason
from tests.ui.harness import SharedRepl, assert_in_order, shown_for

pytest.importorskip("pexpect")
pytestmark = pytest.mark.skipif(not hasattr(__import__("os"), "openpty"), reason="needs a pseudo-terminal")

APPROVAL = "Allow? [y]es / [n]o / [a]lways this session"
LIFT = re.compile(r"run it again\s+outside\s+the\s+sandbox\?")  # the preview wraps long lines


def test_read_only_commands_do_not_ask_and_a_write_does(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In process, the answer typed as a line: which calls ask is the policy's (one key answering in a
    terminal is the next test's)."""
    (project / "greet.py").write_text("print('hello')\n")
    steps: list[Step] = [
        Reply(calls=[Call("bash", {"command": "cat greet.py"})]),
        Reply(calls=[Call("bash", {"command": "git log --oneline -3 2>/dev/null | head -3; ls"})]),
        Reply(calls=[Call("bash", {"command": "echo \"print('bye')\" > greet.py"})]),
        Reply(text="Changed the greeting."),
    ]
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    with ScriptedLLM(steps) as llm:
        shown = shown_for(project, llm, "change the greeting")
    assert_in_order(shown, [  # each, in this order
        "⚡ bash cat greet.py",
        "⚡ bash git log --oneline -3",
        "⚡ bash echo \"print('bye')\" > greet.py",
        APPROVAL + " yes",
        "Changed the greeting.",
        "⏺ done in",
    ])
    assert shown.count(APPROVAL) == 1, shown  # two read-only commands, no question
    assert (project / "greet.py").read_text() == "print('bye')\n"
    assert "print('hello')" in str(llm.requests[1]["messages"][-1]["content"])


@pytest.mark.skipif(bool(unavailable_reason()), reason=f"bwrap cannot run here: {unavailable_reason()}")
def test_a_command_the_sandbox_blocked_can_run_outside_after_asking(repl: SharedRepl) -> None:
    term = repl.term
    outside = Path(tempfile.mkdtemp(prefix="swecli-lift-", dir="/var/tmp"))
    target = outside / "installed.txt"
    repl.script(Reply(calls=[Call("bash", {"command": f"echo tool > {target}"})]), Reply(text="Installed."))
    try:
        term.line("install the tool")
        term.expect(APPROVAL)
        term.send("y")
        term.expect("Read-only file system")  # the reason, shown with the second question
        term.expect(LIFT)
        term.expect("Allow? [y]es / [n]o")
        term.send("y")
        term.expect("Installed.")
        term.expect("⏺ done in")
        term.prompt()
        assert target.read_text() == "tool\n"
        told = str(repl.requests[1]["messages"][-1]["content"])
        assert "the user allowed running it again outside the sandbox" in told
    finally:
        shutil.rmtree(outside, ignore_errors=True)
