"""Each tool says what it is; every other module asks `facts_for(name)` instead of matching names."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from swecli.context.extract import extract_facts
from swecli.context.failures import classify
from swecli.context.todo import TodoState, todo_tool
from swecli.messages import AssistantMessage, ToolCall, ToolMessage
from swecli.permissions import Policy
from swecli.session.log import modified_path
from swecli.tools.base import Tool, ToolContext, ToolResult
from swecli.tools.builtin import default_tools
from swecli.tools.facts import OTHER, ToolFacts, declare, facts_for, key_argument
from swecli.ui.render import action_line


class _Args(BaseModel):
    command: str = ""
    path: str = ""


def _run(args: _Args, ctx: ToolContext) -> ToolResult:
    return ToolResult("ok")


@pytest.mark.parametrize("tool", [*default_tools(), todo_tool(TodoState())], ids=lambda t: t.name)
def test_every_tool_of_a_session_is_known_by_name_as_it_describes_itself(tool: Tool[Any]) -> None:
    assert facts_for(tool.name) is tool.facts
    assert tool.facts is not OTHER


def test_what_the_builtin_tools_are() -> None:
    assert [n for n in ("bash", "read_file", "write_file", "edit_file", "grep", "list_files")
            if facts_for(n).is_shell] == ["bash"]
    assert {n for n in ("bash", "read_file", "write_file", "edit_file") if facts_for(n).writes_files} == \
        {"write_file", "edit_file"}
    assert facts_for("bash").preview == "tail" and facts_for("read_file").preview == "none"
    assert facts_for("todo").fold_after is None


def test_key_arguments_are_described_by_each_tool() -> None:
    assert key_argument("read_file", {"path": "a.py", "offset": 10, "limit": 5}) == "a.py:10-14"
    assert key_argument("grep", {"pattern": "login", "path": "src", "glob": "*.py"}) == "'login' src (*.py)"
    assert key_argument("bash", {"command": "pytest -q\nmore"}) == "pytest -q …"
    assert key_argument("mcp__w__forecast", {"city": "Oslo"}) == "city='Oslo'"


def test_another_agents_tools_have_a_kind_and_unknown_ones_have_none() -> None:
    assert facts_for("str_replace").kind == "edit"
    assert facts_for("execute_bash").is_shell and facts_for("Run_Command").is_shell
    assert facts_for("find_files").locates
    assert facts_for("mcp__time__now") is OTHER


def test_a_new_shell_tool_is_one_declaration_and_every_module_treats_it_as_a_shell() -> None:
    facts = ToolFacts(kind="shell", icon="🧪", verb="run", describe=lambda a: str(a.get("command", "")),
                      preview="tail")
    tool = Tool("house_test_runner", "Run a command.", _Args, _run, mutating=True, facts=facts)
    declare(tool.name, tool.facts)
    call = ToolCall(id="c1", name=tool.name, arguments='{"command": "make test"}')
    assert action_line(tool.name, call.args()).plain == "🧪 run make test"
    # the approval policy confines it like bash: with no one to ask, a command that writes is refused
    verdict = Policy(mode="default").check(call, call.args(), True, "make test")
    assert not verdict.allowed and "approval" in verdict.message
    # compaction's facts list it as a command, the failure tracker reads its output as a test report
    history = [AssistantMessage(content="", tool_calls=(call,)),
               ToolMessage(tool_call_id="c1", name=tool.name, content="FAILED tests/test_a.py::test_x\nexit code 1",
                           is_error=True)]
    assert extract_facts(history).commands == ["[exit 1] make test"]
    assert classify(tool.name, "FAILED tests/test_a.py::test_x - assert 1 == 2") == "test_failure"


def test_a_new_file_writing_tool_counts_as_modifying_its_path() -> None:
    declare("house_test_patch", ToolFacts(kind="edit"))
    call = ToolCall(id="p1", name="house_test_patch", arguments='{"path": "src/a.py"}')
    assert modified_path(call, ToolResult("done")) == "src/a.py"
    assert modified_path(ToolCall(id="p2", name="house_test_other", arguments='{"path": "b"}'), ToolResult("")) is None
