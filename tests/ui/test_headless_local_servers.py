"""`swecli -p` against servers that behave like the real local ones (llama-server, llama-cpp-python):
the scripted server imitates what was seen of them (issue 25, item 10)."""

from __future__ import annotations

import json
from pathlib import Path

from swecli.testing.server import Call, Reply, ScriptedLLM
from tests.ui.test_headless import run_swecli


def test_a_model_repeating_a_refused_call_is_stopped_after_three_tries(project: Path) -> None:
    """Default mode without a terminal: the same refused `bash` call a third time ends the turn (exit 3),
    instead of running on to max_iterations."""
    same = Call("bash", {"command": "touch made-it"})
    steps = [Reply(calls=[same]), Reply(calls=[Call("bash", {"command": "touch  made-it".replace("  ", " ")})]),
             Reply(calls=[same])]
    with ScriptedLLM(steps) as llm:  # a fourth request would fail the test (no step left)
        out = run_swecli(project, llm, "-p", "touch a file", "--output-format", "json")
    data = json.loads(out.stdout)
    assert out.returncode == 3, out.stderr
    assert data["stop_reason"] == "denied" and data["turns"] == 3
    assert "asked 3 times for the same bash call" in data["result"]
    assert len(data["permission_denials"]) == 3 and not (project / "made-it").exists()


def test_refused_calls_in_a_row_stop_the_turn_in_text_mode_too(project: Path) -> None:
    steps = [Reply(calls=[Call("write_file", {"path": f"f{i}.txt", "content": "x"})]) for i in range(5)]
    with ScriptedLLM(steps) as llm:
        out = run_swecli(project, llm, "-p", "write files")
    assert out.returncode == 3, out.stderr
    assert "the model's last 5 tool calls were all refused" in out.stderr
    assert "5 tool calls were refused" in out.stderr.splitlines()[-1]  # and how to allow them, as before
    assert len(llm.requests) == 5


def test_a_refusal_followed_by_other_work_goes_on(project: Path) -> None:
    """Refusals that are not repeated, with real work between them, do not stop the turn."""
    steps = [Reply(calls=[Call("bash", {"command": "touch a"})]), Reply(calls=[Call("list_files", {})]),
             Reply(calls=[Call("bash", {"command": "touch b"})]), Reply(calls=[Call("list_files", {})]),
             Reply("I cannot write here.")]
    with ScriptedLLM(steps) as llm:
        out = run_swecli(project, llm, "-p", "touch files")
    assert out.returncode == 3 and out.stdout.strip() == "I cannot write here."
