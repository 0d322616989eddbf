"""End to end: the real `swecli -p` process against the scripted LLM server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from swecli.testing.server import Call, Fail, Reply, ScriptedLLM, Step


def run_swecli(project: Path, llm: ScriptedLLM, *args: str, wire: str = "openai",
               extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SWECLI_")}, **(extra_env or {})}
    provider = ["--provider", "openai-compatible"] if wire == "openai" else ["--provider", "anthropic"]
    if wire == "anthropic":
        env["ANTHROPIC_API_KEY"] = "sk-ant-test-0000000000"
    return subprocess.run(
        [sys.executable, "-m", "swecli", *provider, "--base-url", llm.base_url, "--model", "scripted-model", *args],
        cwd=project, env=env, text=True, capture_output=True, timeout=120, stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def sample(project: Path) -> Path:
    (project / "src").mkdir()
    (project / "src" / "greet.py").write_text('def greet(name):\n    return "Helo, " + name\n')
    (project / "README.md").write_text("# sample\n")
    return project


def coding_task(wire: str = "openai") -> list[Reply]:
    return [
        Reply(reasoning="Let me look around.", calls=[Call("list_files", {"path": "."})]),
        Reply(calls=[Call("grep", {"pattern": "Helo"})]),
        Reply(calls=[Call("read_file", {"path": "src/greet.py"})]),
        Reply("Fixing the typo.", calls=[Call("edit_file", {"path": "src/greet.py", "old_string": '"Helo, "',
                                                          "new_string": '"Hello, "'})]),
        Reply(calls=[Call("bash", {"command": "python3 -c 'import sys; sys.path.insert(0, \"src\"); "
                                              "from greet import greet; print(greet(\"Ada\"))'"})]),
        Reply("Fixed the greeting typo in src/greet.py; it now prints `Hello, Ada`."),
    ]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_auto_mode_completes_a_coding_task(sample: Path, wire: str) -> None:
    with ScriptedLLM(coding_task(), wire=wire) as llm:  # type: ignore[arg-type]
        out = run_swecli(sample, llm, "-p", "fix the greeting typo", "--mode", "auto", wire=wire)
    assert out.returncode == 0, out.stderr
    assert (sample / "src" / "greet.py").read_text() == 'def greet(name):\n    return "Hello, " + name\n'
    assert "Fixed the greeting typo" in out.stdout
    assert "> edit_file src/greet.py" in out.stderr  # progress goes to stderr
    last = llm.requests[-1]
    text = json.dumps(last["messages"])
    assert "Hello, Ada" in text  # the bash result reached the model
    assert "greet.py" in text and "Helo" in text  # grep and read results too


def test_plan_mode_refuses_edits(sample: Path) -> None:
    steps = [Reply(calls=[Call("edit_file", {"path": "src/greet.py", "old_string": "Helo", "new_string": "Hello"})]),
             Reply("Plan: change Helo to Hello in src/greet.py.")]
    with ScriptedLLM(steps) as llm:
        out = run_swecli(sample, llm, "-p", "fix it", "--mode", "plan")
    assert out.returncode == 0
    assert "Helo" in (sample / "src" / "greet.py").read_text()
    tool_msg = llm.requests[1]["messages"][-1]
    assert tool_msg["role"] == "tool" and "plan mode" in tool_msg["content"]


def test_default_mode_without_tty_refuses_instead_of_hanging(sample: Path) -> None:
    steps = [Reply(calls=[Call("bash", {"command": "touch made-it"})]), Reply("I could not run it.")]
    with ScriptedLLM(steps) as llm:
        out = run_swecli(sample, llm, "-p", "touch a file")
    assert out.returncode == 0
    assert not (sample / "made-it").exists()
    assert "--mode auto" in llm.requests[1]["messages"][-1]["content"]


def test_json_output(sample: Path) -> None:
    steps = [Reply(calls=[Call("read_file", {"path": "README.md"})]), Reply("It is a sample.")]
    with ScriptedLLM(steps) as llm:
        out = run_swecli(sample, llm, "-p", "what is this?", "--output-format", "json")
    data = json.loads(out.stdout)
    assert data["result"] == "It is a sample." and data["turns"] == 2 and data["tool_calls"] == 1
    assert data["usage"]["input_tokens"] > 0 and data["error"] is None and out.returncode == 0
    assert "session_id" in data


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_server_without_usage_gets_estimated_counts_everywhere(sample: Path, wire: str) -> None:
    """llama.cpp ignores include_usage: the JSON usage and the log carry local counts, marked."""
    steps = [Reply(calls=[Call("read_file", {"path": "README.md"})], usage=False), Reply("A sample.", usage=False)]
    with ScriptedLLM(steps, wire=wire) as llm:  # type: ignore[arg-type]
        out = run_swecli(sample, llm, "-p", "what is this?", "--output-format", "json", wire=wire)
    usage = json.loads(out.stdout)["usage"]
    assert out.returncode == 0, out.stderr
    assert usage["estimated"] is True and usage["estimated_requests"] == usage["requests"] == 2
    assert usage["input_tokens"] > 1_000 and usage["output_tokens"] > 5  # the system prompt and tools alone
    log = next((sample / ".swecli" / "logs").glob("*.jsonl"))
    calls = [json.loads(line) for line in log.read_text().splitlines() if '"llm_call"' in line]
    assert [c["usage_reported"] for c in calls] == [False, False] and all(c["tokens_in"] > 0 for c in calls)


def test_an_empty_answer_prints_no_blank_line_but_says_so(sample: Path) -> None:
    with ScriptedLLM([Reply("")]) as llm:
        out = run_swecli(sample, llm, "-p", "hello?")
    assert out.returncode == 0 and out.stdout == ""
    assert "warning: the model returned an empty answer (no text and no tool call)" in out.stderr


def test_an_answer_cut_at_the_output_limit_is_printed_with_a_warning(sample: Path) -> None:
    with ScriptedLLM([Reply("Half of the answ", finish_reason="length")]) as llm:
        out = run_swecli(sample, llm, "-p", "explain", "--output-format", "json")
    data = json.loads(out.stdout)
    assert out.returncode == 0 and data["stop_reason"] == "output_limit" and data["result"] == "Half of the answ"


def test_stream_json_output(sample: Path) -> None:
    steps = [Reply(calls=[Call("read_file", {"path": "README.md"})]), Reply("Done reading.")]
    with ScriptedLLM(steps) as llm:
        out = run_swecli(sample, llm, "-p", "read it", "--output-format", "stream-json")
    events = [json.loads(line) for line in out.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert "tool_started" in types and "tool_finished" in types and "text_delta" in types
    assert events[-1]["type"] == "result" and events[-1]["result"] == "Done reading."


def test_provider_error_exits_1_with_a_clear_message(sample: Path) -> None:
    with ScriptedLLM([Fail.unauthorized()]) as llm:
        out = run_swecli(sample, llm, "-p", "hi")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "rejected" in out.stderr.lower()


def test_iteration_limit_exits_2(sample: Path) -> None:
    steps = [Reply(calls=[Call("list_files", {})]), Reply(calls=[Call("list_files", {})])]
    with ScriptedLLM(steps) as llm:
        out = run_swecli(sample, llm, "-p", "loop", "--max-iterations", "2")
    assert out.returncode == 2 and "2 iterations" in out.stderr


def big_module(name: str, lines: int = 400) -> str:
    return "".join(f"def {name}_{i}(x):\n    return x * {i}  # {name} helper number {i}\n" for i in range(lines // 2))


def test_auto_compaction_fires_in_a_real_session(project: Path) -> None:
    (project / "a.py").write_text(big_module("alpha"))
    (project / "b.py").write_text(big_module("beta"))
    steps: list[Step] = [Reply(calls=[Call("read_file", {"path": "a.py"})]),
                         Reply(calls=[Call("read_file", {"path": "b.py"})]),
                         Reply("## Current task\nReading a.py and b.py."),  # the summary request
                         Reply("Both modules define numbered helpers.")]
    with ScriptedLLM(steps) as llm:
        out = run_swecli(project, llm, "-p", "what do the two modules define? answer in one line",
                         "--mode", "auto", "--context-limit", "12000",
                         extra_env={"SWECLI_MAX_TOKENS": "1000", "SWECLI_CONTEXT__BACKGROUND_COMPACTION": "false"})
    assert out.returncode == 0, out.stderr
    assert "summarize (auto)" in out.stderr
    final = llm.requests[3]["messages"]
    assert any(m["content"] == "what do the two modules define? answer in one line" for m in final)  # verbatim
    assert any("[swecli: compacted context]" in str(m["content"]) for m in final)
    called = {c["id"] for m in final if m["role"] == "assistant" for c in m.get("tool_calls", [])}
    answered = {m["tool_call_id"] for m in final if m["role"] == "tool"}
    assert called == answered  # no call separated from its result


def test_context_overflow_compacts_and_retries(sample: Path) -> None:
    steps: list[Step] = [Reply(calls=[Call("read_file", {"path": "src/greet.py"})]),
                         Fail.context_overflow(), Reply("Done after the retry.")]
    with ScriptedLLM(steps) as llm:
        out = run_swecli(sample, llm, "-p", "read greet.py", "--mode", "auto",
                         extra_env={"SWECLI_CONTEXT__STRATEGY": "truncate"})
    assert out.returncode == 0, out.stderr
    assert "Done after the retry." in out.stdout and "(overflow)" in out.stderr
    assert len(llm.requests[2]["messages"]) <= len(llm.requests[1]["messages"])


def test_a_summary_made_in_the_background_is_counted_in_the_json_result_and_the_log(project: Path) -> None:
    """One server answers both the loop and the background summary (by what each request is), so the
    order in which the two threads reach it does not matter."""
    from swecli.context.compaction import SUMMARY_MARKER, SUMMARY_SYSTEM

    for name in "abcdefgh":
        (project / f"{name}.py").write_text(big_module(name, 120))
    reads = iter("abcdefgh")

    def answer(body: dict[str, object]) -> Step:
        messages = body["messages"]
        assert isinstance(messages, list)
        if messages[0]["content"] == SUMMARY_SYSTEM:
            return Reply("### Current task and state\nReading the modules one by one.")
        if any(SUMMARY_MARKER in str(m["content"]) for m in messages):
            return Reply("Each module defines numbered helpers.")
        return Reply(calls=[Call("read_file", {"path": f"{next(reads)}.py"})])

    with ScriptedLLM([answer] * 12, strict=False) as llm:
        out = run_swecli(project, llm, "-p", "what do the modules define? read them one by one", "--mode", "auto",
                         "--context-limit", "9000", "--output-format", "json", extra_env={"SWECLI_MAX_TOKENS": "500"})
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["result"] == "Each module defines numbered helpers."
    assert result["compactions"] == 1 and isinstance(result["compaction_wait"], float)
    log = next((project / ".swecli" / "logs").glob("*.jsonl")).read_text().splitlines()
    records = [json.loads(line) for line in log]
    summaries = [r for r in records if r["event"] == "background_summary"]
    assert [r["phase"] for r in summaries] == ["started", "used"] and summaries[-1]["used"] is True
    assert summaries[-1]["duration"] >= 0
    (compaction,) = [r for r in records if r["event"] == "compaction"]
    assert compaction["background"] is True and "waited" in compaction
    assert records[-1]["event"] == "stats" and records[-1]["compactions"] == 1
