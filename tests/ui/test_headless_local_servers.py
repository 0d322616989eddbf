"""`swecli -p` against servers that behave like the real local ones (llama-server, llama-cpp-python):
the scripted server imitates what was seen of them (issue 25, item 10)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from swecli.testing.server import Call, Fail, Reply, ScriptedLLM, ServerInfo
from tests.helpers import swecli_in_process
from tests.ui.test_headless import run_swecli


def run_local(project: Path, llm: ScriptedLLM, *args: str, stdin: str | None = None,
              extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`swecli` pointed at a local OpenAI-compatible server by its base URL alone, with the model the server
    serves (its name picks the known-models window, as gemma's 131,072); in this process
    (`tests.helpers.swecli_in_process`), its stdin /dev/null or a pipe carrying `stdin`."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SWECLI_")}, **(extra_env or {})}
    return swecli_in_process(["--base-url", llm.base_url, "--model", llm.model, *args], project, env, stdin=stdin)


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


def log_records(project: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for log in sorted((project / ".swecli" / "logs").glob("*.jsonl")):
        records += [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return records


def test_a_chat_template_without_tools_is_said_once_and_the_tools_are_not_counted(project: Path) -> None:
    """llama-server with gemma's template (`chat_template_caps.supports_tools: false`) drops the tool schemas:
    the user is told once why no tool call can come back, and the meter matches the server's prompt count
    instead of counting ~3.7x (which calibration rejected, and which would compact at ~900 real tokens)."""
    with llama_server([Reply("I can only answer in text.")], supports_tools=False) as llm:
        out = run_swecli(project, llm, "-p", "read a.py")
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("chat template has no tools section") == 1 and "--jinja" in out.stderr
    records = log_records(project)
    meter = next(r["total_tokens"] for r in records if r["event"] == "context")
    server = next(r["tokens_in"] for r in records if r["event"] == "llm_call")
    assert 0.7 < meter / server < 1.4, (meter, server)


def test_a_template_with_tools_is_counted_as_before(project: Path) -> None:
    with llama_server([Reply("ok")], supports_tools=True) as llm:
        out = run_swecli(project, llm, "-p", "hi")
    assert "chat template" not in out.stderr
    records = log_records(project)
    meter = next(r["total_tokens"] for r in records if r["event"] == "context")
    server = next(r["tokens_in"] for r in records if r["event"] == "llm_call")
    assert 0.7 < meter / server < 1.4, (meter, server)


def test_a_window_learnt_from_an_overflow_is_logged_and_used_at_the_next_start(project: Path) -> None:
    """llama-cpp-python reports no window: the first start plans with the family's 131,072 and learns 4,096
    from the 400; later `context` records carry 4,096, and the next run starts with it (no failed request)."""
    # what llama-cpp-python says: the prompt (~2,400 tokens) and the max_tokens planned for 131,072 (8,192)
    steps = [Fail.context_overflow(requested=2_400 + 8_192, limit=4096, completion=8_192),
             Reply(calls=[Call("list_files", {})]),
             Reply("done")]
    with ScriptedLLM(steps, model="gemma-3-270m") as llm:
        out = run_local(project, llm, "-p", "list the files")
        assert out.returncode == 0, out.stderr
        assert "the server's context window is 4,096 tokens" in out.stderr
        windows = [r["window"] for r in log_records(project) if r["event"] == "context"]
        assert windows[0] == 131_072 and windows[-1] == 4096
        llm.add(Reply("hello again"))
        first_log = {path.name for path in (project / ".swecli" / "logs").glob("*.jsonl")}
        again = run_local(project, llm, "-p", "hi")
    assert again.returncode == 0, again.stderr
    assert llm.requests[-1]["max_tokens"] == 1024  # a quarter of 4,096, from the first request on
    # The second run's log (two runs within one second have log names that sort by their random suffix).
    (second_log,) = [path for path in (project / ".swecli" / "logs").glob("*.jsonl") if path.name not in first_log]
    (start,) = [r for r in map(json.loads, second_log.read_text().splitlines()) if r["event"] == "session_start"]
    assert start["context_window"] == 4096
    assert start["window_source"] == "server (its context-length error, cached)"


def test_a_server_too_slow_to_list_its_models_gets_a_sentence_not_named_none(project: Path) -> None:
    with ScriptedLLM(info=ServerInfo("llamacpp", window=4096, metadata_delay=0.8)) as llm:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("SWECLI_")}, "SWECLI_REQUEST_TIMEOUT": "0.2"}
        out = swecli_in_process(["--base-url", llm.base_url, "-p", "hi"], project, env)
    assert out.returncode == 2 and "did not answer within 0.5 s" in out.stderr and "--model NAME" in out.stderr
    assert "named none" not in out.stderr and "Traceback" not in out.stderr


def test_a_server_slow_to_list_its_models_is_waited_for_and_answers(project: Path) -> None:
    """A busy llama-server answering `/v1/models` after 0.8 s (over the 0.5 s an unconfigured port gets): `-p`
    says what it waits for and then runs the task with the model the server serves (before: start-up failed
    with "named none"). The note comes at once (`wait_notice` 0), not after the 2 s a user waits first: a note
    due after a delay would race the answer (`tests/llm/test_discovery.py` checks the delay). The window is not
    asked for: that probe would wait for the slow server twice more (`/v1/models`, `/props`; `test_window.py`)."""
    info = ServerInfo("llamacpp", window=4096, metadata_delay=0.8)
    with ScriptedLLM([Reply("hello")], model="gemma-3-270m", info=info) as llm:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("SWECLI_")}, "SWECLI_WAIT_NOTICE": "0",
               "SWECLI_PROBE_CONTEXT_WINDOW": "false"}
        out = swecli_in_process(["--base-url", llm.base_url, "-p", "hi"], project, env)
        waited_for = f"waiting for {llm.base_url}/models"
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "hello" and llm.requests[0]["model"] == "gemma-3-270m"
    assert waited_for in out.stderr and "named none" not in out.stderr
    assert llm.metadata_requests == ["GET /v1/models"]  # asked once, and waited for


TEN_THOUSAND_TOKENS = "Summarize this text in one line: " + "the quick brown fox jumps over the lazy dog " * 1_100


def test_a_task_larger_than_the_window_is_refused_with_both_sizes(project: Path) -> None:
    """A typed task that cannot fit a 4,096-token llama-server is not clipped to its first 200 tokens behind
    the user's back: nothing is sent, and the error says how large it is, the window, and what to do."""
    with llama_server([]) as llm:
        out = run_local(project, llm, "-p", TEN_THOUSAND_TOKENS)
    assert out.returncode == 1 and llm.requests == []
    error = out.stderr.strip().splitlines()[-1]
    assert error.startswith("error: the task is ~") and "4,096-token context window (server (llama.cpp /props" in error
    assert "save the text to a file" in error and "cat FILE | swecli -p" in error


