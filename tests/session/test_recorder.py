from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import BaseModel

from swecli.agent import Agent
from swecli.config import Settings
from swecli.events import CompactionDone, HistoryReplaced, ModelCallStarted, Notice
from swecli.memory.notes import NotesUpdater, read_notes
from swecli.messages import AssistantMessage, ToolMessage, UserMessage, dangling_tool_calls
from swecli.session.jsonl import read_jsonl
from swecli.session.recorder import SessionRecorder
from swecli.session.store import SessionError, list_sessions, load_session, log_path, transcript_path
from swecli.testing.model import ScriptedModel, calls, say
from swecli.tools.base import Tool, ToolContext, ToolRegistry, ToolResult
from tests.helpers import loop_agent

SECRET = "sk-acme-FAKE-0123456789abcdef"


class WriteArgs(BaseModel):
    path: str
    content: str


def write_file(args: WriteArgs, ctx: ToolContext) -> ToolResult:
    target = ctx.root / args.path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(args.content)
    return ToolResult(f"wrote {args.path}", summary="written", meta={"path": args.path})


def with_notes(recorder: SessionRecorder) -> SessionRecorder:
    """The session notes writer, attached as `swecli.assembly.open_session` attaches it."""
    updater = NotesUpdater(recorder.root, recorder.session_id, resumed=recorder.resumed, redactor=recorder.redactor)
    # with its close, as the session attaches it: closing waits for the notes' writer thread, so no
    # half-written temporary file is left for the test to find (CI once listed one mid-rename)
    recorder.attach("notes", updater.handle, close=updater.close)
    return recorder


def make_agent(model: ScriptedModel, root: Path, recorder: SessionRecorder) -> Agent:
    tools = ToolRegistry([Tool("write_file", "Write a file.", WriteArgs, write_file, mutating=True)])
    return loop_agent(model, tools, root, on_event=recorder.handle, max_iterations=200)


def write_call(path: str, content: str, text: str = "") -> AssistantMessage:
    return calls(("write_file", json.dumps({"path": path, "content": content})), text=text)


def test_a_recorded_turn_replays_to_the_agent_history(project: Path) -> None:
    settings = Settings(model="scripted-model")
    recorder = with_notes(SessionRecorder.start(project, settings))
    model = ScriptedModel([write_call("src/a.py", "print(1)", "Create the module."), say("done")])
    agent = make_agent(model, project, recorder)
    agent.run("create src/a.py")
    stats = recorder.close()
    loaded = load_session(project, recorder.session_id)
    assert loaded.history == agent.history and not loaded.problems
    assert stats is not None and stats["turns"] == 1 and stats["llm_calls"] == 2
    assert stats["tools_executed"] == 1 and stats["files_modified"] == ["src/a.py"] and stats["total_tokens"] == 30
    events = [r["event"] for r in read_jsonl(log_path(project, recorder.session_id)).records]
    assert events == ["session_start", "user_input", "context", "llm_call", "tool", "context", "llm_call", "turn_end",
                      "stats"]
    notes = read_notes(project, recorder.session_id)
    assert "`src/a.py` — Create the module." in notes and "Status: done" in notes
    [info] = list_sessions(project)
    assert (info.first_prompt, info.turns, info.tokens) == ("create src/a.py", 1, 30)


