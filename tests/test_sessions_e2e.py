"""Memory that outlives the process: transcripts, logs, resume after SIGKILL, /init, secrets."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from swecli.testing.server import Call, Reply, ScriptedLLM
from tests.helpers import needs_sandbox, swecli_in_process
from tests.unprivileged import USERS, seed_vocabularies, user_prefix

SECRET = "sk-test-SECRET-0123456789abcdef"


def swecli_cmd(llm: ScriptedLLM, *args: str) -> list[str]:
    return [sys.executable, "-m", "swecli", "--provider", "openai-compatible", "--base-url", llm.base_url,
            "--model", "scripted-model", *args]


def env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("SWECLI_")}, "MY_SERVICE_API_KEY": SECRET}


def run_in(project: Path, *args: str, llm: ScriptedLLM | None = None) -> subprocess.CompletedProcess[str]:
    """`swecli ARGS` (after the scripted server's flags, with `llm`) in this process
    (`tests.helpers.swecli_in_process`): for what a command does and says, not for the process."""
    flags = swecli_cmd(llm)[3:] if llm is not None else []
    command, rest = (list(args[:1]), list(args[1:])) if args and not args[0].startswith("-") else ([], list(args))
    return swecli_in_process([*command, *flags, *rest], project, env())


def all_text_under(path: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in path.rglob("*") if p.is_file())


def test_session_files_and_no_secret_leak(project: Path) -> None:
    (project / "config.py").write_text(f'API_KEY = "{SECRET}"\n')
    steps = [Reply(calls=[Call("read_file", {"path": "config.py"})]), Reply(f"The key is {SECRET}.")]
    with ScriptedLLM(steps) as llm:
        out = run_in(project, "-p", f"what is the key? it should be {SECRET}", "--output-format", "json", llm=llm)
    assert out.returncode == 0, out.stderr
    session_id = json.loads(out.stdout)["session_id"]
    assert session_id
    dot = project / ".swecli"
    transcript = dot / "sessions" / f"{session_id}.jsonl"
    log = dot / "logs" / f"{session_id}.jsonl"
    assert transcript.is_file() and log.is_file()
    events = [json.loads(line)["event"] for line in log.read_text().splitlines()]
    assert events[0] == "session_start" and events[-1] == "stats"
    assert {"user_input", "llm_call", "tool"} <= set(events)
    assert SECRET not in all_text_under(dot)
    assert "[REDACTED]" in transcript.read_text()


def test_sigkill_mid_task_then_continue(project: Path) -> None:
    (project / "notes.txt").write_text("hello\n")
    first = [Reply(calls=[Call("read_file", {"path": "notes.txt"})]),
             Reply("Running the slow step.", calls=[Call("bash", {"command": "sleep 60"})])]
    with ScriptedLLM(first, strict=False) as llm:
        proc = subprocess.Popen(swecli_cmd(llm, "-p", "do the long task", "--mode", "auto"), cwd=project,
                                env=env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.monotonic() + 60  # the second answer is in the transcript and the log: the command is next
        while time.monotonic() < deadline and not ("sleep 60" in _transcripts(project) and _llm_calls(project) == 2):
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    log_file = next((project / ".swecli" / "logs").glob("*.jsonl"))
    records = [json.loads(line) for line in log_file.read_text().splitlines()]  # every line parses
    assert [r["event"] for r in records].count("llm_call") == 2

    with ScriptedLLM([Reply("Picked up where we left off.")]) as llm:  # resumed in this process
        out = run_in(project, "--continue", "-p", "go on", "--mode", "auto", llm=llm)
    assert out.returncode == 0, out.stderr
    messages = llm.requests[0]["messages"]
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "user"]
    assert messages[1]["content"] == "do the long task" and messages[-1]["content"] == "go on"
    assert "hello" in messages[3]["content"]
    assert messages[5]["tool_call_id"] == messages[4]["tool_calls"][0]["id"]
    assert "interrupted" in messages[5]["content"]
    # the resumed run appended to the same log
    assert [json.loads(line)["event"] for line in log_file.read_text().splitlines()].count("llm_call") == 3


def _llm_calls(project: Path) -> int:
    """The `llm_call` records of the session log so far (a line being written is not counted)."""
    logs = list((project / ".swecli" / "logs").glob("*.jsonl")) if (project / ".swecli" / "logs").exists() else []
    return sum(json.loads(line).get("event") == "llm_call" for path in logs
               for line in path.read_text().splitlines(keepends=True) if line.endswith("\n"))


def _transcripts(project: Path) -> str:
    folder = project / ".swecli" / "sessions"
    return all_text_under(folder) if folder.exists() else ""


def test_init_writes_opencli_md_and_next_request_loads_it(project: Path) -> None:
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\ndependencies = ["httpx"]\n')
    (project / "demo").mkdir()
    (project / "demo" / "__init__.py").write_text("def main():\n    pass\n")
    filled = ("# demo\n\n## Overview\nDemo is a tiny package (demo/__init__.py:1).\n\n## Structure\n- `demo/`\n\n"
              "## Key files\n- `demo/__init__.py:1`\n\n## Patterns\nunknown\n\n## Dependencies\n- httpx\n\n"
              "## Build and test\npytest\n\n## Current state\nA stub.\n")
    with ScriptedLLM([Reply(filled)]) as llm:
        out = run_in(project, "init", llm=llm)
    assert out.returncode == 0, out.stderr
    prompt = json.dumps(llm.requests[0])
    assert "OPENCLI.md" in prompt and "pyproject.toml" in prompt  # the template and the scan were sent
    assert "Demo is a tiny package" in (project / "OPENCLI.md").read_text()
    assert f"({len(filled.splitlines())} lines)" in out.stdout
    with ScriptedLLM([Reply("ok")]) as llm:
        run_in(project, "-p", "hi", llm=llm)
    system = llm.requests[0]["messages"][0]
    assert system["role"] == "system" and "Demo is a tiny package" in system["content"]
    with ScriptedLLM([Reply("OK.")]) as llm:  # an answer that is no OPENCLI.md never replaces the file
        out = run_in(project, "init", "--yes", llm=llm)
    assert out.returncode == 2 and "does not look like OPENCLI.md" in out.stderr and "Traceback" not in out.stderr
    assert (project / "OPENCLI.md").read_text() == filled


def test_sessions_list_logs_resume_picker_and_delete(project: Path) -> None:
    with ScriptedLLM([Reply("first answer")]) as llm:
        first = json.loads(run_in(project, "-p", "the first task", "--output-format", "json", llm=llm).stdout)
    with ScriptedLLM([Reply("second answer")]) as llm:
        run_in(project, "-p", "the second task", llm=llm)
    listing = run_in(project, "sessions")
    assert listing.returncode == 0 and "the first task" in listing.stdout and "the second task" in listing.stdout
    log = run_in(project, "logs", first["session_id"])
    assert log.returncode == 0 and "the first task" in log.stdout and "llm" in log.stdout.lower()
    with ScriptedLLM([]) as llm:
        picker = run_in(project, "--resume", "-p", "go on", llm=llm)
    assert picker.returncode == 2 and "needs a session ID" in picker.stderr and "the first task" in picker.stdout
    refused = run_in(project, "sessions", "--delete", first["session_id"])
    assert refused.returncode == 1 and (project / ".swecli" / "sessions" / f"{first['session_id']}.jsonl").exists()
    deleted = run_in(project, "sessions", "--delete", first["session_id"], "--yes")
    assert deleted.returncode == 0
    assert not (project / ".swecli" / "sessions" / f"{first['session_id']}.jsonl").exists()
    assert "the first task" not in run_in(project, "sessions").stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@needs_sandbox
def test_notes_are_per_session_and_shell_edits_reach_files_modified(project: Path) -> None:
    (project / "greet.py").write_text("print('helo')\n")
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *command], cwd=project, check=True, capture_output=True)
    steps = [Reply("Fixing the typo with sed.", calls=[Call("bash", {"command": "sed -i s/helo/hello/ greet.py"})]),
             Reply("Fixed.")]
    with ScriptedLLM(steps) as llm:
        first = json.loads(run_in(project, "-p", "fix the greeting typo", "--mode", "auto",
                                  "--output-format", "json", llm=llm).stdout)
    notes = (project / ".swecli" / "memory" / "notes" / f"{first['session_id']}.md").read_text()
    assert "- `greet.py` — changed by `sed -i s/helo/hello/ greet.py`" in notes
    with ScriptedLLM([Reply("ok")]) as llm:
        second = json.loads(run_in(project, "-p", "write the changelog", "--output-format", "json", llm=llm).stdout)
    system = llm.requests[0]["messages"][0]["content"]
    # The previous session's goal reaches the new one as that session's, never as its own.
    assert "# Notes from the previous session" in system and "not by you in this one" in system
    assert "fix the greeting typo" in system and "# Session notes" not in system
    own = (project / ".swecli" / "memory" / "notes" / f"{second['session_id']}.md").read_text()
    assert "write the changelog" in own and "fix the greeting typo" not in own


def modes_under(path: Path) -> dict[str, int]:
    return {p.relative_to(path).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in [path, *path.rglob("*")]}


@pytest.fixture
def shared_place() -> Iterator[Path]:
    """A project both root and `nobody` can reach (pytest's tmp_path is private to root)."""
    place = Path(tempfile.mkdtemp(prefix="swecli-records-"))
    place.chmod(0o755)
    (place / "project").mkdir()
    yield place
    shutil.rmtree(place, ignore_errors=True)



@pytest.mark.parametrize("user", USERS)
def test_a_printed_key_is_masked_in_saved_outputs_and_every_record_is_private(shared_place: Path, user: str) -> None:
    """A command prints the API key (from its environment) all through a 3 MB output: the output is saved
    whole (spooled to disk, read back in pieces), the key masked wherever a piece boundary cuts it; and an
    install whose `.swecli/` an earlier version left readable is tightened at start. As the current user and,
    under root, as `nobody`."""
    project = shared_place / "project"
    old = project / ".swecli" / "sessions"
    old.mkdir(parents=True)
    (project / ".swecli").chmod(0o755)
    (old / "20260101-000000-abcd.jsonl").write_text('{"type":"meta"}\n')
    (old / "20260101-000000-abcd.jsonl").chmod(0o644)
    hooks = project / ".swecli" / "hooks"
    hooks.mkdir()
    (hooks / "pre.sh").write_text("#!/bin/sh\n")
    (hooks / "pre.sh").chmod(0o755)
    # Commands no longer see the key in their environment (sandbox.inherit_env), so it comes from a file.
    (project / "service.txt").write_text(SECRET + "\n")
    command = 'key=$(cat service.txt); for i in $(seq 40000); do echo "row $i key=$key end"; done'
    steps = [Reply(calls=[Call("bash", {"command": command})]), Reply("Printed it.")]
    prefix, home = [], {}
    if user == "nobody":  # a home of its own: the test's is private to root
        home = {"HOME": str(shared_place / "home"), "XDG_CONFIG_HOME": str(shared_place / "home" / ".config"),
                "XDG_CACHE_HOME": str(shared_place / "home" / ".cache")}
        os.mkdir(home["HOME"])
        seed_vocabularies(Path(home["HOME"]))
        for entry in [shared_place, *shared_place.rglob("*")]:
            os.lchown(entry, 65534, 65534)
        prefix = user_prefix(user)
    with ScriptedLLM(steps) as llm:
        out = subprocess.run([*prefix, *swecli_cmd(llm, "-p", "print the rows", "--mode", "auto", "--sandbox", "off")],
                             cwd=project, env={**env(), **home}, text=True, capture_output=True, timeout=180,
                             stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    dot = project / ".swecli"
    saved = list((dot / "tool_results").glob("*.txt"))
    assert len(saved) == 1
    text = saved[0].read_text()
    assert text.count("key=[REDACTED] end") == 40000 and SECRET not in text
    assert SECRET not in all_text_under(dot)
    modes = modes_under(dot)
    assert modes["."] == 0o700 and modes["tool_results"] == 0o700
    records = {name: mode for name, mode in modes.items() if not name.startswith(("hooks", ".gitignore", "."))}
    assert records and all(mode == (0o700 if (dot / name).is_dir() else 0o600) for name, mode in records.items()), \
        records
    assert modes["hooks/pre.sh"] == 0o755  # shared, committed files keep their modes
