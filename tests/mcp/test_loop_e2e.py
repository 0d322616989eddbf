"""MCP tools in the real loop: `open_session` + the real providers over HTTP against the scripted LLM,
on both wires, with the SDK-written test server over stdio and streamable HTTP."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from swecli.assembly import AgentSession, open_session
from swecli.config import McpConfig, McpServerConfig
from swecli.events import Event, Notice, ToolStarted
from swecli.testing.server import Call, Reply, ScriptedLLM, Step, Wire
from tests.helpers import not_about_the_sandbox, scripted_settings
from tests.mcp.conftest import HttpServer, forked_server

WIRES: list[Wire] = ["openai", "anthropic"]
TRANSPORTS = [("openai", "stdio"), ("anthropic", "http")]
"""Each wire with one MCP transport: both wires and both transports through the loop, in two sessions
instead of four. The servers are forked copies (conftest.py `forked_server`); the manager's own tests
(test_manager.py) run every call on both transports against freshly started ones."""

pytestmark = pytest.mark.xdist_group("mcp-loop")  # with `--dist loadgroup`: one HTTP server for the module


def session(root: Path, llm: ScriptedLLM, servers: dict[str, McpServerConfig], events: list[Event], *,
            mode: str = "default", **mcp: Any) -> AgentSession:
    # as long to start as this helper waits: under load a server that imports the whole SDK (the real PyPI
    # one) ran out of the default 30 s three times in one afternoon, and the run went on without its tools
    mcp.setdefault("startup_timeout", 90)
    settings = scripted_settings(llm, context={"offload": True}, mode=mode, mcp=McpConfig(servers=servers, **mcp))
    s = open_session(root, settings, listeners=[events.append])
    assert s.mcp is not None and s.mcp.manager.wait_started(90), s.mcp and s.mcp.manager.states()
    return s


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] if "function" in t else t["name"] for t in body.get("tools", [])]


def tool_results(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """(content, is_error) of every tool result in the request, on either wire."""
    out = []
    for message in body["messages"]:
        if message["role"] == "tool":
            out.append((message["content"], False))
        elif isinstance(message.get("content"), list):
            out += [(b.get("content", ""), bool(b.get("is_error"))) for b in message["content"]
                    if b.get("type") == "tool_result"]
    return out


def description(body: dict[str, Any], name: str) -> str:
    for tool in body.get("tools", []):
        if tool.get("name", tool.get("function", {}).get("name")) == name:
            return str(tool.get("description") or tool["function"]["description"])
    raise AssertionError(f"{name} not sent")


def kit(transport: str, project: Path, request: pytest.FixtureRequest) -> tuple[McpServerConfig, Path]:
    """The test server as `transport` (a stdio one started by the session, or the module's HTTP one) and
    the file its `write_note` appends to."""
    if transport == "stdio":
        notes = project / "notes.txt"
        return forked_server(env={"NOTES_FILE": str(notes)}), notes
    http: HttpServer = request.getfixturevalue("forked_http_server")
    return McpServerConfig(url=http.url), http.notes


@pytest.mark.parametrize(("wire", "transport"), TRANSPORTS)
def test_loaded_tools_run_with_approval_offload_and_errors(project: Path, wire: Wire, transport: str,
                                                           request: pytest.FixtureRequest) -> None:
    server, notes = kit(transport, project, request)
    steps: list[Step] = [
        Reply(calls=[Call("mcp__kit__add", {"a": 2, "b": 3}),
                     Call("mcp__kit__write_note", {"title": "t", "body": "b"})]),
        Reply(calls=[Call("mcp__kit__fail", {"reason": "bad input"}), Call("mcp__kit__huge", {"lines": 3000}),
                     Call("mcp__kit__lookup", {"key": "cache"})]),
        Reply("done"),
    ]
    events: list[Event] = []
    with ScriptedLLM(steps, wire=wire) as llm:
        s = session(project, llm, {"kit": server}, events)
        turn = s.run("use the kit")
        session_id = s.session_id
        s.close()
    assert turn.stop_reason == "done"
    names = tool_names(llm.requests[0])
    assert names[names.index("write_file") + 1:] == [f"mcp__kit__{t}" for t in
                                                       ("echo", "add", "write_note", "slow", "fail", "huge",
                                                        "picture", "lookup")]
    added, note = tool_results(llm.requests[1])
    assert added == ("5", False)
    # default mode, nobody to ask: the tool without readOnlyHint is refused and never runs
    assert "needs the user's approval" in note[0] and not notes.exists()
    failed, huge, lookup = tool_results(llm.requests[2])[2:]
    assert "failed on purpose: bad input" in failed[0]
    if wire == "anthropic":
        assert failed[1]
    assert ".swecli/tool_results/" in huge[0] and len(huge[0]) < 10_000  # offloaded like any large output
    assert lookup[0] == "found cache\n[resource memo://cache]\ndefinition of cache"
    log = (project / ".swecli" / "logs" / f"{session_id}.jsonl").read_text()
    assert "mcp__kit__add" in log and "mcp__kit__write_note" in log
    assert not [e for e in events if isinstance(e, Notice) and "prompt cache" in e.text]


@pytest.mark.parametrize("wire", WIRES)
def test_deferred_tools_load_through_tool_search_and_keep_the_prefix(project: Path, wire: Wire,
                                                                      forked_http_server: HttpServer) -> None:
    steps: list[Step] = [
        Reply(calls=[Call("tool_search", {"query": "add two integers"})]),
        Reply(calls=[Call("mcp__web__add", {"a": 20, "b": 22}), Call("mcp__web__write_note",
                                                                      {"title": "x", "body": "y"})]),
        Reply("done"),
    ]
    events: list[Event] = []
    with ScriptedLLM(steps, wire=wire) as llm:
        s = session(project, llm, {"web": McpServerConfig(url=forked_http_server.url)}, events, mode="plan",
                    schema_budget=50)
        turn = s.run("add numbers")
        stats = s.agent.context.mechanisms.prefix.stats  # type: ignore[union-attr]
        s.close()
    assert turn.stop_reason == "done"
    first, second, third = (tool_names(body) for body in llm.requests)
    assert first[-1] == "tool_search" and not [n for n in first if n.startswith("mcp__")]
    assert "- web: echo (Echo the text back unchanged), add (Add two integers" in \
        description(llm.requests[0], "tool_search")
    assert "mcp__web__add" in tool_results(llm.requests[1])[0][0]
    assert second == [*first, "mcp__web__add"]  # appended: the earlier tools stay a prefix
    assert third == [*second, "mcp__web__write_note"]  # called by name: loaded on the spot
    add, note = tool_results(llm.requests[2])[1:]
    assert add[0] == "42"  # read-only: allowed in plan mode
    assert "not available in plan mode" in note[0]
    assert stats.violations == 0 and stats.rewrites == 2  # two planned prefix changes, no warning


@pytest.mark.parametrize(("wire", "transport"), TRANSPORTS)
def test_slow_tools_time_out_or_stop_on_esc(project: Path, wire: Wire, transport: str,
                                            request: pytest.FixtureRequest) -> None:
    steps: list[Step] = [Reply(calls=[Call("mcp__kit__slow", {"seconds": 60})]), Reply("next"),
                         Reply(calls=[Call("mcp__kit__slow", {"seconds": 60})])]
    events: list[Event] = []
    with ScriptedLLM(steps, wire=wire) as llm:
        s = session(project, llm, {"kit": kit(transport, project, request)[0]}, events, tool_timeout=0.5)
        timed_out = s.run("wait")
        s.settings.mcp.tool_timeout = 60
        s.mcp.manager.tool_timeout = 60  # type: ignore[union-attr]

        def press_esc(event: Event) -> None:
            if isinstance(event, ToolStarted):
                threading.Timer(0.3, s.agent.cancel.cancel).start()

        s.bus.listeners.append(press_esc)
        interrupted = s.run("wait again")
        s.close()
    assert timed_out.stop_reason == "done"
    content, _ = tool_results(llm.requests[1])[0]
    assert "did not answer slow within 0.5s" in content
    assert interrupted.stop_reason == "interrupted"


def test_a_failed_server_gives_one_notice_and_the_session_works(project: Path) -> None:
    events: list[Event] = []
    with ScriptedLLM([Reply("fine"), Reply("still fine")]) as llm:
        s = session(project, llm, {"ghost": McpServerConfig(command="no-such-mcp-server-xyz")}, events)
        s.run("hello")
        s.run("again")
        s.close()
    warnings = not_about_the_sandbox([e.text for e in events if isinstance(e, Notice) and e.level == "warning"])
    assert warnings == ["MCP server ghost failed to start: command not found: no-such-mcp-server-xyz. Its tools "
                        "are unavailable (see /mcp; its log is .swecli/logs/mcp-ghost.log)."]
    assert not [n for n in tool_names(llm.requests[0]) if n.startswith(("mcp__", "tool_search"))]


def test_the_real_time_server_from_pypi(project: Path) -> None:
    steps: list[Step] = [Reply(calls=[Call("mcp__time__get_current_time", {"timezone": "Asia/Tokyo"})]),
                         Reply("done")]
    events: list[Event] = []
    server = McpServerConfig(command="mcp-server-time", args=["--local-timezone", "UTC"])
    with ScriptedLLM(steps) as llm:
        s = session(project, llm, {"time": server}, events)
        s.run("what time is it in Tokyo?")
        s.close()
    assert {"mcp__time__get_current_time", "mcp__time__convert_time"} <= set(tool_names(llm.requests[0]))
    sent = next(t for t in llm.requests[0]["tools"] if t["function"]["name"] == "mcp__time__get_current_time")
    assert "UTC" in json.dumps(sent)  # the server's schema, with its --local-timezone default, as sent
    content, is_error = tool_results(llm.requests[1])[0]
    assert not is_error and '"timezone": "Asia/Tokyo"' in content and '"datetime": "' in content