def test_a_fake_key_in_the_environment_never_reaches_swecli_dir(project: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_API_KEY", SECRET)
    recorder = with_notes(SessionRecorder.start(project, Settings(model="m", api_key="sk-settings-key-987654321")))
    model = ScriptedModel([
        write_call("cfg.py", f'KEY = "{SECRET}"', f"Store {SECRET} in cfg.py."),
        say(f"Stored {SECRET}; the settings key is sk-settings-key-987654321."),
    ])
    make_agent(model, project, recorder).run(f"put {SECRET} into cfg.py")
    recorder.handle(Notice("error", f"HTTP 401 with key {SECRET}"))
    recorder.handle(HistoryReplaced((UserMessage(content=f"summary mentions {SECRET}", kind="summary"),),
                                    "compaction"))
    recorder.close()
    assert SECRET in (project / "cfg.py").read_text()  # the project file itself is the user's business
    written = [p for p in (project / ".swecli").rglob("*") if p.is_file()]
    assert len(written) >= 3  # transcript, log, notes
    for path in written:
        data = path.read_bytes()
        assert SECRET.encode() not in data and b"sk-settings-key-987654321" not in data, path
    assert "[REDACTED]" in transcript_path(project, recorder.session_id).read_text()


def test_history_replacement_and_compaction_are_recorded(project: Path) -> None:
    recorder = with_notes(SessionRecorder.start(project, Settings(model="m", context_limit=100_000)))
    recorder.handle(ModelCallStarted(1, 40_000))
    for text in ("one", "two", "three"):
        from swecli.events import MessageAppended

        recorder.handle(MessageAppended(UserMessage(content=text)))
    summary = UserMessage(content="summary of one and two", kind="summary")
    recorder.handle(HistoryReplaced((summary, UserMessage(content="three")), "compaction"))
    recorder.handle(CompactionDone("auto", "summarize", 80_000, 10_000, 2, 1.5))
    recorder.context_update(12_000)
    recorder.close()
    loaded = load_session(project, recorder.session_id)
    assert loaded.history == [summary, UserMessage(content="three")]
    records = read_jsonl(log_path(project, recorder.session_id)).records
    contexts = [r for r in records if r["event"] == "context"]
    assert [c["usage_percent"] for c in contexts] == [40.0, 12.0]
    assert any(r["event"] == "compaction" and r["reduction_percent"] == 87.5 for r in records)
    assert "context compacted (summarize, auto)" in read_notes(project, recorder.session_id)


KILLED_RUN = textwrap.dedent("""
    import json, os, signal, sys
    from pathlib import Path
    from pydantic import BaseModel
    from swecli.agent import Agent
    from swecli.config import Settings
    from swecli.context.manager import ContextManager, Prompt
    from swecli.messages import AssistantMessage, SystemBlock, ToolCall
    from swecli.permissions import Policy
    from swecli.session.recorder import SessionRecorder
    from swecli.testing.model import ScriptedModel
    from swecli.tools.base import Tool, ToolContext, ToolRegistry, ToolResult

    class Args(BaseModel):
        path: str
        content: str

    def write_file(args, ctx):
        (ctx.root / args.path).write_text(args.content)
        if args.path == "second.txt":
            os.kill(os.getpid(), signal.SIGKILL)  # killed while the second tool runs
        return ToolResult("wrote " + args.path, meta={"path": args.path})

    root = Path(sys.argv[1])
    recorder = SessionRecorder.start(root, Settings(model="scripted-model"), session_id="20261122-101530-ab12")
    tools = ToolRegistry([Tool("write_file", "Write.", Args, write_file, mutating=True)])
    step = lambda p: AssistantMessage(content="Writing " + p, tool_calls=(
        ToolCall(id="call_" + p, name="write_file", arguments=json.dumps({"path": p, "content": "x"})),))
    model = ScriptedModel([step("first.txt"), step("second.txt")])
    agent = Agent(model, tools, ContextManager(Prompt((SystemBlock(text="sys"),), tools.schemas())),
                  ToolContext(root=root), Policy("auto"), on_event=recorder.handle)
    agent.run("write two files")
""")


def test_sigkill_mid_task_then_continue(project: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", KILLED_RUN, str(project)], check=False, capture_output=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    log_records = read_jsonl(log_path(project, "20261122-101530-ab12"))
    assert not log_records.problems  # every line written before the kill parses
    assert [r["event"] for r in log_records.records] == ["session_start", "user_input", "context", "llm_call",
                                                         "tool", "context", "llm_call"]
    recorder, loaded = SessionRecorder.resume(project, Settings(model="scripted-model"))
    assert loaded.session_id == "20261122-101530-ab12" and loaded.closed_calls == 1
    assert not dangling_tool_calls(loaded.history)
    assert [m.role for m in loaded.history] == ["user", "assistant", "tool", "assistant", "tool"]
    model = ScriptedModel([say("both files are written")])
    agent = make_agent(model, project, recorder)
    agent.history = loaded.history
    turn = agent.run("continue")
    stats = recorder.close()
    assert turn.answer == "both files are written"
    sent = model.requests[0].messages
    closed = sent[4]
    assert isinstance(closed, ToolMessage) and closed.is_error and "interrupted" in closed.content
    assert load_session(project, loaded.session_id).raw_history == agent.history  # the file alone replays it
    assert stats is not None and stats["runs"] == 2 and stats["turns"] == 2 and stats["llm_calls"] == 3
    assert stats["files_modified"] == ["first.txt"]


def test_resume_by_prefix_and_nothing_to_continue(project: Path) -> None:
    with pytest.raises(SessionError, match="no session to continue"):
        SessionRecorder.resume(project, Settings())
    recorder = SessionRecorder.start(project, Settings(), session_id="20261122-101530-ab12", first_prompt="hi")
    recorder.close()
    again, loaded = SessionRecorder.resume(project, Settings(), "20261122-1015")
    again.close()
    assert loaded.session_id == "20261122-101530-ab12" and loaded.history == []


def test_resumed_session_keeps_its_goal(project: Path) -> None:
    first = with_notes(SessionRecorder.start(project, Settings(model="m")))
    make_agent(ScriptedModel([say("ok")]), project, first).run("build the parser")
    first.close()
    resumed, loaded = SessionRecorder.resume(project, Settings(model="m"))
    agent = make_agent(ScriptedModel([say("ok")]), project, with_notes(resumed))
    agent.history = loaded.history
    agent.run("now the tests")
    resumed.close()
    notes = read_notes(project, resumed.session_id)
    goal = notes.split("## Current goal")[1].split("##")[0]
    task = notes.split("## Current task")[1].split("##")[0]
    assert "build the parser" in goal and "now the tests" in task


def test_write_failures_are_reported_once_and_do_not_stop_the_session(project: Path) -> None:
    (project / ".swecli").mkdir()
    (project / ".swecli" / "sessions").write_text("a file where the directory should be")
    reported: list[str] = []
    recorder = SessionRecorder.start(project, Settings(model="m"), on_error=reported.append)
    agent = make_agent(ScriptedModel([say("one"), say("two")]), project, recorder)
    agent.run("first")
    agent.run("second")
    stats = recorder.close()
    assert len(reported) == 1 and "session transcript" in reported[0]
    assert len(recorder.problems) == 4  # both prompts and both answers failed to reach the transcript
    assert stats is not None and stats["turns"] == 2  # the log still works


def test_warnings_and_errors_are_logged(project: Path) -> None:
    recorder = SessionRecorder.start(project, Settings())
    recorder.handle(Notice("info", "just so you know"))
    recorder.handle(Notice("warning", "retrying"))
    recorder.handle(Notice("error", "rate limited"))
    recorder.close()
    events = [(r["event"], r.get("text")) for r in read_jsonl(log_path(project, recorder.session_id)).records]
    assert ("warning", "retrying") in events and ("error", "rate limited") in events
    assert all(text != "just so you know" for _, text in events)
