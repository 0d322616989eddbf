"""What the REPL (scripted LLM over HTTP) shows of text it did not write: the model's answers as written
(angle brackets included), a long output's preview, and, in the real REPL in a pseudo-terminal, a tool's
output with its control sequences made visible instead of obeyed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swecli.testing.server import Call, Reply, ScriptedLLM, Step
from tests.ui.harness import SharedRepl, assert_in_order, shown_for

pytest.importorskip("pexpect")
pytestmark = pytest.mark.skipif(not hasattr(__import__("os"), "openpty"), reason="needs a pseudo-terminal")


def test_an_answer_with_angle_brackets_is_shown_as_written(project: Path) -> None:
    """In process: how an answer is rendered needs no terminal (what a terminal is sent is the next test's)."""
    answer = ("<details>\n<summary>The cause</summary>\n\nThe cast is unchecked.\n</details>\n\n"
              "Return List<String> from <T> parse(), one per line<br/>then stop.")
    with ScriptedLLM([Reply(text=answer)]) as llm:
        shown = shown_for(project, llm, "why does the cast fail?")
    assert_in_order(shown, [  # each, in this order
        "<details>",
        "<summary>The cause</summary>",
        "The cast is unchecked.",
        "</details>",
        "Return List<String> from <T> parse(), one per line<br/>then stop.",
    ])


def test_escape_sequences_a_command_prints_are_shown_not_obeyed(repl: SharedRepl) -> None:
    term = repl.term
    command = r"printf '\033]0;pwned\007\033[2J\033[31mred\033[0m done\n'"
    repl.script(Reply(calls=[Call("bash", {"command": command})]), Reply(text="It printed escape \x1b[2Jcodes."))
    term.line("/mode auto")
    term.expect("Mode: auto")
    term.prompt()
    term.line("run the printf")
    start_of_turn = len(term.raw)
    term.expect(r"\x1b]0;pwned\x07\x1b[2Jred done")  # the result preview, escaped
    term.expect(r"It printed escape \x1b[2Jcodes.")  # the model's own text too
    term.prompt()
    shown = term.raw[start_of_turn:]
    assert "\x1b]0;" not in shown and "\x1b[2J" not in shown and "\x07" not in shown
    sent = tool_messages(repl.requests[1])[0]["content"]
    assert sent.startswith("\\x1b]0;pwned\\x07\\x1b[2Jred done")  # colour codes dropped, the rest escaped
    assert "\x1b" not in sent


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def test_a_cut_outputs_preview_counts_what_the_model_is_told(project: Path) -> None:
    steps: list[Step] = [Reply(calls=[Call("bash", {"command": "seq 1 200000"})]), Reply(text="Counted.")]
    with ScriptedLLM(steps) as llm:  # in process: a preview's count needs no terminal
        shown = shown_for(project, llm, "count to 200000")
    at = shown.index("… +199,997 lines")  # of the whole output, not of the part the model got inline
    assert at < shown.index("199998", at) < shown.index("200000", at) < shown.index("Counted.", at)
    assert "200,000 lines" in tool_messages(llm.requests[1])[0]["content"]
