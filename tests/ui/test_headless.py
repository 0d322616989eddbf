"""End to end: the real `swecli -p` process against the scripted LLM server."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from swecli.testing.server import Call, Fail, Reply, ScriptedLLM, Step
from tests.helpers import needs_sandbox, swecli_in_process


def run_swecli(project: Path, llm: ScriptedLLM, *args: str, wire: str = "openai",
               extra_env: dict[str, str] | None = None, stdin: str | None = None,
               base_url: str | None = None, process: bool = False) -> subprocess.CompletedProcess[str]:
    """`swecli` run in this process (`tests.helpers.swecli_in_process`: what `-p` does and prints is the
    same), its stdin /dev/null or a pipe carrying `stdin`; with `process`, a real subprocess that reads
    `stdin` from a pipe as its fd 0 (`cat log | swecli -p ...` as a shell runs it)."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SWECLI_")}, **(extra_env or {})}
    provider = ["--provider", "openai-compatible"] if wire == "openai" else ["--provider", "anthropic"]
    if wire == "anthropic":
        env["ANTHROPIC_API_KEY"] = "sk-ant-test-0000000000"
    argv = [*provider, "--base-url", base_url or llm.base_url, "--model", "scripted-model", *args]
    if not process:
        return swecli_in_process(argv, project, env, stdin=stdin)
    return subprocess.run([sys.executable, "-m", "swecli", *argv], cwd=project, env=env, text=True,
                          capture_output=True, timeout=120, input=stdin,
                          stdin=subprocess.DEVNULL if stdin is None else None)


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


@needs_sandbox
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


@needs_sandbox
def test_default_mode_without_tty_refuses_instead_of_hanging(sample: Path) -> None:
    steps = [Reply(calls=[Call("bash", {"command": "touch made-it"})]), Reply("I could not run it.")]
    with ScriptedLLM(steps) as llm:
        out = run_swecli(sample, llm, "-p", "touch a file")
    assert not (sample / "made-it").exists()
    assert "--mode auto" in llm.requests[1]["messages"][-1]["content"]
    # The model says "done", but the run did not do what was asked: the last line says so, and the exit is not 0.
    assert out.returncode == 3
    assert out.stdout.strip() == "I could not run it."
    assert out.stderr.splitlines()[-1] == ("swecli: 1 tool call was refused (bash touch made-it): it needs approval "
                                           "and no one was there to give it. Re-run with --mode auto to allow "
                                           "changes, or in a terminal to approve each one.")


def test_json_output(sample: Path) -> None:
    steps = [Reply(calls=[Call("read_file", {"path": "README.md"})]), Reply("It is a sample.")]
    with ScriptedLLM(steps) as llm:
        out = run_swecli(sample, llm, "-p", "what is this?", "--output-format", "json")
    data = json.loads(out.stdout)
    assert data["result"] == "It is a sample." and data["turns"] == 2 and data["tool_calls"] == 1
    assert data["usage"]["input_tokens"] > 0 and data["error"] is None and out.returncode == 0
    assert "session_id" in data
    # Claude Code's fields, which scripts are written against (`duration`, in seconds, stays as it was).
    assert data["subtype"] == "success" and data["is_error"] is False
    assert isinstance(data["duration_ms"], int) and 0 < data["duration_ms"] == round(data["duration"] * 1000)
    assert 0 < data["duration_api_ms"] <= data["duration_ms"]


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
    init = events[0]  # first, before anything happens: Claude Code's init event
    assert (init["type"], init["subtype"], init["model"], init["cwd"]) == ("system", "init", "scripted-model",
                                                                           str(sample.resolve()))
    assert init["session_id"] == events[-1]["session_id"] and init["permission_mode"] == "default"
    assert {"read_file", "edit_file", "bash", "grep"} <= set(init["tools"]) and init["mcp_servers"] == []


def test_provider_error_exits_1_with_a_clear_message(sample: Path) -> None:
    with ScriptedLLM([Fail.unauthorized()]) as llm:
        out = run_swecli(sample, llm, "-p", "hi")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "rejected" in out.stderr.lower()


