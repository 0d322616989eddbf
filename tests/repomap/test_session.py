"""The map where it pays in a real session: the memory block (opt-in), /init's request, the tool schema."""

from __future__ import annotations

from pathlib import Path

from swecli.memory.init import prepare_init_request
from swecli.testing.server import Reply, ScriptedLLM
from tests.context.test_mechanisms_e2e import session


def test_ranked_map_in_the_memory_block_is_the_same_every_turn(pyproject: Path) -> None:
    with ScriptedLLM([Reply("one"), Reply("two")]) as llm:
        s = session(pyproject, llm, repo_map_tokens=400)
        s.run("first")
        (pyproject / "src/shop/late.py").write_text("def added_later():\n    pass\n")
        s.run("second")
        s.close()
    systems = [body["messages"][0]["content"] for body in llm.requests]
    assert "## Repository map" in systems[0] and "class Money:1 (add)" in systems[0]
    assert systems[0] == systems[1] and "added_later" not in systems[1]  # fixed for the session
    assert any(t["function"]["name"] == "repo_map" for t in llm.requests[0]["tools"])


def test_map_is_off_by_default(pyproject: Path) -> None:
    with ScriptedLLM([Reply("ok")]) as llm:
        s = session(pyproject, llm)
        s.run("hello")
        s.close()
    assert "## Repository map" not in llm.requests[0]["messages"][0]["content"]


def test_init_request_carries_the_central_files(pyproject: Path) -> None:
    request = prepare_init_request(pyproject)
    text = request.messages[0].content
    assert "## Repository map" in text and "Entry points: src/shop/cli.py" in text
    assert "class Money:1 (add)" in text