def test_a_task_that_outgrows_a_window_learnt_from_an_overflow_is_refused_not_truncated(project: Path) -> None:
    """llama-cpp-python (no window reported): the first request fails with the server's 4,096; the task alone
    does not fit that, so the turn stops there with the sizes (before: `truncate (overflow): 10,294 -> 2,607`
    and an answer about the first 200 tokens)."""
    with ScriptedLLM([Fail.context_overflow(requested=10_294, limit=4096)], model="gemma-3-270m") as llm:
        out = run_local(project, llm, "-p", TEN_THOUSAND_TOKENS, "--output-format", "json")
    data = json.loads(out.stdout)
    assert out.returncode == 1 and len(llm.requests) == 1
    assert data["stop_reason"] == "error" and "4,096-token context window" in data["error"]
    assert "truncate" not in out.stderr and data["compactions"] == 0


def test_piped_input_too_large_for_a_small_window_is_saved_and_previewed_to_fit(project: Path) -> None:
    """6,000 tokens piped to a 4,096-token server (under the 8,000-token limit that suits a large window):
    saved to a file with a preview that fits, so the request fits and the model can read the rest."""
    piped = "".join(f"{i:05d} the quick brown fox jumps over the lazy dog\n" for i in range(600))
    with llama_server([Reply("It is a list of foxes.")]) as llm:
        out = run_local(project, llm, "-p", "what is this?", stdin=piped)
    assert out.returncode == 0, out.stderr
    assert "half of what the 4,096-token context window leaves" in out.stderr
    messages = llm.requests[0]["messages"]
    attached = next(m["content"] for m in messages if "Input piped to swecli" in str(m["content"]))
    assert "too large to include whole" in attached and "00000 the quick" in attached and "00599 the quick" in attached
    saved = project / next(w.strip("`") for w in attached.split() if "tool_results/stdin-" in w).rstrip("`];,")
    assert saved.read_text() == piped
    assert len(json.dumps(messages)) // 4 < 4096 - 1024  # the whole request fits with the reply's room


NO_JINJA = Fail(500, {"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}})
"""What llama-server --no-jinja (build 0c1e570) answered every request that offered tools: /props still said
supports_tools false, and the streamed and unstreamed requests alike got this 500."""


def test_a_llama_server_without_jinja_fails_at_once_with_the_flag_to_change(project: Path) -> None:
    """Not retried as an outage (five retries, ~25 s, then "unavailable"): one request, one sentence naming
    --no-jinja and what to start the server with."""
    with llama_server([NO_JINJA], supports_tools=False) as llm:  # a second request would find no step
        out = run_swecli(project, llm, "-p", "read a.py")
    assert out.returncode == 1, out.stderr
    assert len(llm.requests) == 1
    last = out.stderr.strip().splitlines()[-1]
    assert "tools param requires --jinja flag: llama-server is running without Jinja chat templates" in last
    assert "restart it without --no-jinja" in last and "unavailable" not in out.stderr
