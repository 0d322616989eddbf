"""The sandbox and the read-only rule through the real loop: the real providers over HTTP against the
scripted LLM server, real bash under real bwrap, asserting on what the model was told and on disk."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swecli.assembly import open_session
from swecli.config import SandboxConfig, Settings
from swecli.events import Event, Notice, ToolFinished
from swecli.testing.server import Call, Reply, ScriptedLLM, Step, Wire
from swecli.tools.sandbox import MISSING, unavailable_reason
from tests.helpers import needs_sandbox, scripted_settings, swecli_in_process, tool_results

REASON = unavailable_reason()
needs_bwrap = pytest.mark.skipif(bool(REASON), reason=f"bwrap cannot run here: {REASON}")
WIRES = ["openai", "anthropic"]


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside the project and outside /tmp (which the sandbox replaces)."""
    path = Path(tempfile.mkdtemp(prefix="swecli-outside-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def settings(llm: ScriptedLLM, mode: str, **sandbox: Any) -> Settings:
    return scripted_settings(llm, mode=mode, sandbox=SandboxConfig(**sandbox))


@needs_bwrap
@pytest.mark.parametrize("wire", WIRES)
def test_auto_mode_writes_only_inside_the_project_and_the_model_is_told_why(project: Path, outside: Path,
                                                                            wire: Wire) -> None:
    secret = f"/tmp/swecli-e2e-{os.getpid()}-{wire}"
    steps: list[Step] = [
        Reply(calls=[Call("bash", {"command": f"echo escaped > {outside}/escape.txt"})]),
        Reply(calls=[Call("bash", {"command": f"echo scratch > {secret} && cat {secret}"})]),
        Reply(calls=[Call("bash", {"command": "echo made > inside.txt && cat inside.txt"})]),
        Reply("Wrote inside.txt; the write outside the project was blocked by the sandbox."),
    ]
    events: list[Event] = []
    with ScriptedLLM(steps, wire=wire) as llm:
        session = open_session(project, settings(llm, "auto"), listeners=[events.append])
        turn = session.run("write a file outside and inside the project")
        session.close()
    assert turn.stop_reason == "done"
    blocked = tool_results(llm.requests[1])[-1]
    assert "Read-only file system" in blocked and "[sandbox] This command ran in swecli's sandbox" in blocked
    assert not (outside / "escape.txt").exists()
    scratch = tool_results(llm.requests[2])[-1]
    assert scratch.startswith("scratch") and not Path(secret).exists()  # /tmp inside is private
    assert tool_results(llm.requests[3])[-1].startswith("made")
    assert (project / "inside.txt").read_text() == "made\n"
    finished = [e.result.meta for e in events if isinstance(e, ToolFinished)]
    assert [m["sandbox"] for m in finished] == ["workspace-write"] * 3
    assert finished[0]["sandbox_denied"] == "read-only file system"
    assert not [e for e in events if isinstance(e, Notice) and e.level == "warning"]


@needs_bwrap
def test_plan_mode_runs_commands_that_cannot_write(project: Path) -> None:
    (project / "notes.txt").write_text("plan me\n")
    steps: list[Step] = [
        Reply(calls=[Call("bash", {"command": "cat notes.txt && echo changed > notes.txt"})]),
        Reply("Plan: change notes.txt once we leave plan mode."),
    ]
    with ScriptedLLM(steps) as llm:
        session = open_session(project, settings(llm, "plan"))
        session.run("look at the notes")
        session.close()
    result = tool_results(llm.requests[1])[-1]
    assert result.startswith("plan me") and "Read-only file system" in result
    assert (project / "notes.txt").read_text() == "plan me\n"


def run_swecli(project: Path, llm: ScriptedLLM, *args: str, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:
    """`swecli -p` in this process (`tests.helpers.swecli_in_process`): what it runs, refuses and says; the
    sandbox's bwrap and bash are processes all the same."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("SWECLI_") and not k.endswith("_API_KEY")}
    provider = ["--provider", "anthropic"] if llm.wire == "anthropic" else ["--provider", "openai-compatible"]
    if llm.wire == "anthropic":
        base["ANTHROPIC_API_KEY"] = "sk-ant-test-0000000000"
    return swecli_in_process([*provider, "--base-url", llm.base_url, "--model", "scripted-model", *args], project,
                             {**base, **(env or {})})


@needs_sandbox
@pytest.mark.parametrize("wire", WIRES)
def test_default_mode_runs_read_only_commands_without_approval(project: Path, wire: Wire) -> None:
    # Without a terminal nobody can approve: the read-only command runs, the write is refused.
    (project / "greet.py").write_text("print('hi')\n")
    steps: list[Step] = [
        Reply(calls=[Call("bash", {"command": "cat greet.py && git status 2>&1 | head -1; wc -l greet.py"})]),
        Reply(calls=[Call("bash", {"command": "echo changed > greet.py"})]),
        Reply("I read greet.py; changing it needs your approval."),
    ]
    with ScriptedLLM(steps, wire=wire) as llm:
        out = run_swecli(project, llm, "-p", "look at greet.py and change it", "--output-format", "stream-json")
    assert out.returncode == 3, out.stderr  # done, but a call was refused for want of approval (issue 16)
    read = tool_results(llm.requests[1])[-1]
    assert read.startswith("print('hi')") and "1 greet.py" in read
    refused = tool_results(llm.requests[2])[-1]
    assert "needs the user's approval" in refused and "--mode auto" in refused
    assert (project / "greet.py").read_text() == "print('hi')\n"
    events = [json.loads(line) for line in out.stdout.splitlines()]
    finished = [e for e in events if e["type"] == "tool_finished"]
    assert [e["approved"] for e in finished] == [True, False]
    assert [d["tool_input"] for d in events[-1]["permission_denials"]] == [{"command": "echo changed > greet.py"}]


def path_without_bwrap(tmp_path: Path) -> str:
    """A PATH with every program of the current one except bwrap: a machine without bubblewrap."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        for program in Path(directory).glob("*") if Path(directory).is_dir() else []:
            target = bin_dir / program.name
            if program.name != "bwrap" and not target.exists() and os.access(program, os.X_OK):
                target.symlink_to(program)
    return str(bin_dir)


def test_without_bwrap_auto_mode_says_so_once_and_refuses_to_run_unconfined(project: Path, tmp_path: Path) -> None:
    steps: list[Step] = [
        Reply(calls=[Call("bash", {"command": "ls"})]),
        Reply(calls=[Call("bash", {"command": "touch made.txt"})]),
        Reply(calls=[Call("bash", {"command": "touch made.txt"})]),
        Reply("Could not run touch without a sandbox."),
    ]
    with ScriptedLLM(steps) as llm:
        out = run_swecli(project, llm, "-p", "make a file", "--mode", "auto",
                         env={"PATH": path_without_bwrap(tmp_path)})
    assert out.returncode == 3, out.stderr  # done, but calls were refused for want of approval (issue 16)
    assert out.stderr.splitlines()[-1] == (
        "swecli: 2 tool calls were refused (bash touch made.txt, bash touch made.txt): without bubblewrap, commands "
        "that are not read-only need a person's approval even in auto mode: install it, or set sandbox.mode = "
        '"off"; run them yourself, or in the REPL (swecli) to approve each one.')
    assert out.stderr.count("bubblewrap is not installed") == 1
    assert f"warning: {MISSING}" in out.stderr
    assert tool_results(llm.requests[1])[-1].startswith("(no output)")  # read-only: ran
    refused = tool_results(llm.requests[2])[-1]
    assert "needs the user's approval" in refused and "install bubblewrap" in refused
    assert not (project / "made.txt").exists()


def test_sandbox_off_runs_unconfined_in_auto_mode(project: Path, outside: Path, tmp_path: Path) -> None:
    steps: list[Step] = [Reply(calls=[Call("bash", {"command": f"echo out > {outside}/free.txt"})]), Reply("done")]
    with ScriptedLLM(steps) as llm:
        out = run_swecli(project, llm, "-p", "write outside", "--mode", "auto", "--sandbox", "off",
                         env={"PATH": path_without_bwrap(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert "sandbox" not in out.stderr  # the user's explicit choice: no warning
    assert (outside / "free.txt").read_text() == "out\n"


@needs_bwrap
def test_pass_env_lets_named_secrets_into_commands_and_no_others(project: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_456")
    monkeypatch.setenv("NPM_AUTH_TOKEN", "npm_789")
    monkeypatch.setenv("DEPLOY_SECRET", "s3cr3t")
    steps: list[Step] = [Reply(calls=[Call("bash", {"command": "env | sort"})]), Reply("Listed.")]
    with ScriptedLLM(steps) as llm:
        session = open_session(project, settings(llm, "auto", pass_env=["GITHUB_TOKEN", "NPM_*"]))
        session.run("show the environment")
        session.close()
    seen = tool_results(llm.requests[1])[-1]
    assert "GITHUB_TOKEN=ghp_456" in seen and "NPM_AUTH_TOKEN=npm_789" in seen  # by name and by pattern
    assert "s3cr3t" not in seen  # every other secret stays out


@needs_bwrap
def test_a_session_s_commands_run_in_sandboxes_started_while_the_model_thinks(project: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from swecli.tools.spare import SPARES

    monkeypatch.setattr(SPARES, "take_wait", 600.0)  # however loaded the machine, the spare is waited for
    used = SPARES.used
    init = "tr '\\0' ' ' < /proc/1/cmdline | grep -c 'read -r -n 1 go'"  # pid 1 is bwrap: its command line
    steps: list[Step] = [
        Reply(calls=[Call("bash", {"command": f"{init}; echo one > one.txt"})]),
        Reply(calls=[Call("bash", {"command": f"{init}; echo two >> one.txt"})]),
        Reply(calls=[Call("bash", {"command": f"{init}; cat one.txt"})]),
        Reply("done"),
    ]
    with ScriptedLLM(steps) as llm:
        session = open_session(project, settings(llm, "auto"), listeners=[])
        turn = session.run("use the shell")
        session.close()
    assert turn.stop_reason == "done"
    first, second, third = (tool_results(llm.requests[i])[-1] for i in (1, 2, 3))
    assert first.startswith("1\n")
    assert second.startswith("1\n")
    assert third.startswith("1\none\ntwo\n") and (project / "one.txt").read_text() == "one\ntwo\n"
    assert SPARES.used - used == 3


@needs_bwrap
def test_a_session_that_closes_leaves_no_spare_sandbox_waiting(project: Path) -> None:
    """The process lives on (a REPL's next session, an embedding program): the spare started for the next
    command is discarded when the session closes, not at exit."""
    from swecli.tools.spare import SPARES
    from tests.tools.test_spare import _gone, _waiting_spares

    steps: list[Step] = [Reply(calls=[Call("bash", {"command": "true"})]), Reply("done")]
    with ScriptedLLM(steps) as llm:
        session = open_session(project, settings(llm, "auto"), listeners=[])
        session.run("run true")
        assert SPARES.wait_started(120) and _waiting_spares(project)  # one is waiting for the next command
        session.close()
    assert _gone(project)
