from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from swecli.events import CompactionDone, MessageAppended, ToolFinished, TurnFinished
from swecli.memory.notes import (
    NotesDocument,
    NotesUpdater,
    flush_notes,
    notes_path,
    notes_prompt,
    notes_tool,
    read_notes,
    section_key,
)
from swecli.messages import AssistantMessage, ToolCall, Usage, UserMessage
from swecli.tools.base import ToolCall as _ToolCall
from swecli.tools.base import ToolContext, ToolRegistry, ToolResult

NOW = datetime(2026, 11, 22, 10, 15)
SID = "20261122-101500-abcd"


def updater(root: Path, resumed: bool = False, session_id: str = SID) -> NotesUpdater:
    return NotesUpdater(root, session_id, resumed=resumed, clock=lambda: NOW)


def section(root: Path, key: str, session_id: str = SID) -> str:
    doc = NotesDocument.parse(read_notes(root, session_id))
    found = doc.find(key)
    assert found is not None, key
    return found.body


def prompt(text: str) -> MessageAppended:
    return MessageAppended(UserMessage(content=text))


def write_done(call_id: str, path: str, ok: bool = True, approved: bool = True) -> ToolFinished:
    call = ToolCall(id=call_id, name="write_file", arguments=json.dumps({"path": path, "content": "x"}))
    return ToolFinished(call, ToolResult("ok" if ok else "failed", is_error=not ok), 0.01, approved)


def announce(call_id: str, path: str, text: str) -> MessageAppended:
    call = ToolCall(id=call_id, name="write_file", arguments=json.dumps({"path": path, "content": "x"}))
    return MessageAppended(AssistantMessage(content=text, tool_calls=(call,)))


def test_first_prompt_sets_goal_later_prompts_set_the_task(project: Path) -> None:
    notes = updater(project)
    notes.handle(prompt("Add OAuth login"))
    assert section(project, "current_goal") == "Add OAuth login"
    assert section(project, "current_task") == "Add OAuth login\nStatus: in progress (since 2026-11-22 10:15)"
    notes.handle(prompt("now write   the\ntests"))
    assert section(project, "current_goal") == "Add OAuth login"
    assert section(project, "current_task").startswith("now write the tests\n")


def test_a_resumed_session_keeps_the_goal(project: Path) -> None:
    updater(project).handle(prompt("the goal"))
    updater(project, resumed=True).handle(prompt("a follow-up"))
    assert section(project, "current_goal") == "the goal"
    assert section(project, "current_task").startswith("a follow-up")


def test_context_messages_are_not_prompts(project: Path) -> None:
    updater(project).handle(MessageAppended(UserMessage(content="file contents", kind="context")))
    flush_notes()
    assert not notes_path(project, SID).exists()


def test_writes_record_the_file_and_the_models_reason(project: Path) -> None:
    notes = updater(project)
    notes.handle(announce("c1", "src/auth.py", "Add the token refresh.\nMore detail here."))
    notes.handle(write_done("c1", "src/auth.py"))
    notes.handle(write_done("c2", "src/other.py"))  # no assistant text before it
    body = section(project, "files_modified")
    assert body.splitlines() == ["- `src/auth.py` — Add the token refresh. (2026-11-22 10:15)",
                                 "- `src/other.py` (2026-11-22 10:15)"]


def test_a_file_changed_twice_has_one_line_with_the_latest_reason(project: Path) -> None:
    notes = updater(project)
    notes.handle(announce("c1", "a.py", "First version."))
    notes.handle(write_done("c1", "a.py"))
    notes.handle(announce("c2", "a.py", "Fix the off-by-one."))
    notes.handle(write_done("c2", "a.py"))
    assert section(project, "files_modified") == "- `a.py` — Fix the off-by-one. (2026-11-22 10:15)"


def test_failed_declined_and_read_only_tools_do_not_count(project: Path) -> None:
    notes = updater(project)
    notes.handle(write_done("c1", "a.py", ok=False))
    notes.handle(write_done("c2", "b.py", approved=False))
    read = ToolCall(id="c3", name="read_file", arguments='{"path": "c.py"}')
    notes.handle(ToolFinished(read, ToolResult("..."), 0.01))
    notes.flush()
    assert not notes_path(project, SID).exists()


