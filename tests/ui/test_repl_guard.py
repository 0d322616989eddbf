"""The guard as a person meets it in the real REPL (pseudo-terminal, scripted LLM over HTTP, real bash, a
throwaway home): a destructive command asks in auto mode too, and its question has no "always" (the `a` key
does nothing there); a command the guard does not flag still asks in default mode, "always" included."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest

from swecli.config import SandboxConfig
from swecli.testing.server import Call, Reply, ScriptedLLM, Step
from tests.ui.harness import assert_in_order, shown_for

pytest.importorskip("pexpect")
pytestmark = pytest.mark.skipif(not hasattr(__import__("os"), "openpty"), reason="needs a pseudo-terminal")

ALWAYS = "Allow? [y]es / [n]o / [a]lways this session"
ONCE = "Allow? [y]es / [n]o"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "Documents").mkdir(parents=True)
    (home / "Documents" / "thesis.txt").write_text("four years of work\n")
    return home


@pytest.fixture
def start(start: Any, home: Path) -> Any:
    """The shared `start`, with no sandbox: only the guard stands between the model and the files."""
    (home / ".config" / "swecli").mkdir(parents=True, exist_ok=True)
    (home / ".config" / "swecli" / "config.toml").write_text('[sandbox]\nmode = "off"\n')
    return start


def test_default_mode_asks_for_everything_but_never_offers_always_for_a_flagged_command(
        start: Any, project: Path) -> None:
    (project / ".git").mkdir()
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    steps: list[Step] = [
        Reply(calls=[Call("bash", {"command": "rm -rf .git"})]),
        Reply(calls=[Call("bash", {"command": "touch made.txt"})]),
        Reply(text="Left the repository alone."),
    ]
    with ScriptedLLM(steps) as llm:
        term = start(llm)
        term.line("start over without git history")
        term.expect("⚡ bash rm -rf .git")
        term.expect("a git repository (.git: its history)")
        term.expect(ONCE)
        assert "[a]lways" not in term.since()
        term.send("a")  # not an answer to this question
        term.keys_read()  # read on its own: "a" and "n" in one read would be one key
        term.settle(0.5)
        assert "always" not in term.since()
        term.send("n")
        term.expect("Reason for the model")
        term.send("\r")
        term.expect("⚡ bash touch made.txt")  # not flagged, not read-only: asked, with "always" offered
        term.expect(ALWAYS)
        term.send("y")
        term.expect("Left the repository alone.")
        term.prompt()
        term.send("\x04")
        assert term.exit_status() == 0
    assert (project / ".git" / "HEAD").exists() and (project / "made.txt").exists()


def test_auto_mode_asks_for_a_flagged_command_and_runs_the_rest(project: Path, home: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """In process, the answers typed as lines: what asks in auto mode is the guard's (the keys at its question
    are the test above's)."""
    steps: list[Step] = [
        Reply(calls=[Call("bash", {"command": "echo made > made.txt"})]),
        Reply(calls=[Call("bash", {"command": "cd ~ && rm -rf Documents"})]),
        Reply(text="Kept your documents."),
    ]
    monkeypatch.setenv("HOME", str(home))  # `~` is the home holding Documents
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n\n"))  # no, and no reason
    with ScriptedLLM(steps) as llm:
        shown = shown_for(project, llm, "clean up", mode="auto", sandbox=SandboxConfig(mode="off"))
    assert_in_order(shown, [  # each, in this order
        "⚡ bash echo made > made.txt",
        "⚡ bash cd ~ && rm -rf Documents",
        "top-level folder of the home directory",
        ONCE + " no",
        "Reason for the model",
        "Kept your documents.",
    ])
    assert shown.count(ONCE) == 1 and ALWAYS not in shown, shown  # the first command ran without a question
    assert (project / "made.txt").read_text() == "made\n"
    assert (home / "Documents" / "thesis.txt").exists()
