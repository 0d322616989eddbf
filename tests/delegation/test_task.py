"""The `task` tool in the real loop over HTTP, on both wires: a child with a fresh context and read-only
tools returns one bounded report; its transcript is written and linked from the session log; parallel
children; budgets; user-defined agents and the parent's mode; Esc."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from swecli.assembly import AgentSession, open_session
from swecli.config import SubagentsConfig
from swecli.delegation.runner import WRAP_UP
from swecli.events import ChildEvent, Event, ToolStarted
from swecli.testing.server import Call, Reply, ScriptedLLM
from tests.delegation.scripts import Router, first_user_text, tool_names
from tests.helpers import scripted_settings, texts

SECRET_LINE = "DATABASE_URL = 'postgres://db.internal:5432/app'"


def session(root: Path, llm: ScriptedLLM, events: list[Event] | None = None, mode: str = "auto",
            trusted: bool = False, **subagents: Any) -> AgentSession:
    settings = scripted_settings(llm, mode=mode, subagents=SubagentsConfig(**subagents)).with_project_trust(trusted)
    sink = events if events is not None else []
    return open_session(root, settings, listeners=[sink.append])


def make_project(root: Path) -> None:
    (root / "app").mkdir()
    (root / "app" / "settings.py").write_text(f"DEBUG = False\n{SECRET_LINE}\n")
    (root / "app" / "main.py").write_text("from app.settings import DATABASE_URL\n" + "x = 1\n" * 300)


def log_records(root: Path, session_id: str) -> list[dict[str, Any]]:
    path = root / ".swecli" / "logs" / f"{session_id}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_child_explores_in_its_own_context_and_returns_one_report(project: Path, wire: str) -> None:
    make_project(project)
    job = "Find where the database URL is configured; report the file and line."
    router = Router(
        parent=[Reply(calls=[Call("task", {"description": "Find DB config", "prompt": job})]),
                Reply("The database URL is set in app/settings.py line 2.")],
        children={"database URL": [
            Reply(calls=[Call("grep", {"pattern": "DATABASE_URL"})]),
            Reply(calls=[Call("read_file", {"path": "app/settings.py"}), Call("read_file", {"path": "app/main.py"})]),
            Reply("app/settings.py:2 sets DATABASE_URL (postgres on db.internal)."),
        ]})
    events: list[Event] = []
    with ScriptedLLM(router.steps(), wire=wire) as llm:  # type: ignore[arg-type]
        s = session(project, llm, events)
        turn = s.run("where is the database configured?")
        s.close()
    router.assert_used()
    assert turn.answer == "The database URL is set in app/settings.py line 2."
    first_child = router.child_bodies["database URL"][0]
    conversation = [m for m in first_child["messages"] if m["role"] != "system"]
    assert len(conversation) == 1 and first_user_text(first_child) == job  # a fresh context: the job only
    assert tool_names(first_child) == ["grep", "list_files", "read_file", "repo_map"]  # read-only: no task, no todo
    assert "task" in tool_names(router.parent_bodies[0])
    report = texts(router.parent_bodies[1])[-1]
    assert report.startswith("[sub-agent explore finished: 3 step(s), 3 tool call(s),")
    assert "app/settings.py:2 sets DATABASE_URL" in report
    # The files the child read stayed in the child's context.
    assert not any(SECRET_LINE in t or "x = 1" in t for t in texts(router.parent_bodies[1]))
    # Progress reached the parent's bus, linked to the task call.
    call_id = s.agent.history[1].tool_calls[0].id  # type: ignore[union-attr]
    child_tools = [e.event.call.name for e in events if isinstance(e, ChildEvent) and isinstance(e.event, ToolStarted)]
    assert child_tools == ["grep", "read_file", "read_file"]
    assert {e.call_id for e in events if isinstance(e, ChildEvent)} == {call_id}
    # The full transcript is on disk and the log links it to the parent call.
    records = log_records(project, s.session_id)
    linked = [r for r in records if r.get("parent_call") == call_id]
    assert [r["event"] for r in linked] == ["llm_call", "tool", "llm_call", "tool", "tool", "llm_call", "subagent"]
    transcript = project / linked[-1]["transcript"]
    assert f"transcript: {linked[-1]['transcript']}" in report
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert lines[0]["type"] == "meta"
    assert any(SECRET_LINE in json.dumps(line) for line in lines)


def test_parallel_tasks_run_side_by_side_and_report_in_call_order(project: Path) -> None:
    both_running = threading.Event()
    seen: set[str] = set()
    lock = threading.Lock()

    def first_step(name: str) -> Any:
        def step(body: dict[str, Any]) -> Reply:
            with lock:
                seen.add(name)
                if len(seen) == 2:
                    both_running.set()
            both_running.wait(30)  # each child waits for the other: only parallel children both get here
            return Reply(f"{name} report: found it")
        return step

    router = Router(
        parent=[Reply(calls=[Call("task", {"description": "alpha", "prompt": "Investigate alpha."}),
                             Call("task", {"description": "beta", "prompt": "Investigate beta."})]),
                Reply("both done")],
        children={"alpha": [first_step("alpha")], "beta": [first_step("beta")]})
    with ScriptedLLM(router.steps()) as llm:
        s = session(project, llm, parallel=2)
        s.run("look into alpha and beta")
        s.close()
    assert both_running.is_set()
    results = [m for m in router.parent_bodies[1]["messages"] if m["role"] == "tool"]
    assert ["alpha report" in results[0]["content"], "beta report" in results[1]["content"]] == [True, True]


def test_a_child_at_its_step_limit_writes_its_report_without_tools(project: Path) -> None:
    make_project(project)

    def wrap_up(body: dict[str, Any]) -> Reply:
        assert WRAP_UP in texts(body)[-1]
        return Reply("Partial: DATABASE_URL is in app/settings.py; main.py not checked.")

    router = Router(
        parent=[Reply(calls=[Call("task", {"description": "survey", "prompt": "Survey every module."})]),
                Reply("ok")],
        children={"Survey": [Reply(calls=[Call("list_files", {})]), Reply(calls=[Call("grep", {"pattern": "x"})]),
                             wrap_up]})
    with ScriptedLLM(router.steps()) as llm:
        s = session(project, llm, max_iterations=2)
        s.run("survey the code")
        s.close()
    report = texts(router.parent_bodies[1])[-1]
    assert report.startswith("[sub-agent explore stopped at its step limit: 3 step(s)")
    assert "Partial: DATABASE_URL is in app/settings.py" in report
    # One log record for the call, with its outcome, though the child ran twice (the wrap-up is a second run).
    (record,) = [r for r in log_records(project, s.session_id) if r["event"] == "subagent"]
    assert record["stop_reason"] == "iteration_limit" and record["iterations"] == 3
    assert project / record["transcript"] == project / ".swecli" / "sessions" / s.session_id / "subagents" / (
        record["parent_call"] + ".jsonl")


def test_a_child_over_its_token_budget_stops_and_reports(project: Path) -> None:
    router = Router(
        parent=[Reply(calls=[Call("task", {"description": "big", "prompt": "Read everything."})]), Reply("ok")],
        children={"everything": [
            Reply(calls=[Call("list_files", {})], usage={"prompt_tokens": 900_000, "completion_tokens": 10}),
            Reply("Only saw the file list before the budget ran out."),
        ]})
    with ScriptedLLM(router.steps()) as llm:
        s = session(project, llm, max_tokens=5_000)
        s.run("read it all")
        s.close()
    report = texts(router.parent_bodies[1])[-1]
    assert report.startswith("[sub-agent explore stopped at its token budget")
    assert "Only saw the file list" in report
    child = router.child_bodies["everything"]
    assert len(child) == 2 and WRAP_UP in texts(child[1])[-1]  # the list_files call itself never ran


def test_a_long_report_is_cut_and_points_to_the_transcript(project: Path) -> None:
    long_report = "\n".join(f"finding {i}: something at src/mod{i}.py:{i}" for i in range(400))
    router = Router(parent=[Reply(calls=[Call("task", {"description": "all", "prompt": "List all findings."})]),
                            Reply("ok")],
                    children={"findings": [Reply(long_report)]})
    with ScriptedLLM(router.steps()) as llm:
        s = session(project, llm, report_tokens=300)
        s.run("find everything")
        s.close()
    report = texts(router.parent_bodies[1])[-1]
    assert "finding 0:" in report and "finding 399:" not in report
    assert "[report cut at 300 tokens; the whole report is in .swecli/sessions/" in report


@pytest.mark.parametrize(("mode", "written"), [("plan", False), ("auto", True)])
def test_a_user_defined_agent_may_write_only_as_the_parents_mode_allows(project: Path, mode: str,
                                                                         written: bool) -> None:
    agents = project / ".swecli" / "agents"
    agents.mkdir(parents=True)
    (agents / "scribe.md").write_text("---\ndescription: Writes short notes to files.\ntools: Read, Write\n"
                                      "model: other-model\n---\nYou write the notes you are asked for.\n")
    router = Router(
        parent=[Reply(calls=[Call("task", {"description": "note", "prompt": "Write NOTE.txt saying hi.",
                                           "agent": "scribe"})]), Reply("done")],
        children={"NOTE.txt": [Reply(calls=[Call("write_file", {"path": "NOTE.txt", "content": "hi\n"})]),
                               Reply("Wrote it." if written else "Could not write it.")]},
        child_marker="You write the notes you are asked for.")
    with ScriptedLLM(router.steps()) as llm:
        s = session(project, llm, mode=mode, trusted=True)  # a project agent that brings tools: trusted
        s.run("leave a note")
        s.close()
    child = router.child_bodies["NOTE.txt"]
    assert child[0]["model"] == "other-model"
    assert tool_names(child[0]) == ["read_file", "write_file"]
    assert "scribe: Writes short notes to files." in json.dumps(router.parent_bodies[0]["tools"])
    assert (project / "NOTE.txt").exists() is written
    result = texts(child[1])[-1]
    assert ("not available in plan mode" in result) is (not written)


def test_esc_cancels_the_child_and_the_parent_is_told(project: Path) -> None:
    holder: list[AgentSession] = []

    def press_esc(body: dict[str, Any]) -> Reply:
        holder[0].agent.cancel.cancel()  # what the REPL does on Esc, while the child works
        return Reply("Found part of it.", calls=[Call("list_files", {})])

    router = Router(parent=[Reply(calls=[Call("task", {"description": "slow", "prompt": "Look slowly."})])],
                    children={"slowly": [Reply("Starting.", calls=[Call("list_files", {})]), press_esc]})
    with ScriptedLLM(router.steps()) as llm:
        s = session(project, llm)
        holder.append(s)
        turn = s.run("take your time")
        s.close()
    assert turn.stop_reason == "interrupted"
    result = s.agent.history[-1]
    assert result.role == "tool" and result.is_error  # type: ignore[union-attr]
    assert "[sub-agent explore was cancelled by the user" in result.content
    assert "The sub-agent was cancelled by the user before it finished." in result.content
    assert "What it had said so far:\nStarting." in result.content  # the reply Esc cut off is dropped


def test_headless_shows_child_actions_under_the_task_and_stream_json_nests_them(project: Path) -> None:
    """What -p prints, in this process (`swecli_in_process`): the output, not the process, is the subject."""
    import os

    from tests.helpers import swecli_in_process

    make_project(project)

    def script() -> Router:
        return Router(parent=[Reply(calls=[Call("task", {"description": "DB", "prompt": "Find the database URL."})]),
                              Reply("In app/settings.py.")],
                      children={"database URL": [Reply(calls=[Call("grep", {"pattern": "DATABASE_URL"})]),
                                                 Reply("app/settings.py:2")]})

    outputs = []
    for fmt in ("text", "stream-json"):
        router = script()
        with ScriptedLLM(router.steps()) as llm:
            argv = ["--provider", "openai-compatible", "--base-url", llm.base_url, "--model", "scripted-model",
                    "-p", "where is the database configured?", "--output-format", fmt]
            outputs.append(swecli_in_process(argv, project, dict(os.environ)))
    text, stream = outputs
    assert text.returncode == 0, text.stderr
    assert "> task explore: DB\n    > [explore] grep 'DATABASE_URL'\n" in text.stderr
    assert text.stdout.strip() == "In app/settings.py."
    events = [json.loads(line) for line in stream.stdout.splitlines()]
    child = [e for e in events if e["type"] == "child_event"]
    assert child and child[0]["agent"] == "explore"
    assert {e["event"]["type"] for e in child} >= {"tool_started", "model_call_finished", "turn_finished"}
