"""`/thinking` on an in-process REPL against the scripted server (`/model` and `/mode` are covered in
test_registry)."""

from __future__ import annotations

from pathlib import Path

from swecli.models.thinking import Thinking
from swecli.testing.server import Reply, ScriptedLLM
from tests.ui.commands.test_registry import llm, make_repl, output

__all__ = ["llm"]  # the fixture


def test_thinking_command_shows_sets_and_refuses(project: Path, llm: ScriptedLLM) -> None:
    repl = make_repl(project, llm)
    repl.submit("/thinking")
    assert "Thinking: off" in output(repl) and "/thinking on|off|low|medium|high|BUDGET" in output(repl)
    repl.submit("/thinking on")
    assert repl.agent.thinking == Thinking.parse("on")
    # scripted-model on an OpenAI-compatible server is not a known reasoning model: say that nothing is sent.
    said = " ".join(output(repl).split())
    assert said.endswith("Thinking: on, but scripted-model is not a known reasoning model, so nothing is sent "
                         "(name an effort, e.g. `high`, to send reasoning_effort anyway)")
    repl.submit("/thinking high")
    assert output(repl).endswith("Thinking: on: reasoning_effort high")
    llm.add(Reply("Thought about it."))
    repl.submit("think hard")
    assert llm.requests[-1]["reasoning_effort"] == "high"
    repl.submit("/thinking 12")
    assert output(repl).endswith("a thinking budget must be at least 1024 tokens (got 12).")
    assert repl.agent.thinking == Thinking.parse("high")  # a bad value changes nothing
    repl.submit("/thinking off")
    assert output(repl).endswith("Thinking: off") and not repl.agent.thinking.on
