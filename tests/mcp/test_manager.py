"""The client manager against the SDK-written test server, over stdio and streamable HTTP: freshly started
(`python server.py`) in one test per transport, forked copies (tests/mcp/conftest.py) in the others."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from swecli.config import McpServerConfig
from swecli.llm.base import CancelToken
from swecli.mcp.manager import McpCallError, McpManager
from tests.helpers import alive
from tests.mcp.conftest import HttpServer, forked_server, launcher_args, stdio_server

pytestmark = pytest.mark.xdist_group("mcp-manager")  # with `--dist loadgroup`: the module's servers start once


@pytest.fixture(scope="module")
def manager(tmp_path_factory: pytest.TempPathFactory, forked_http_server: HttpServer) -> Iterator[McpManager]:
    root = tmp_path_factory.mktemp("project")
    servers = {"kit": forked_server(env={"NOTES_FILE": str(root / "notes.txt")}),
               "web": McpServerConfig(url=forked_http_server.url)}
    started = McpManager(servers, root, startup_timeout=60, tool_timeout=60).start()
    assert started.wait_started(90)
    yield started
    started.close()


def test_freshly_started_servers_list_their_tools_and_answer_on_both_transports(project: Path,
                                                                                 http_url: str) -> None:
    servers = {"kit": stdio_server(), "web": McpServerConfig(url=http_url)}
    manager = McpManager(servers, project, startup_timeout=60, tool_timeout=60).start()
    try:
        assert manager.wait_started(90)
        for server in servers:
            _lists_its_tools_with_annotations(manager, server)
            _returns_results_and_errors(manager, server)
    finally:
        manager.close()


@pytest.mark.parametrize("server", ["kit", "web"])
def test_servers_list_their_tools_with_annotations(manager: McpManager, server: str) -> None:
    _lists_its_tools_with_annotations(manager, server)


@pytest.mark.parametrize("server", ["kit", "web"])
def test_a_call_returns_the_servers_result(manager: McpManager, server: str) -> None:
    _returns_results_and_errors(manager, server)


def _lists_its_tools_with_annotations(manager: McpManager, server: str) -> None:
    state = manager.state(server)
    assert state is not None and state.status == "ready", state
    tools = {t.name: t for t in state.tools}
    assert {"echo", "add", "write_note", "slow", "fail", "huge", "picture", "lookup"} <= set(tools)
    assert tools["echo"].read_only and not tools["write_note"].read_only
    assert tools["add"].parameters["required"] == ["a", "b"]


def _returns_results_and_errors(manager: McpManager, server: str) -> None:
    result = manager.call(server, "add", {"a": 2, "b": 40})
    assert not result.is_error and result.content[0].text == "42"  # type: ignore[union-attr]
    failed = manager.call(server, "fail", {"reason": "testing"})
    assert failed.is_error and "failed on purpose: testing" in failed.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("server", ["kit", "web"])
def test_the_cancel_token_abandons_a_slow_call_and_the_session_goes_on(manager: McpManager, server: str) -> None:
    cancel = CancelToken()
    threading.Timer(0.3, cancel.cancel).start()
    with pytest.raises(McpCallError, match="interrupted by user"):
        manager.call(server, "slow", {"seconds": 60}, cancel)
    assert manager.call(server, "echo", {"text": "still here"}).content[0].text == "still here"  # type: ignore[union-attr]


def test_a_call_past_the_timeout_is_abandoned(manager: McpManager) -> None:
    with pytest.raises(McpCallError, match=r"did not answer slow within 0\.5s"):
        manager.call("kit", "slow", {"seconds": 60}, timeout=0.5)
    assert manager.call("kit", "echo", {"text": "ok"}).content[0].text == "ok"  # type: ignore[union-attr]


def test_start_never_waits_and_a_hung_or_missing_server_gives_one_notice(project: Path) -> None:
    pid_file = project / "hung.pid"  # a server that never answers and ignores the end of its input
    hung = McpServerConfig(command=sys.executable, args=[
        "-c", f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(600)"])
    manager = McpManager({"hung": hung, "ghost": McpServerConfig(command="no-such-mcp-server-xyz")}, project,
                         startup_timeout=0.5)  # the hung one is waited for this long: keep it short
    try:
        manager.start()
        assert manager.state("hung").status == "starting"  # type: ignore[union-attr]
        assert manager.wait_started(60)
        states = {s.name: s for s in manager.states()}
        assert states["ghost"].status == "failed" and states["ghost"].error == \
            "command not found: no-such-mcp-server-xyz"
        assert states["hung"].status == "failed" and "did not start within 0.5s" in states["hung"].error
        notices = manager.take_notices()
        assert sorted(text.split(" ")[2] for _, text in notices) == ["ghost", "hung"]
        assert manager.take_notices() == []  # one notice each, not one per look
        with pytest.raises(McpCallError, match="'ghost' is failed"):
            manager.call("ghost", "echo", {})
    finally:
        manager.close()
    assert not alive(int(pid_file.read_text()))  # killed (after the SDK's 2 s for it to end at EOF), not orphaned


def _pid_file_launcher(pid_file: Path) -> McpServerConfig:
    """A forked server's launcher that writes its pid: the process the manager starts and stops."""
    return McpServerConfig(command=sys.executable, args=launcher_args(
        f"import os; open({str(pid_file)!r}, 'w').write(str(os.getpid()))"))


