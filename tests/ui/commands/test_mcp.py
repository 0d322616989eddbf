"""/mcp and MCP tools in the real REPL (a pseudo-terminal), with the SDK-written test server."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import pytest

from swecli.testing.server import Call, Reply, ScriptedLLM, ServerInfo
from tests.helpers import alive
from tests.mcp.conftest import launcher_args
from tests.ui.harness import Terminal, spawn_swecli

pytest.importorskip("pexpect")
pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")


def _config(project: Path) -> Path:
    """kit: the test server, forked behind a launcher process that writes its pid (the process swecli starts
    and stops); ghost: a command that does not exist."""
    pid_file = project / "server.pid"
    args = launcher_args(f"import os; open({str(pid_file)!r}, 'w').write(str(os.getpid()))")
    (project / ".swecli").mkdir()
    (project / ".swecli" / "config.toml").write_text(
        "[mcp.servers.kit]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps(args)}\n"
        f"env = {{ NOTES_FILE = {json.dumps(str(project / 'notes.txt'))} }}\n\n"
        "[mcp.servers.ghost]\ncommand = \"no-such-mcp-server-xyz\"\n")
    return pid_file


def _wait_ready(term: Terminal) -> None:
    """Ask `/mcp` until it lists kit as ready (swecli imports the MCP client first: seconds under load)."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        term.line("/mcp")
        if term.expect(re.compile(r"kit · (ready|starting)")).endswith("ready"):
            return  # the caller reads the rest of the listing
        term.prompt()
        time.sleep(0.25)  # between two looks at a state, not before a key: nothing races the terminal
    raise AssertionError("the kit server never became ready")


def test_mcp_lists_servers_runs_tools_with_approval_and_disables_for_the_session(project: Path,
                                                                                 tmp_path: Path) -> None:
    pid_file = _config(project)
    home = tmp_path / "home"
    home.mkdir()
    steps = [Reply(calls=[Call("mcp__kit__echo", {"text": "ping"}),
                          Call("mcp__kit__write_note", {"title": "t", "body": "from the model"})]),
             Reply("Both done.")]
    with ScriptedLLM(steps, info=ServerInfo(kind="llamacpp", window=64_000)) as llm:
        term = spawn_swecli(llm.base_url, project, home)
        try:
            term.expect("mcp.servers.kit")  # project servers start only once the user trusts the project
            term.expect("Trust this project")
            term.send("y")
            term.prompt()  # the prompt does not wait for the servers
            _wait_ready(term)
            term.expect("project scope")  # where the server is configured
            term.expect("mcp__kit__echo")
            term.expect("read-only")
            term.expect("mcp__kit__write_note")
            term.expect("asks in default mode")
            term.expect("MCP tool schemas:")
            term.expect("budget 6,400 (mcp.schema_budget)")  # 10% of the server's window, as `swecli mcp list` says
            term.prompt()
            assert "ghost · failed: command not found: no-such-mcp-server-xyz" in term.text  # listed before kit
            assert term.text.count("MCP server ghost failed to start") == 1  # one notice, however often one looks

            term.line("use the kit")
            term.expect("MCP server kit · tool write_note")  # the approval preview
            term.expect("Allow?")
            term.send("y")
            term.expect("Both done.")
            term.prompt()
            assert (project / "notes.txt").read_text() == "t: from the model\n"

            term.line("/mcp disable kit")
            term.expect("Stopped kit for this session")
            term.prompt()
            first = int(pid_file.read_text())
            assert not alive(first)
            term.line("/mcp enable kit")
            term.expect("Starting kit for this session")
            term.prompt()
            _wait_ready(term)
            term.prompt()
            second = int(pid_file.read_text())
            assert second != first and alive(second)
            term.send("\x04")  # Ctrl-D
            assert term.exit_status() == 0
        finally:
            term.close()
    assert not alive(second)  # no orphan after exit
    assert "ping" in json.dumps(llm.requests[1]["messages"])