def test_iteration_limit_exits_2(sample: Path) -> None:
    steps = [Reply(calls=[Call("list_files", {})]), Reply(calls=[Call("list_files", {})])]
    with ScriptedLLM(steps) as llm:
        out = run_swecli(sample, llm, "-p", "loop", "--max-iterations", "2")
    assert out.returncode == 2 and "2 iterations" in out.stderr and out.stdout == ""  # not an answer


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


@pytest.mark.parametrize("reported", [True, False])
def test_the_summary_request_is_part_of_the_spend(project: Path, reported: bool) -> None:
    """The json usage, the compaction's log record and the stats count the summary request: as the server
    reported it, or counted locally (and marked estimated) when the server sent no usage (llama.cpp)."""
    (project / "a.py").write_text(big_module("alpha"))
    (project / "b.py").write_text(big_module("beta"))
    usage: dict[str, int] | bool = {"prompt_tokens": 100, "completion_tokens": 10} if reported else False
    summary_usage: dict[str, int] | bool = {"prompt_tokens": 5000, "completion_tokens": 300} if reported else False
    steps: list[Step] = [Reply(calls=[Call("read_file", {"path": "a.py"})], usage=usage),
                         Reply(calls=[Call("read_file", {"path": "b.py"})], usage=usage),
                         Reply("## Current task\nReading a.py and b.py.", usage=summary_usage),
                         Reply("Both modules define numbered helpers.", usage=usage)]
    with ScriptedLLM(steps) as llm:
        out = run_swecli(project, llm, "-p", "what do the two modules define? answer in one line",
                         "--mode", "auto", "--context-limit", "12000", "--output-format", "json",
                         extra_env={"SWECLI_MAX_TOKENS": "1000", "SWECLI_CONTEXT__BACKGROUND_COMPACTION": "false"})
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["compactions"] == 1 and result["usage"]["requests"] == 4
    records = [json.loads(line) for line in next((project / ".swecli" / "logs").glob("*.jsonl")).read_text()
               .splitlines()]
    (summary,) = [r for r in records if r["event"] == "summary"]
    assert summary["requests"] == 1 and summary["trigger"] == "auto" and summary["usage_estimated"] is not reported
    calls = [r for r in records if r["event"] == "llm_call"]
    loop_in = sum(r["tokens_in"] for r in calls)
    if reported:
        assert (summary["tokens_in"], summary["tokens_out"]) == (5000, 300)
        assert result["usage"]["input_tokens"] == 3 * 100 + 5000 and result["usage"]["output_tokens"] == 3 * 10 + 300
        assert result["usage"]["estimated"] is False
    else:
        # The summary's prompt carries both modules' text, so a local count is in the thousands.
        assert summary["tokens_in"] > 1000 and summary["tokens_out"] > 0
        assert result["usage"]["input_tokens"] == loop_in + summary["tokens_in"]
        assert result["usage"]["estimated"] is True and result["usage"]["estimated_requests"] == 4
    stats = records[-1]
    assert stats["event"] == "stats" and stats["tokens_in"] == loop_in + summary["tokens_in"]


