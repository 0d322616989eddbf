"""`swecli -p --continue` over a transcript that was cut, mangled or edited: the history it sends is one the
real APIs accept (the scripted server answers 400 to an unpaired tool message or call, as they do), and what
had to be dropped or closed is said once on stderr."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from swecli.testing.server import Call, Reply, ScriptedLLM, Wire, unpaired_tool_results
from tests.helpers import swecli_in_process

Mangle = Callable[[list[bytes]], list[bytes]]
"""The transcript's lines (meta, prompt, call, result, answer, ...) -> the file's new lines."""


def cut_mid_line(lines: list[bytes]) -> list[bytes]:
    call = _index(lines, b'"tool_calls":[{')
    return [*lines[:call + 1], lines[call + 1][: len(lines[call + 1]) // 2]]  # the result torn by a kill


def result_without_call(lines: list[bytes]) -> list[bytes]:
    return [line for n, line in enumerate(lines) if n != _index(lines, b'"tool_calls":[{')]


def call_without_result(lines: list[bytes]) -> list[bytes]:
    return [line for n, line in enumerate(lines) if n != _index(lines, b'"role":"tool"')]


def garbage(lines: list[bytes]) -> list[bytes]:
    junk = [b"\x00\xff not json", b"[1, 2, 3]", b'{"type":"message","message":{"role":"robot"}}',
            b'{"type":"surprise"}', b'{"type":"message","message":{"role":"tool","content":"x"}}']
    return [lines[0], *junk, *lines[1:], b"}{"]


def result_moved_and_repeated(lines: list[bytes]) -> list[bytes]:
    result = lines[_index(lines, b'"role":"tool"')]
    return [*[line for line in lines if line != result], result, result]


def _index(lines: list[bytes], marker: bytes) -> int:
    return next(n for n, line in enumerate(lines) if marker in line)


def run(project: Path, llm: ScriptedLLM, *args: str) -> subprocess.CompletedProcess[str]:
    """`swecli -p` in this process (`tests.helpers.swecli_in_process`): what is tested is what `--continue`
    makes of the file, the same in a process of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWECLI_")}
    wire = ["--provider", "openai-compatible"]
    if llm.wire == "anthropic":
        wire, env["ANTHROPIC_API_KEY"] = ["--provider", "anthropic"], "sk-ant-test-0000000000"
    return swecli_in_process([*wire, "--base-url", llm.base_url, "--model", "scripted-model", "--mode", "auto",
                              *args], project, env)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("mangle", [cut_mid_line, result_without_call, call_without_result, garbage,
                                    result_moved_and_repeated], ids=lambda f: f.__name__)
def test_continue_sends_a_history_the_api_accepts_whatever_happened_to_the_file(project: Path, wire: Wire,
                                                                               mangle: Mangle) -> None:
    (project / "notes.txt").write_text("hello\n")
    first = [Reply(calls=[Call("read_file", {"path": "notes.txt"})]), Reply("It says hello.")]
    with ScriptedLLM(first, wire=wire) as llm:
        assert run(project, llm, "-p", "read notes.txt").returncode == 0
    transcript = next((project / ".swecli" / "sessions").glob("*.jsonl"))
    transcript.write_bytes(b"\n".join(mangle(transcript.read_bytes().splitlines())))

    with ScriptedLLM([Reply("Going on.")], wire=wire) as llm:
        out = run(project, llm, "-p", "go on", "--continue")
    assert out.returncode == 0, out.stderr
    assert unpaired_tool_results(llm.requests[0], wire) is None
    said = [line for line in out.stderr.splitlines() if "transcript" in line or ".jsonl" in line]
    assert said, out.stderr  # the repair is not silent
    again = transcript.read_bytes()
    with ScriptedLLM([Reply("Still fine.")], wire=wire) as llm:  # the file now replays to what was sent
        out = run(project, llm, "-p", "and again", "--continue")
    assert out.returncode == 0, out.stderr
    assert not [line for line in out.stderr.splitlines() if "dropped" in line or "had no result" in line]
    assert transcript.read_bytes().startswith(again)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_the_scripted_server_rejects_what_the_real_apis_reject(wire: Wire) -> None:
    openai = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c1", "content": "x"}]
    anthropic = [{"role": "user", "content": "hi"},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "x"}]}]
    body = {"model": "m", "messages": openai if wire == "openai" else anthropic}
    rejected = unpaired_tool_results(body, wire)
    assert rejected is not None and rejected.status == 400
    unanswered = [{"role": "user", "content": "hi"},
                  {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                                                                        "function": {"name": "f", "arguments": "{}"}}]},
                  {"role": "user", "content": "next"}] if wire == "openai" else \
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "c1",
                                                                             "name": "f", "input": {}}]},
         {"role": "user", "content": "next"}]
    rejected = unpaired_tool_results({"messages": unanswered}, wire)
    assert rejected is not None and "c1" in json.dumps(rejected.body)
