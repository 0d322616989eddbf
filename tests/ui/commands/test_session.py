"""`/tokens` and the turn line when the server reports no usage: local counts, marked as estimates."""

from __future__ import annotations

from pathlib import Path

from swecli.messages import Usage
from swecli.testing.server import Reply, ScriptedLLM
from swecli.ui.commands.session import usage_table
from tests.ui.commands.test_registry import llm, make_repl, output

__all__ = ["llm"]  # the fixture


def test_tokens_and_the_turn_line_mark_local_counts(project: Path, llm: ScriptedLLM) -> None:
    repl = make_repl(project, llm)
    llm.add(Reply("Hello from a server without usage.", usage=False),
            Reply("Now with usage.", usage={"prompt_tokens": 2000, "completion_tokens": 5}))
    repl.submit("hi")
    first = output(repl)
    assert "↑ ~" in first and "(estimated)" in first.splitlines()[-1]
    assert "↑ 0 ↓ 0" not in first
    repl.submit("again")
    assert "(estimated)" not in output(repl).splitlines()[-1]
    repl.submit("/tokens")
    table = output(repl)
    assert "Session usage · 2 requests" in table
    assert "~ estimated: 1 of 2 requests were counted locally (the server reported no usage)" in table
    assert repl.session_usage.estimated_requests == 1 and repl.session_usage.input_tokens > 2000


def test_usage_table_shows_reasoning_tokens_when_reported() -> None:
    text = usage_table(Usage(input_tokens=100, output_tokens=50, reasoning_tokens=30, requests=1)).plain
    assert "    reasoning       30  (30)" in text and "estimated" not in text