def test_context_overflow_compacts_and_retries(sample: Path) -> None:
    # A history with something to drop (a module of ~2k tokens): a truncation that would not shrink the
    # conversation is not made, so a history of a few lines would only be retried as it is.
    (sample / "src" / "helpers.py").write_text(big_module("helpers", 200))
    steps: list[Step] = [Reply(calls=[Call("read_file", {"path": "src/helpers.py"})]),
                         Fail.context_overflow(), Reply("Done after the retry.")]
    with ScriptedLLM(steps) as llm:
        out = run_swecli(sample, llm, "-p", "read helpers.py", "--mode", "auto",
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
    reads = itertools.cycle("abcdefgh")  # as many reads as it takes for the summary to be applied

    def answer(body: dict[str, object]) -> Step:
        messages = body["messages"]
        assert isinstance(messages, list)
        if messages[0]["content"] == SUMMARY_SYSTEM:
            return Reply("### Current task and state\nReading the modules one by one.")
        if any(SUMMARY_MARKER in str(m["content"]) for m in messages):
            return Reply("Each module defines numbered helpers.")
        return Reply(calls=[Call("read_file", {"path": f"{next(reads)}.py"})])

    with ScriptedLLM([answer] * 40, strict=False) as llm:
        out = run_swecli(project, llm, "-p", "what do the modules define? read them one by one", "--mode", "auto",
                         "--context-limit", "9000", "--output-format", "json", extra_env={"SWECLI_MAX_TOKENS": "500"})
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["result"] == "Each module defines numbered helpers."
    assert isinstance(result["compaction_wait"], float)
    log = next((project / ".swecli" / "logs").glob("*.jsonl")).read_text().splitlines()
    records = [json.loads(line) for line in log]
    # When the summary is not ready at the hard limit, older outputs are folded first (no model call) and
    # the summary is applied when it arrives: one compaction or two, depending on the machine's speed.
    compactions = [r for r in records if r["event"] == "compaction"]
    assert result["compactions"] == len(compactions) >= 1
    assert compactions[-1]["strategy"] == "summarize" and compactions[-1]["background"] is True
    assert {c["strategy"] for c in compactions[:-1]} <= {"fold"}
    summaries = [r for r in records if r["event"] == "background_summary"]
    assert [r["phase"] for r in summaries] == ["started", "used"] and summaries[-1]["used"] is True
    assert summaries[-1]["duration"] >= 0
    assert all(c["background"] is True and "waited" in c for c in compactions)
    assert records[-1]["event"] == "stats" and records[-1]["compactions"] == len(compactions)
    (summary,) = [r for r in records if r["event"] == "summary"]  # made on another thread, billed all the same
    assert summary["trigger"] == "background" and summary["requests"] == 1
    loop_calls = [r for r in records if r["event"] == "llm_call"]
    assert result["usage"]["requests"] == len(loop_calls) + 1
    assert records[-1]["tokens_in"] == sum(r["tokens_in"] for r in loop_calls) + summary["tokens_in"]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_mentions_and_named_symbols_are_attached_in_print_mode_too(sample: Path, wire: str) -> None:
    with ScriptedLLM([Reply("It greets.")], wire=wire) as llm:  # type: ignore[arg-type]
        out = run_swecli(sample, llm, "-p", "what does @README.md say, and why does `greet` misspell Hello?",
                         wire=wire)
    assert out.returncode == 0, out.stderr
    assert "📎 README.md · 1 lines" in out.stderr
    assert "just-in-time context: attached src/greet.py (defines `greet`" in out.stderr
    body = json.dumps(llm.requests[0])
    assert '<file path=\\"README.md\\" lines=\\"1\\">\\n# sample' in body
    assert "return \\\"Helo, \\\" + name" in body


# --- the prompt forms users already type ---------------------------------------------------------

def user_messages(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


@needs_sandbox
def test_the_task_piped_into_p_without_a_value_and_before_other_options(sample: Path) -> None:
    steps = [Reply(calls=[Call("bash", {"command": "touch made-it"})]), Reply("Made it.")]
    with ScriptedLLM(steps) as llm:
        # echo "make the file" | swecli -p --mode auto
        out = run_swecli(sample, llm, "-p", "--mode", "auto", stdin="make the file\n")
    assert out.returncode == 0, out.stderr
    assert (sample / "made-it").exists()  # --mode auto reached the mode, not the task
    assert user_messages(llm.requests[0])[-1] == "make the file"


@pytest.mark.parametrize("form", [["-p", "-"], ["-p"], ["--print"]])
def test_p_dash_or_no_value_reads_the_task_from_stdin(sample: Path, form: list[str]) -> None:
    with ScriptedLLM([Reply("Hello from stdin.")]) as llm:
        out = run_swecli(sample, llm, *form, stdin="say hello\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Hello from stdin."
    assert user_messages(llm.requests[0]) == ["say hello"]


def test_p_without_a_task_anywhere_is_one_clear_sentence(sample: Path) -> None:
    with ScriptedLLM([]) as llm:
        out = run_swecli(sample, llm, "-p")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().startswith("swecli: -p needs a task") and "echo" in out.stderr


def test_piped_input_is_attached_to_the_task(sample: Path) -> None:
    log = "".join(f"12:00:{i:02d} worker started\n" for i in range(5)) + "12:00:05 ERROR disk full on /var\n"
    with ScriptedLLM([Reply("The disk is full.")]) as llm:
        # cat log.txt | swecli -p "explain this": a real process, its fd 0 the pipe (the others read a pipe
        # in this process, through sys.stdin)
        out = run_swecli(sample, llm, "-p", "explain this", stdin=log, process=True)
    assert out.returncode == 0, out.stderr
    *context, task = user_messages(llm.requests[0])
    assert task == "explain this"
    size = f"6 lines, {len(log.encode())} bytes"
    assert context[-1].startswith(f"Input piped to swecli on stdin ({size}):\n<stdin>\n12:00:00 worker")
    assert "ERROR disk full on /var\n</stdin>" in context[-1]
    assert f"attached the input piped to stdin ({size})" in out.stderr


def test_a_large_piped_input_is_saved_whole_and_previewed(sample: Path) -> None:
    log = "".join(f"line {i} of a long build log with some words in it\n" for i in range(1, 20_001))
    with ScriptedLLM([Reply("Read the preview.")]) as llm:
        out = run_swecli(sample, llm, "-p", "what failed?", stdin=log)
    assert out.returncode == 0, out.stderr
    context = user_messages(llm.requests[0])[-2]
    saved = re.search(r"\.swecli/tool_results/stdin-[\w-]+\.txt", context)
    assert saved, context[:500]
    assert (sample / saved.group(0)).read_text() == log  # nothing piped in is lost
    assert "stdin returned 20,000 lines" in context and "line 1 of a long" in context and "line 20000 of" in context
    assert len(context) < 10_000  # the model gets a preview, not 1 MB
    assert "over the 8,000-token limit" in out.stderr and saved.group(0) in out.stderr


def test_p_as_a_flag_with_a_positional_task(sample: Path) -> None:
    with ScriptedLLM([Reply("ok")]) as llm:
        out = run_swecli(sample, llm, "-p", "--mode", "plan", "summarize", "the", "project")
    assert out.returncode == 0, out.stderr
    assert user_messages(llm.requests[0])[-1] == "summarize the project"


# --- nothing lost ------------------------------------------------------------------------------------

def test_a_40000_line_output_is_saved_whole_and_the_model_sees_a_preview(sample: Path) -> None:
    steps = [Reply(calls=[Call("bash", {"command": "seq 1 40000"})]), Reply("Counted.")]
    with ScriptedLLM(steps) as llm:
        out = run_swecli(sample, llm, "-p", "count to 40000", "--mode", "auto")
    assert out.returncode == 0, out.stderr
    (seen,) = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    saved = re.search(r"full text: `(\.swecli/tool_results/[\w.-]+\.txt)`", seen)
    assert saved, seen[:400]
    text = (sample / saved.group(1)).read_text()
    assert text == "".join(f"{i}\n" for i in range(1, 40_001))  # every line, none cut from the middle
    assert "bash returned 40,000 lines, 228,894 bytes" in seen  # the real output's size, not the cap's
    assert seen.splitlines()[1] == "1" and seen.endswith("40000\nexit code 0")
    assert len(seen) < 5_000


def test_swecli_state_stays_out_of_git_status(sample: Path) -> None:
    import shutil

    if shutil.which("git") is None:
        pytest.skip("needs git")
    subprocess.run(["git", "init", "-q"], cwd=sample, check=True)
    subprocess.run(["git", "add", "-A"], cwd=sample, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"], cwd=sample,
                   check=True)
    steps = [Reply(calls=[Call("bash", {"command": "seq 1 40000"})]), Reply("Counted.")]
    with ScriptedLLM(steps) as llm:  # a session that writes a transcript, a log and a saved output
        assert run_swecli(sample, llm, "-p", "count", "--mode", "auto").returncode == 0
    assert list((sample / ".swecli" / "tool_results").iterdir())
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=sample,
                            capture_output=True, text=True, check=True).stdout
    assert status == ""
    (sample / ".swecli" / "config.toml").write_text('mode = "auto"\n')  # meant to be shared: git sees it
    (sample / ".swecli" / "hooks").mkdir()
    (sample / ".swecli" / "hooks" / "pre_compact.py").write_text("print('{}')\n")
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=sample,
                            capture_output=True, text=True, check=True).stdout
    assert status.splitlines() == ["?? .swecli/config.toml", "?? .swecli/hooks/pre_compact.py"]


# --- outcomes that tell the truth --------------------------------------------------------------------

def interrupted_run(sample: Path, *options: str) -> tuple[subprocess.Popen[str], str, str]:
    """`swecli -p` with a command running, stopped by one Ctrl-C (SIGINT): (process, stdout, stderr)."""
    import signal

    steps = [Reply(calls=[Call("bash", {"command": "sleep 60"})], usage={"prompt_tokens": 2600,
                                                                          "completion_tokens": 40}),
             Reply("never asked")]
    with ScriptedLLM(steps, strict=False) as llm:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SWECLI_")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "swecli", "--provider", "openai-compatible", "--base-url", llm.base_url, "--model",
             "scripted-model", "-p", "wait a minute", "--mode", "auto", *options],
            cwd=sample, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        assert proc.stdout is not None and proc.stderr is not None
        watched = proc.stdout if options else proc.stderr  # stream-json events, or text mode's progress
        seen = ""
        for line in watched:  # wait until the command runs
            seen += line
            if '"tool_started"' in line or line.startswith("> bash"):
                break
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
        assert len(llm.requests) == 1
    return proc, rest, (err if options else seen + err)