def test_disable_stops_the_process_and_enable_starts_it_again(project: Path) -> None:
    pid_file = project / "pid"
    manager = McpManager({"kit": _pid_file_launcher(pid_file)}, project, startup_timeout=60).start()
    try:
        assert manager.wait_started(90) and manager.state("kit").status == "ready"  # type: ignore[union-attr]
        first = int(pid_file.read_text())
        manager.stop_server("kit")
        assert manager.state("kit").status == "disabled" and not alive(first)  # type: ignore[union-attr]
        manager.start_server("kit")
        assert manager.wait_started(90)
        state = manager.state("kit")
        assert state is not None and state.status == "ready" and state.generation == 2
        assert int(pid_file.read_text()) != first
    finally:
        manager.close()
    assert not alive(int(pid_file.read_text()))


def test_no_orphan_when_the_program_dies_of_an_exception(project: Path) -> None:
    pid_file = project / "pid"
    program = textwrap.dedent(f"""
        from pathlib import Path
        from swecli.config import McpServerConfig
        from swecli.mcp.manager import McpManager
        server = McpServerConfig.model_validate_json({_pid_file_launcher(pid_file).model_dump_json()!r})
        manager = McpManager({{"kit": server}}, Path({str(project)!r}), startup_timeout=60).start()
        assert manager.wait_started(90) and manager.state("kit").status == "ready"
        raise RuntimeError("crash without closing anything")
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert "crash without closing anything" in done.stderr
    assert not alive(int(pid_file.read_text()))


def test_a_server_program_found_only_where_commands_write_is_not_started(project: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # `~/.local` writable and `~/.local/bin` on PATH: a sandboxed command may have written the program swecli
    # would start, outside the sandbox, with the server's env (tests/test_hostile_repo_e2e.py has the attack)
    home = project / "home"
    planted = home / ".local" / "bin" / "notes-server"
    planted.parent.mkdir(parents=True)
    planted.write_text(f"#!/bin/sh\ntouch {project}/ran\n")
    planted.chmod(0o755)
    (home / ".config" / "swecli").mkdir(parents=True)
    (home / ".config" / "swecli" / "config.toml").write_text('[sandbox]\nwritable_paths = ["~/.local"]\n')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    config = McpServerConfig(command="notes-server", env={"PATH": f"{planted.parent}:/usr/bin:/bin"})
    manager = McpManager({"notes": config}, project / "elsewhere", startup_timeout=30)
    try:
        manager.start()
        assert manager.wait_started(60)
        state = manager.state("notes")
        assert state is not None and state.status == "failed"
        assert f"found only at {planted}" in state.error and "absolute path" in state.error
    finally:
        manager.close()
    assert not (project / "ran").exists()
