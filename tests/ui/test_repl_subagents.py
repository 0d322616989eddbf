"""A sub-agent in the real REPL (pty): its progress folded under the task call, then Esc cancels it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swecli.testing.server import Call, Reply, ScriptedLLM
from tests.delegation.scripts import Router
from tests.ui.harness import ESC, spawn_swecli

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")


def test_child_progress_is_folded_under_the_call_and_esc_cancels_it(project: Path, tmp_path: Path) -> None:
    (project / "settings.py").write_text("DATABASE_URL = 'x'\n")
    slow = Reply("Still looking through the rest of the code base, file by file. " * 20, chunk=4, delay=0.2)
    router = Router(
        parent=[Reply(calls=[Call("task", {"description": "Find DB config", "prompt": "Find the database URL."})])],
        children={"database URL": [Reply(calls=[Call("read_file", {"path": "settings.py"})]), slow]})
    with ScriptedLLM(router.steps(), strict=False) as llm:
        term = spawn_swecli(llm.base_url, project, tmp_path / "home", "--mode", "auto")
        try:
            term.prompt()
            term.line("where is the database configured?")
            term.expect("🤖 task explore: Find DB config")
            term.expect("explore: 1 tool use")  # the live region, under the call
            term.expect("📖 read settings.py")
            term.send(ESC)
            term.expect("⎿  interrupted by user")
            term.expect("⏺ interrupted after")
            term.prompt()
            scrollback = term.text
            term.send("\x04")
            assert term.exit_status() == 0
        finally:
            term.close()
    # Only the outcome stays in the scrollback; the child's own actions were shown in the live region only.
    assert scrollback.count("🤖 task explore: Find DB config") == 1
    # The parent's history says what happened to the child.
    transcript = next((project / ".swecli" / "sessions").glob("*.jsonl")).read_text()
    assert "[sub-agent explore was cancelled by the user" in transcript
