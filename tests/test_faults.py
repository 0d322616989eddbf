"""The fault matrix: provider failures as users meet them, each through the real `swecli -p` process and
its agent loop, on both wires, against the scripted server.

For every fault: one clear sentence to the user (the `says` pattern, on stderr), no traceback, bounded
retries that honour Retry-After (the number of requests the server saw), the expected outcome (exit
status, answer), and a transcript and log that are still valid JSON Lines. The fault table of
docs/faults.md lists the same ids (`test_docs_list_every_fault` keeps them in step).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from swecli.testing.server import (
    Call,
    Drop,
    EmptyStream,
    Fail,
    Garbled,
    Reply,
    ScriptedLLM,
    Silent,
    Step,
    Wire,
)
from tests.helpers import swecli_in_process

WIRES: list[Wire] = ["openai", "anthropic"]
QUICK_RETRIES = {"SWECLI_RETRY_BASE_DELAY": "0.05"}
"""Every run retries after 25-50 ms instead of 0.5-1 s (what is checked is that it retries, how often and
what it says; a server's Retry-After is still waited in full). Faults whose outcome depends on the real
backoff set their own value."""
FAULTS_DOC = Path(__file__).resolve().parent.parent / "docs" / "faults.md"


@dataclass(frozen=True)
class Fault:
    id: str
    steps: Callable[[Wire], list[Step]]
    says: str
    """A pattern the user reads on stderr."""
    exit_code: int = 0
    requests: int | dict[Wire, int] | frozenset[int] = 2
    """Chat requests the server saw (per wire where the wires differ; a set where timing decides)."""
    answer: str = "done"
    """What stdout ends with (exit 0 only)."""
    env: dict[str, str] = field(default_factory=dict)
    log_event: str = ""
    """A record the session log must hold."""
    check: Callable[[Path, ScriptedLLM], None] | None = None
    strict: bool = True
    """Every scripted step must be used (False where timing decides how many are)."""


def rate_limited(wire: Wire) -> Fail:
    if wire == "anthropic":
        return Fail(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limit reached"}},
                    {"retry-after": "1"})
    return Fail.rate_limited(retry_after=1)


def unauthorized(wire: Wire) -> Fail:
    if wire == "anthropic":
        return Fail(401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    return Fail.unauthorized()


def waited_for_retry_after(project: Path, llm: ScriptedLLM) -> None:
    assert llm.times[1] - llm.times[0] >= 1.0  # Retry-After: 1 was honoured


def repaired_write(project: Path, llm: ScriptedLLM) -> None:
    assert (project / "notes.txt").read_text() == "hi"
    assert "error" not in _tool_results(llm.requests[1]).lower()


def resent_after_cut_call(project: Path, llm: ScriptedLLM) -> None:
    assert "cut off" in _tool_results(llm.requests[1]) and "not run" in _tool_results(llm.requests[1])
    assert (project / "notes.txt").read_text() == "hello"


def honest_overflow(limit: int) -> Callable[[dict[str, object]], Step]:
    """Anthropic's context-length error for the request it answers, its size estimated from the request's
    text (about 4 characters a token), as the real API names the prompt's own size."""
    def answer(body: dict[str, object]) -> Step:
        size = len(json.dumps({"system": body.get("system"), "messages": body.get("messages"),
                               "tools": body.get("tools")})) // 4
        assert size > limit, f"the request ({size}) fits {limit}: the server would not refuse it"
        return Fail.context_overflow("anthropic", requested=size, limit=limit)
    return answer


def overflow_steps(wire: Wire) -> list[Step]:
    if wire == "openai":
        return [Fail.context_overflow(wire, requested=9000, limit=8192), Reply("done")]
    # Four outputs of ~2k tokens each kept in the history (each under the offload threshold), then the prompt
    # is too long for the server.
    reads = [Call("bash", {"command": f"seq -s ' ' {start} {start + 900}"}) for start in range(100000, 500000, 100000)]
    return [Reply(calls=reads), honest_overflow(limit=8192), Reply("done")]


def overflow_logged(project: Path, llm: ScriptedLLM) -> None:
    record = next(r for r in _records(project, "logs") if r["event"] == "context_overflow")
    assert record["server_window"] == 8192 and record["planned_window"] == 32_768 and record["adopted"] is True


def _tool_results(body: dict[str, object]) -> str:
    return json.dumps(body.get("messages"))


FAULTS = [
    Fault("rate-limit-429", lambda w: [rate_limited(w), Reply("done")],
          r"rate limited by \S+ \(HTTP 429\).*retrying in 1\.0s \(attempt 2 of 6\)", check=waited_for_retry_after),
    Fault("server-error-500", lambda w: [Fail.overloaded(500), Reply("done")],
          r"is unavailable \(HTTP 500 Internal Server Error\): The server had an error; retrying in"),
    Fault("unavailable-503", lambda w: [Fail.overloaded(503), Reply("done")],
          r"is unavailable \(HTTP 503 Service Unavailable\).*retrying in"),
    Fault("overloaded-529", lambda w: [Fail.anthropic_overloaded(), Reply("done")],
          r"is unavailable \(HTTP 529\): Overloaded; retrying in"),
    Fault("server-error-every-time", lambda w: [Fail.overloaded(500)] * 3,
          r"error: \S+ is unavailable \(HTTP 500 Internal Server Error\): The server had an error "
          r"\(gave up after 3 attempts\)", exit_code=1, requests=3, env={"SWECLI_MAX_RETRIES": "2"}),
    Fault("html-proxy-page-200", lambda w: [Fail.html_page(200), Reply("done")],
          r'is unavailable: a proxy answered with an error page \("502 Bad Gateway"\) instead of a response; '
          r"retrying in"),
    # How many 0.5 s silences fit a 3 s deadline depends on the backoff's jitter and the machine's load: 2 or 3
    # (the second attempt ends by ~1.5 s: 1.5 s left for a loaded machine).
    Fault("never-answers", lambda w: [Silent(30), Silent(30), Silent(30)],
          r"waiting for \S+: no reply for [\d.]+s \(swecli waits up to 0\.5s of silence, request_timeout\)"
          r"(.|\n)*sent nothing for [\d.]+s, the limit set by request_timeout; retrying"
          # The deadline ends it either between attempts ("another would pass ...") or during one ("no answer ...").
          r"(.|\n)*^error: (?=.*the 3\.0s limit set by request_deadline; raise it if the server needs longer)"
          r"(?=.*gave up after [23] attempts).*$",
          exit_code=1, requests=frozenset({2, 3}), strict=False,
          env={"SWECLI_REQUEST_TIMEOUT": "0.5", "SWECLI_REQUEST_DEADLINE": "3", "SWECLI_RETRY_BASE_DELAY": "0.5"}),
    Fault("headers-then-silence", lambda w: [Silent(30, headers=True), Reply("done")],
          r"waiting for \S+: no reply for(.|\n)*sent nothing for [\d.]+s, the limit set by request_timeout; retrying",
          env={"SWECLI_REQUEST_TIMEOUT": "0.5"}),
    Fault("reset-after-text", lambda w: [Drop(Reply("a partial answer that gets cut"), after=4, reset=True),
                                         Reply("done")],
          r"connection to \S+ at \S+ failed: .*; retrying in"),
    Fault("malformed-sse-line", lambda w: [Garbled(Reply("done")), Reply("done")],
          r"sent a malformed (stream chunk|event): .*; retrying in"),
    Fault("tool-arguments-repairable",
          lambda w: [Reply(calls=[Call("write_file", "```json\n{'path': 'notes.txt', 'content': 'hi',}\n```")]),
                     Reply("done")],
          r"> write_file notes\.txt\n  \. ", check=repaired_write),
    Fault("tool-arguments-cut-off",
          lambda w: [Reply(calls=[Call("write_file", '{"path": "notes.txt", "content": "hel')]),
                     Reply(calls=[Call("write_file", {"path": "notes.txt", "content": "hello"})]), Reply("done")],
          r"  x The arguments for write_file end before the JSON object is complete", requests=3,
          check=resent_after_cut_call),
    # Anthropic's error names the prompt's own size, which calibrates swecli's count: its numbers must be
    # honest, so there the prompt really is over 8,192 tokens (a command's output read just before).
    Fault("context-overflow", overflow_steps,
          r"warning: the server's context window is 8,192 tokens, smaller than the 32,768 swecli planned for; "
          r"using 8,192 from now on\. Set context_limit = 8192",
          requests={"openai": 2, "anthropic": 3},
          env={"SWECLI_CONTEXT__STRATEGY": "truncate", "SWECLI_MAX_TOKENS": "1000"}, log_event="context_overflow",
          check=overflow_logged),
    # OpenAI's error names prompt and completion together (no calibration): the request stays too large.
    # Anthropic's names the prompt: a window that cannot hold even the system prompt and the task is refused
    # before anything more is sent.
    Fault("context-overflow-after-compacting",
          lambda w: ([Fail.context_overflow(w, requested=40_000, limit=8192)] * 2 if w == "openai"
                     else [honest_overflow(limit=2000)]),
          r"(error: the request does not fit the model's context window even after compacting \(2 requests sent\): "
          r"the server's window is 8,192 tokens and the request 40,000; give the server a larger context"
          r"|error: the task is ~\d+ tokens: with swecli's system prompt and tool schemas \(~[\d,]+\) and room for a "
          r"reply it does not fit the model's 2,000-token context window)",
          exit_code=1, requests={"openai": 2, "anthropic": 1},
          env={"SWECLI_CONTEXT__STRATEGY": "truncate", "SWECLI_MAX_TOKENS": "1000"}, log_event="context_overflow"),
    Fault("empty-200", lambda w: [EmptyStream(), Reply("done")],
          r"(returned an empty stream|sent an empty stream).*; retrying in"),
    # OpenAI wire: each call is an empty stream, its retry, and (tools being offered) one unstreamed question
    # that tells an oversized request from a server that cannot stream tool calls; twice, around a compaction.
    Fault("empty-200-every-time", lambda w: [EmptyStream()] * (6 if w == "openai" else 3),
          r"error: (the server returned an empty stream, which llama\.cpp does when the request exceeds its context "
          r"\(openai-compatible\); still too large after compacting \(6 requests sent\): swecli planned for 32,768 "
          r"tokens \(default for unknown models\); if the server's window is smaller, set context_limit to it"
          r"|anthropic sent an empty stream \(gave up after 3 attempts\))",
          exit_code=1, requests={"openai": 6, "anthropic": 3}, env={"SWECLI_MAX_RETRIES": "2"}),
    Fault("unauthorized-401", lambda w: [unauthorized(w)],
          r"error: API key rejected by \S+ \(set (SWECLI_API_KEY|ANTHROPIC_API_KEY)\); HTTP 401: "
          r"(Incorrect API key provided|invalid x-api-key)$", exit_code=1, requests=1),
]


def run_swecli(project: Path, llm: ScriptedLLM, wire: Wire, *args: str, extra_env: dict[str, str] | None = None,
               process: bool = False) -> subprocess.CompletedProcess[str]:
    """`swecli ARGS` against the scripted server: in this process (`tests.helpers.swecli_in_process`; the
    fault's handling, what it prints and its exit status are the same), or with `process` a real one."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SWECLI_")}, **QUICK_RETRIES,
           **(extra_env or {})}
    provider = "openai-compatible" if wire == "openai" else "anthropic"
    if wire == "anthropic":
        env["ANTHROPIC_API_KEY"] = "sk-ant-test-0000000000"
    argv = ["--provider", provider, "--base-url", llm.base_url, "--model", "scripted-model", *args]
    if not process:
        return swecli_in_process(argv, project, env)
    return subprocess.run([sys.executable, "-m", "swecli", *argv], cwd=project, env=env, text=True,
                          capture_output=True, timeout=180, stdin=subprocess.DEVNULL)


IN_A_PROCESS = {("server-error-every-time", "openai"), ("unauthorized-401", "anthropic"), ("rate-limit-429", "openai")}
"""Faults run through a real `swecli` process, each on one wire (what the process adds, the exit status and
stderr apart from stdout as the shell sees them, is the same on both): a failure's exit status and single
`error:` line, and a retry. The others run in the test's process (the same code, without the start)."""


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("fault", FAULTS, ids=[f.id for f in FAULTS])
def test_fault(project: Path, fault: Fault, wire: Wire) -> None:
    with ScriptedLLM(fault.steps(wire), wire=wire, strict=fault.strict) as llm:
        out = run_swecli(project, llm, wire, "-p", "write notes.txt, then say done", "--mode", "auto",
                         extra_env=fault.env, process=(fault.id, wire) in IN_A_PROCESS)
        requests = len(llm.requests)
    assert "Traceback" not in out.stderr + out.stdout
    assert out.returncode == fault.exit_code, out.stderr
    assert re.search(fault.says, out.stderr, re.MULTILINE), out.stderr
    expected = fault.requests[wire] if isinstance(fault.requests, dict) else fault.requests
    assert requests in expected if isinstance(expected, frozenset) else requests == expected, out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    if fault.exit_code == 0:
        assert out.stdout.strip().endswith(fault.answer) and not errors
    else:
        assert len(errors) == 1 and out.stdout == ""  # one sentence, on stderr
    assert_valid_session_files(project)
    if fault.log_event:
        assert fault.log_event in [r["event"] for r in _records(project, "logs")]
    if fault.check is not None:
        fault.check(project, llm)


def assert_valid_session_files(project: Path) -> None:
    """Every line of every transcript and log is a JSON object."""
    for folder in ("sessions", "logs"):
        files = list((project / ".swecli" / folder).glob("*.jsonl"))
        assert files, folder
        for path in files:
            for line in path.read_text().splitlines():
                assert isinstance(json.loads(line), dict), (path, line)


def _records(project: Path, folder: str) -> list[dict[str, object]]:
    path = next((project / ".swecli" / folder).glob("*.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


# -- SIGKILL mid-turn, then --continue ------------------------------------------------------------------

class Halfway(threading.Event):
    """`Reply(hold=...)`: the server sends half the stream, then waits on this; `reached` says it got there."""

    def __init__(self) -> None:
        super().__init__()
        self.reached = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.reached.set()
        return super().wait(timeout)


@pytest.mark.parametrize("wire", WIRES)
def test_sigkill_mid_turn_then_continue_loses_nothing(project: Path, wire: Wire) -> None:
    """Killed while the model streams its second answer: every line written before the kill is still there,
    byte for byte, after `--continue`, and the resumed request carries every message the transcript held."""
    (project / "notes.txt").write_text("hello\n")
    halfway = Halfway()
    first: list[Step] = [Reply("Reading it.", calls=[Call("read_file", {"path": "notes.txt"})]),
                         Reply("This answer streams and is killed halfway. " * 4, chunk=4, hold=halfway)]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SWECLI_")}}
    if wire == "anthropic":
        env["ANTHROPIC_API_KEY"] = "sk-ant-test-0000000000"
    provider = "openai-compatible" if wire == "openai" else "anthropic"
    with ScriptedLLM(first, wire=wire, strict=False) as llm:
        proc = subprocess.Popen([sys.executable, "-m", "swecli", "--provider", provider, "--base-url", llm.base_url,
                                 "--model", "scripted-model", "-p", "read notes.txt", "--mode", "auto"],
                                cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        assert halfway.reached.wait(120), "the second answer never began"
        os.killpg(proc.pid, signal.SIGKILL)  # mid-stream of the second answer: half of it sent, the rest held
        halfway.set()
        proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL and len(llm.requests) == 2
    transcript = next((project / ".swecli" / "sessions").glob("*.jsonl"))
    log = next((project / ".swecli" / "logs").glob("*.jsonl"))
    before = {transcript: transcript.read_bytes(), log: log.read_bytes()}
    assert_valid_session_files(project)
    written = [json.loads(line) for line in before[transcript].splitlines()]
    assert any("hello" in json.dumps(r) for r in written)  # the tool result was written before the kill

    with ScriptedLLM([Reply("Picked up where we left off.")], wire=wire) as llm:  # resumed in this process
        out = run_swecli(project, llm, wire, "--continue", "-p", "go on", "--mode", "auto")
    assert out.returncode == 0, out.stderr
    for path, old in before.items():
        assert path.read_bytes().startswith(old)  # nothing written was lost or rewritten
    assert_valid_session_files(project)
    sent = json.dumps(llm.requests[0])
    assert "read notes.txt" in sent and "hello" in sent and "go on" in sent


# -- docs/faults.md's table lists exactly these faults ------------------------------------------------

def test_docs_list_every_fault() -> None:
    section = FAULTS_DOC.read_text()
    listed = re.findall(r"^\| `([a-z0-9-]+)` \|", section, re.MULTILINE)
    assert listed == [f.id for f in FAULTS] + ["sigkill-then-continue"]