def test_compaction_adds_a_timed_decision(project: Path) -> None:
    updater(project).handle(CompactionDone("auto", "summarize", 90_000, 12_000, 40, 2.0, note="kept 6 messages"))
    body = section(project, "key_decisions")
    assert body.startswith("- 2026-11-22 10:15 — context compacted (summarize, auto): 90,000 → 12,000 tokens")
    assert "(kept 6 messages)" in body


def test_turn_end_marks_the_task_and_records_stops_as_issues(project: Path) -> None:
    notes = updater(project)
    notes.handle(prompt("refactor the parser"))
    notes.handle(TurnFinished("all done", 3, Usage(), 1.0))
    assert section(project, "current_task") == "refactor the parser\nStatus: done (2026-11-22 10:15)"
    notes.handle(prompt("and the lexer"))
    notes.handle(TurnFinished("Stopped after 200 iterations", 200, Usage(), 1.0, "iteration_limit"))
    assert section(project, "current_task").endswith("Status: stopped: iteration_limit (2026-11-22 10:15)")
    assert "last task stopped (iteration_limit): Stopped after 200 iterations" in section(project, "open_issues")


def test_human_edits_survive_updates(project: Path) -> None:
    notes_path(project, SID).parent.mkdir(parents=True)
    notes_path(project, SID).write_text(
        "My notes, do not lose.\n\n"
        "## Goal\nShip v2\n\n"
        "## Files changed (and why!)\n- `old.py` — by hand\nA free-text remark.\n\n"
        "## Deployment\nRun `make deploy` on Fridays.\n```\n## not a heading inside a fence\n```\n"
    )
    notes = updater(project)
    notes.handle(announce("c1", "new.py", "Add it."))
    notes.handle(write_done("c1", "new.py"))
    notes.handle(prompt("a prompt"))
    text = read_notes(project, SID)
    assert text.startswith("My notes, do not lose.")
    assert "## Goal\na prompt" in text  # goal set by the first prompt, under the person's heading
    assert "## Files changed (and why!)\n- `old.py` — by hand\nA free-text remark.\n- `new.py` — Add it." in text
    assert "## Deployment\nRun `make deploy` on Fridays.\n```\n## not a heading inside a fence\n```" in text
    assert "## Current task\na prompt" in text  # missing sections come back


def test_heading_matching_is_loose() -> None:
    assert section_key("Files modified (and why)") == "files_modified"
    assert section_key("  code PATTERNS  ") == "code_patterns"
    assert section_key("TODO") == "open_issues"
    assert section_key("Taskforce") is None and section_key("Deployment") is None


def test_list_sections_are_bounded(project: Path) -> None:
    notes = updater(project)
    for i in range(40):
        notes.handle(CompactionDone("auto", "truncate", 1000 + i, 10, 1, 0.1))
    lines = section(project, "key_decisions").splitlines()
    assert len(lines) == 30 and "1,039" in lines[-1] and "1,010" in lines[0]


def test_writes_are_atomic_and_leave_no_temp_files(project: Path) -> None:
    notes = updater(project)
    for i in range(5):
        notes.handle(prompt(f"task {i}"))
    notes.flush()
    assert [p.name for p in notes_path(project, SID).parent.iterdir()] == [f"{SID}.md"]


def run_tool(root: Path, args: dict[str, str]) -> ToolResult:
    registry = ToolRegistry([notes_tool(SID, clock=lambda: NOW)])
    return registry.run(_ToolCall(id="n", name="notes", arguments=json.dumps(args)), ToolContext(root=root))


