"""`swecli -p` against servers that behave like the real local ones (llama-server, llama-cpp-python):
the scripted server imitates what was seen of them (issue 25, item 10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swecli.testing.server import Call, Reply, ScriptedLLM, ServerInfo
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


def llama_server(steps: list[Reply], window: int = 4096, **info: object) -> ScriptedLLM:
    """A llama-server with `-c window`: `/props` reports it (and what else `info` says)."""
    return ScriptedLLM(steps, model="gemma-3-270m", info=ServerInfo("llamacpp", window=window, **info))  # type: ignore[arg-type]


def test_the_output_limit_warning_names_what_was_sent_and_what_limited_it(project: Path) -> None:
    """A 4,096-token window caps max_tokens at 1,024 whatever max_tokens says (8,192): the warning says
    1,024 and that the window is the limit, not "raise max_tokens"."""
    with llama_server([Reply("Half of the answ", finish_reason="length")]) as llm:
        out = run_swecli(project, llm, "-p", "explain")
    assert llm.requests[0]["max_tokens"] == 1024
    warning = next(line for line in out.stderr.splitlines() if "output limit" in line)
    assert "max_tokens 1,024: the configured 8,192 is capped at a quarter of the 4,096-token context window" in warning
    assert "larger context window (llama-server -c" in warning and "raise max_tokens" not in warning


def test_the_warning_names_max_tokens_when_it_was_the_limit(project: Path) -> None:
    with llama_server([Reply("Half of the answ", finish_reason="length")], window=32_768) as llm:
        out = run_swecli(project, llm, "-p", "explain", extra_env={"SWECLI_MAX_TOKENS": "700"})
    assert llm.requests[0]["max_tokens"] == 700
    assert "cut at the output limit (max_tokens 700); ask it to continue, or raise max_tokens" in out.stderr


@pytest.mark.parametrize(("window", "max_tokens"), [(4096, 1024), (8192, 2048)])
def test_thinking_on_an_openai_compatible_server_reserves_no_budget(project: Path, window: int,
                                                                    max_tokens: int) -> None:
    """The OpenAI wire sends an effort word, not a budget: max_tokens gets the whole reply room and the effort
    goes with it (before: 4k dropped the effort, 8k sent 512 for a budget never sent)."""
    with llama_server([Reply("ok")], window=window) as llm:
        out = run_swecli(project, llm, "-p", "hi", "--thinking", "high")
    assert out.returncode == 0, out.stderr
    assert llm.requests[0]["max_tokens"] == max_tokens and llm.requests[0]["reasoning_effort"] == "high"
