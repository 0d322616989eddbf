"""bash on real subprocesses: output, exit codes, timeouts, interrupts and process-group cleanup."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from swecli.tools.base import ToolContext
from swecli.tools.bash import BASH, BashArgs, OutputBuffer, command_environment
from swecli.tools.environment import CommandEnvironment
from tests.tools.conftest import RunTool


def live_members(pgid: int) -> list[int]:
    """Processes still in the group, zombies excluded (they are dead, just not yet reaped by init)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state not in ("Z", "X"):
            alive.append(int(entry.name))
    return alive


def wait_until_gone(pgid: int, seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (members := live_members(pgid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return members


def shell_pid(content: str) -> int:
    return int(content.split("PID=")[1].split()[0])


def test_runs_in_the_project_root_and_merges_output_in_order(project: Path, run_tool: RunTool) -> None:
    result = run_tool("bash", command="pwd; echo out; echo err >&2; echo out2")
    assert not result.is_error
    assert result.content == f"{project.resolve()}\nout\nerr\nout2\nexit code 0"
    assert result.summary.startswith("exit 0 · ")
    assert result.meta["exit_code"] == 0
    assert result.meta["command"] == "pwd; echo out; echo err >&2; echo out2"
    assert result.meta["duration"] >= 0


def test_a_failing_command_is_an_error_with_its_exit_code(run_tool: RunTool) -> None:
    result = run_tool("bash", command="echo partial; exit 7")
    assert result.is_error
    assert result.content == "partial\nexit code 7"
    assert result.summary.startswith("exit 7 · ")


def test_no_output_and_no_stdin(run_tool: RunTool) -> None:
    assert run_tool("bash", command="true").content == "(no output)\nexit code 0"
    # stdin is /dev/null: a command that reads it gets EOF at once instead of hanging.
    result = run_tool("bash", command="cat; read -r line || echo eof")
    assert result.content == "eof\nexit code 0"


def test_the_command_is_passed_as_written(project: Path, run_tool: RunTool) -> None:
    command = """printf '%s|' "$HOME" '$HOME' "a  b" `echo tick` $((1+2)) "{}" '%d'"""
    result = run_tool("bash", command=command)
    assert result.content.splitlines()[0] == f"{os.environ['HOME']}|$HOME|a  b|tick|3|{{}}|%d|"


def test_timeout_kills_the_whole_process_group(run_tool: RunTool) -> None:
    started = time.monotonic()
    result = run_tool("bash", command="echo PID=$$; sleep 30 & sleep 30", timeout=1)
    assert time.monotonic() - started < 10  # generous: the point is not waiting 30s
    assert result.is_error
    assert "timed out after 1s" in result.content
    assert result.summary.startswith("timed out · ")
    assert result.meta["timed_out"] is True
    assert wait_until_gone(shell_pid(result.content)) == []


def test_sigterm_resistant_children_are_killed_too(run_tool: RunTool) -> None:
    result = run_tool("bash", command="echo PID=$$; bash -c 'trap \"\" TERM; sleep 30' & wait", timeout=1)
    assert "timed out" in result.content
    assert wait_until_gone(shell_pid(result.content)) == []


def test_cancel_from_another_thread_interrupts(project: Path) -> None:
    ctx = ToolContext(root=project, bash_timeout=60)
    threading.Timer(0.5, ctx.cancel.cancel).start()
    started = time.monotonic()
    result = BASH.fn(BashArgs(command="echo PID=$$; sleep 30 | cat"), ctx)
    assert time.monotonic() - started < 10
    assert result.is_error
    assert "interrupted by user" in result.content
    assert result.meta["interrupted"] is True
    assert result.summary.startswith("interrupted · ")
    assert wait_until_gone(shell_pid(result.content)) == []


def test_a_shell_that_closes_its_output_is_waited_for_to_the_end(run_tool: RunTool) -> None:
    # The output ends long before the shell does: its exit (seen through a pidfd on Linux) gives the code.
    result = run_tool("bash", command="echo before; exec >&- 2>&-; sleep 0.3; exit 5")
    assert result.content == "before\nexit code 5"
    assert result.is_error


def test_a_shell_that_closed_its_output_still_times_out(run_tool: RunTool) -> None:
    result = run_tool("bash", command="echo PID=$$; exec >&- 2>&-; sleep 30", timeout=1)
    assert "timed out after 1s" in result.content
    assert wait_until_gone(shell_pid(result.content)) == []


def test_background_jobs_holding_the_output_are_stopped(run_tool: RunTool) -> None:
    started = time.monotonic()
    result = run_tool("bash", command="echo PID=$$; sleep 30 & echo started")
    assert time.monotonic() - started < 10
    assert "started" in result.content
    assert "background jobs still holding the output were stopped" in result.content
    assert result.meta["exit_code"] == 0
    assert not result.is_error
    assert wait_until_gone(shell_pid(result.content)) == []


def test_background_jobs_with_redirected_output_keep_running(project: Path, run_tool: RunTool) -> None:
    result = run_tool("bash", command="sleep 30 > /dev/null 2>&1 & echo PID=$!")
    try:
        assert "background" not in result.content
        assert result.meta["exit_code"] == 0
        os.kill(shell_pid(result.content), 0)  # still running
    finally:
        os.kill(shell_pid(result.content), 9)


def test_output_is_capped_keeping_head_and_tail(project: Path) -> None:
    ctx = ToolContext(root=project, max_output_chars=1000)
    result = BASH.fn(BashArgs(command="seq 1 100000"), ctx)
    lines = result.content.splitlines()
    assert lines[0] == "1"
    assert lines[-2:] == ["100000", "exit code 0"]
    assert "cut from the middle of the output" in result.content
    assert len(result.content) < 1400
    whole = "".join(f"{i}\n" for i in range(1, 100001))
    assert result.meta["output_bytes"] == len(whole) and result.meta["output_lines"] == 100_000
    # The cap limits what the model sees; the whole output rides along for the context engine to save.
    assert result.full is not None and (result.full.size, result.full.lines) == (len(whole), 100_000)
    assert result.full.text(10**7) == whole
    assert result.full.status == "exit code 0"
    result.full.discard()


def test_an_uncut_output_has_no_separate_whole(run_tool: RunTool) -> None:
    assert run_tool("bash", command="seq 1 10").full is None


def test_a_running_command_reports_its_output_as_it_arrives(project: Path) -> None:
    seen: list[str] = []
    ctx = ToolContext(root=project, on_output=seen.append)
    result = BASH.fn(BashArgs(command="printf 'caf\\xc3'; sleep 0.2; printf '\\xa9\\nnext\\n'"), ctx)
    assert "".join(seen) == "café\nnext\n"  # a character split between two reads arrives whole
    assert result.content == "café\nnext\nexit code 0"


def test_a_flood_of_output_is_still_bounded_and_interruptible(project: Path) -> None:
    ctx = ToolContext(root=project, max_output_chars=2000)
    threading.Timer(0.5, ctx.cancel.cancel).start()
    result = BASH.fn(BashArgs(command="yes flood"), ctx)
    assert "interrupted by user" in result.content
    assert len(result.content) < 2600
    assert result.meta["output_bytes"] > 2000


def test_output_buffer_reports_what_it_cut() -> None:
    buffer = OutputBuffer(10)
    for _ in range(100):
        buffer.write(b"abc\n")
    text = buffer.text()
    assert text.startswith("abc\n\n... [392 bytes (98 lines) cut from the middle")
    assert text.endswith("] ...\nabc\n")
    small = OutputBuffer(100)
    small.write("héllo\n".encode())
    assert small.text() == "héllo\n"


def test_timeout_argument_is_validated(run_tool: RunTool) -> None:
    assert "timeout" in run_tool("bash", command="true", timeout=0).content
    assert "timeout" in run_tool("bash", command="true", timeout=10_000).content
    assert run_tool("bash", command="").is_error


def test_preview_is_the_full_command(ctx: ToolContext) -> None:
    assert BASH.preview is not None
    command = "rm -rf build && make -j8 all 2>&1 | tail -n 50"
    assert BASH.preview(BashArgs(command=command), ctx) == command
    assert BASH.mutating


@pytest.mark.parametrize("env", ["PAGER", "GIT_PAGER"])
def test_pagers_are_disabled(run_tool: RunTool, env: str) -> None:
    assert run_tool("bash", command=f"echo ${env}").content.startswith("cat\n")


def test_the_environment_kept_between_commands_follows_every_change(
        project: Path, run_tool: RunTool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command's environment is built once and kept (see `command_environment`): a variable set, changed or
    removed in swecli's environment, or another policy, is seen by the very next command."""
    show = 'echo "[${PYTEST_KEPT-unset}] [${OTHER_VAR-unset}]"'
    monkeypatch.delenv("PYTEST_KEPT", raising=False)
    assert "[unset]" in run_tool("bash", command=show).content
    monkeypatch.setenv("PYTEST_KEPT", "one")
    assert "[one]" in run_tool("bash", command=show).content
    monkeypatch.setenv("PYTEST_KEPT", "two")
    assert "[two]" in run_tool("bash", command=show).content
    monkeypatch.setenv("OTHER_VAR", "x")  # not in the core allowlist: withheld until pass_env names it
    assert "[two] [unset]" in run_tool("bash", command=show).content
    ctx = ToolContext(root=project, environment=CommandEnvironment(pass_env=("OTHER_VAR",)))
    assert command_environment(ctx)["OTHER_VAR"] == "x"
    monkeypatch.delenv("PYTEST_KEPT")
    assert "[unset]" in run_tool("bash", command=show).content


def test_each_caller_gets_its_own_copy_of_the_environment(project: Path) -> None:
    ctx = ToolContext(root=project)
    first = command_environment(ctx)
    first["PAGER"] = "less"
    first["INJECTED"] = "1"
    again = command_environment(ctx)
    assert again["PAGER"] == "cat" and "INJECTED" not in again