def test_ctrl_c_exits_130_and_reports_what_was_spent(sample: Path) -> None:
    proc, out, err = interrupted_run(sample, "--output-format", "stream-json")
    assert proc.returncode == 130, err
    result = json.loads(out.splitlines()[-1])
    assert result["type"] == "result" and result["stop_reason"] == "interrupted" and result["is_error"] is True
    assert result["turns"] == 1 and result["tool_calls"] == 1
    assert result["usage"]["input_tokens"] == 2600 and result["usage"]["output_tokens"] == 40
    assert "Traceback" not in err


def test_ctrl_c_in_text_mode_says_so_on_stderr_and_leaves_stdout_empty(sample: Path) -> None:
    proc, out, err = interrupted_run(sample)
    assert proc.returncode == 130 and out == ""
    assert err.rstrip().endswith("swecli: interrupted by user") and "Traceback" not in err


def test_plan_mode_says_how_to_carry_out_the_plan(sample: Path) -> None:
    with ScriptedLLM([Reply("Plan: rename greet to hello.")]) as llm:
        out = run_swecli(sample, llm, "-p", "plan a rename", "--mode", "plan")
    assert out.returncode == 0
    assert re.search(r'To carry out this plan: swecli --resume \d{8}-\d{6}-\w{4} -p "carry out the plan" '
                     r"--mode auto", out.stderr)


def test_a_base_url_without_v1_that_fails_gets_a_hint(sample: Path) -> None:
    with ScriptedLLM([Fail(404, {"error": {"message": "Not Found"}})]) as llm:
        without_v1 = llm.base_url.removesuffix("/v1")
        out = run_swecli(sample, llm, "-p", "hi", base_url=without_v1)
    assert out.returncode == 1
    assert f"try --base-url {without_v1}/v1" in out.stderr


@needs_sandbox
def test_the_playbook_bookkeeping_stays_out_of_the_output(sample: Path) -> None:
    with ScriptedLLM(coding_task()) as llm:
        out = run_swecli(sample, llm, "-p", "fix the greeting typo", "--mode", "auto")
    assert out.returncode == 0, out.stderr
    assert "playbook:" not in out.stderr
    log = next((sample / ".swecli" / "logs").glob("*.jsonl")).read_text()
    assert '"event":"reflection"' in log and "playbook:" in log  # kept where it belongs