def test_notes_tool_appends_replaces_and_rewrites(project: Path) -> None:
    result = run_tool(project, {"section": "key_decisions", "text": "Use httpx, not requests"})
    assert not result.is_error and "Key decisions" in result.content
    assert section(project, "key_decisions") == "- 2026-11-22 10:15 — Use httpx, not requests"
    run_tool(project, {"section": "code_patterns", "text": "- errors are ToolError (swecli/tools/base.py:17)"})
    assert section(project, "code_patterns") == "- errors are ToolError (swecli/tools/base.py:17)"
    run_tool(project, {"section": "current_goal", "text": "Ship v2"})
    run_tool(project, {"section": "current_goal", "text": "Ship v3", "mode": "replace"})
    assert section(project, "current_goal") == "Ship v3"
    result = run_tool(project, {"mode": "rewrite", "text": "## Current goal\nAll new\n\n## Open issues\n- x\n"})
    assert not result.is_error and read_notes(project, SID) == "## Current goal\nAll new\n\n## Open issues\n- x\n"


@pytest.mark.parametrize("args, message", [
    ({"mode": "rewrite", "text": "no headings at all"}, "must keep the section headings"),
    ({"text": "orphan"}, "needs a section"),
    ({"section": "open_issues", "text": "  "}, "text is empty"),
    ({"section": "feelings", "text": "x"}, "Invalid arguments for notes"),
])
def test_notes_tool_errors_are_clear_and_change_nothing(project: Path, args: dict[str, str], message: str) -> None:
    result = run_tool(project, args)
    assert result.is_error and message in result.content
    assert not notes_path(project, SID).exists()


def test_notes_tool_masks_environment_secrets(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_API_KEY", "sk-acme-0123456789")
    run_tool(project, {"section": "open_issues", "text": "key sk-acme-0123456789 expires soon"})
    assert "sk-acme-0123456789" not in read_notes(project, SID) and "[REDACTED]" in read_notes(project, SID)


def test_notes_tool_is_not_mutating_and_has_a_schema() -> None:
    tool = notes_tool(SID)
    schema = tool.schema()
    assert not tool.mutating and schema.name == "notes"
    properties = schema.parameters["properties"]
    assert isinstance(properties, dict) and set(properties) == {"section", "text", "mode"}


def words(text: str) -> int:
    return len(text.split())


def test_notes_prompt(project: Path) -> None:
    assert notes_prompt(project, SID, 500, words) == ""
    updater(project).handle(prompt("Add OAuth login"))
    text = notes_prompt(project, SID, 500, words)  # resumed: its own notes
    assert text.startswith("# Session notes\n\nYour working notes from earlier in this session")
    assert "## Current goal\nAdd OAuth login" in text and "<!--" not in text and "`notes` tool" in text
    small = notes_prompt(project, SID, 12, words)
    assert "[truncated:" in small and f".swecli/memory/notes/{SID}.md" in small


def test_a_new_session_sees_the_previous_sessions_notes_as_that_sessions(project: Path) -> None:
    updater(project).handle(prompt("Add OAuth login"))
    updater(project).handle(CompactionDone("auto", "summarize", 9_000, 1_000, 4, 1.0))
    later = "20261123-090000-beef"
    text = notes_prompt(project, later, 500, words)
    assert text.startswith("# Notes from the previous session\n\nWritten by an earlier session in this project "
                           f"(.swecli/memory/notes/{SID}.md), not by you in this one")
    assert "## Current goal\nAdd OAuth login" in text
    updater(project, session_id=later).handle(prompt("Fix the logout bug"))
    assert section(project, "current_goal", later) == "Fix the logout bug"  # its own file, its own goal
    assert section(project, "key_decisions", later) == ""
    assert section(project, "current_goal") == "Add OAuth login"  # the first session's notes are untouched


def test_the_single_notes_file_of_earlier_versions_reads_as_the_previous_session(project: Path) -> None:
    legacy = project / ".swecli" / "memory" / "session_notes.md"
    legacy.parent.mkdir(parents=True)
    legacy.write_text("## Current goal\nShip v2\n")
    text = notes_prompt(project, SID, 500, words)
    assert "# Notes from the previous session" in text and ".swecli/memory/session_notes.md" in text
    assert "Ship v2" in text
