"""What the real REPL (pseudo-terminal, scripted LLM over HTTP) shows of text it did not write: the model's
answers as written (angle brackets included), and a tool's output with its control sequences made visible
instead of obeyed."""

from __future__ import annotations

from typing import Any

import pytest

from swecli.testing.server import Call, Reply, ScriptedLLM, Step

pytest.importorskip("pexpect")
pytestmark = pytest.mark.skipif(not hasattr(__import__("os"), "openpty"), reason="needs a pseudo-terminal")


def test_an_answer_with_angle_brackets_is_shown_as_written(start: Any) -> None:
    answer = ("<details>\n<summary>The cause</summary>\n\nThe cast is unchecked.\n</details>\n\n"
              "Return List<String> from <T> parse(), one per line<br/>then stop.")
    steps: list[Step] = [Reply(text=answer)]
    with ScriptedLLM(steps) as llm:
        term = start(llm)
        term.line("why does the cast fail?")
        term.expect("<details>")
        term.expect("<summary>The cause</summary>")
        term.expect("The cast is unchecked.")
        term.expect("</details>")
        term.expect("Return List<String> from <T> parse(), one per line<br/>then stop.")
        term.prompt()


def test_escape_sequences_a_command_prints_are_shown_not_obeyed(start: Any) -> None:
    command = r"printf '\033]0;pwned\007\033[2J\033[31mred\033[0m done\n'"
    steps: list[Step] = [Reply(calls=[Call("bash", {"command": command})]),
                         Reply(text="It printed escape \x1b[2Jcodes.")]
    with ScriptedLLM(steps) as llm:
        term = start(llm, "--mode", "auto")
        term.line("run the printf")
        start_of_turn = len(term.raw)
        term.expect(r"\x1b]0;pwned\x07\x1b[2Jred done")  # the result preview, escaped
        term.expect(r"It printed escape \x1b[2Jcodes.")  # the model's own text too
        term.prompt()
        shown = term.raw[start_of_turn:]
        assert "\x1b]0;" not in shown and "\x1b[2J" not in shown and "\x07" not in shown
    sent = tool_messages(llm.requests[1])[0]["content"]
    assert sent.startswith("\\x1b]0;pwned\\x07\\x1b[2Jred done")  # colour codes dropped, the rest escaped
    assert "\x1b" not in sent


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def test_a_cut_outputs_preview_counts_what_the_model_is_told(start: Any) -> None:
    steps: list[Step] = [Reply(calls=[Call("bash", {"command": "seq 1 200000"})]), Reply(text="Counted.")]
    with ScriptedLLM(steps) as llm:
        term = start(llm)
        term.line("count to 200000")
        term.expect("… +199,997 lines")  # of the whole output, not of the part the model got inline
        term.expect("199998")
        term.expect("200000")
        term.expect("Counted.")
        term.prompt()
    assert "200,000 lines" in tool_messages(llm.requests[1])[0]["content"]
