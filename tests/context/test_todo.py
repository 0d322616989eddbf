from __future__ import annotations

import json
from pathlib import Path

import pytest

from swecli.context.todo import MAX_ITEMS, TodoItem, TodoState, todo_tool
from swecli.messages import ToolCall
from swecli.tools.base import ToolContext, ToolError, ToolRegistry


def run(registry: ToolRegistry, root: Path, items: object) -> tuple[str, bool, dict[str, object]]:
    call = ToolCall(id="t1", name="todo", arguments=json.dumps({"items": items}))
    result = registry.run(call, ToolContext(root=root))
    return result.content, result.is_error, result.meta


def test_todo_tool_replaces_the_list_and_renders_it(project: Path) -> None:
    state = TodoState()
    registry = ToolRegistry([todo_tool(state)])
    text, is_error, meta = run(registry, project, [
        {"content": "Find the parser", "status": "done"},
        {"content": "Fix the off-by-one", "status": "in_progress"},
        {"content": "Run the tests"},
    ])
    assert not is_error
    assert text.splitlines() == ["Todo (1/3 done):", "[x] Find the parser", "[>] Fix the off-by-one",
                                 "[ ] Run the tests"]
    assert meta == {"done": 1, "total": 3, "version": 1}
    assert state.next_step() == TodoItem(content="Fix the off-by-one", status="in_progress")

    text, _, _ = run(registry, project, [{"content": "Run the tests", "status": "done"}])
    assert state.total == 1 and state.done == 1 and state.version == 2
    assert "Find the parser" not in text  # the whole list is replaced, not merged
    assert state.next_step() is None


def test_next_step_is_first_pending_when_nothing_in_progress() -> None:
    state = TodoState()
    state.replace([TodoItem(content="a", status="done"), TodoItem(content="b"), TodoItem(content="c")])
    step = state.next_step()
    assert step is not None and step.content == "b"
    assert [i.content for i in state.open_items()] == ["b", "c"]


def test_empty_list_clears(project: Path) -> None:
    state = TodoState()
    registry = ToolRegistry([todo_tool(state)])
    run(registry, project, [{"content": "x"}])
    text, is_error, _ = run(registry, project, [])
    assert not is_error and text == "Todo list is empty." and state.items == []


@pytest.mark.parametrize(("items", "expected"), [
    ([{"content": "   "}], "must not be empty"),
    ([{"content": "x", "status": "started"}], "items.0.status"),
    ([{"content": "x", "extra": 1}], "extra"),
    ([{"content": "Same"}, {"content": "same"}], "repeats the item"),
    ([{"content": f"step {i}"} for i in range(MAX_ITEMS + 1)], f"at most {MAX_ITEMS}"),
    ([{"content": "x" * 400}], "at most 300 characters"),
])
def test_bad_lists_are_rejected_with_a_clear_error_and_keep_the_old_list(
        project: Path, items: object, expected: str) -> None:
    state = TodoState()
    registry = ToolRegistry([todo_tool(state)])
    run(registry, project, [{"content": "keep me"}])
    text, is_error, _ = run(registry, project, items)
    assert is_error and expected in text
    assert [i.content for i in state.items] == ["keep me"] and state.version == 1


def test_more_than_one_in_progress_is_accepted_with_a_hint(project: Path) -> None:
    registry = ToolRegistry([todo_tool(TodoState())])
    text, is_error, _ = run(registry, project, [{"content": "a", "status": "in_progress"},
                                                {"content": "b", "status": "in_progress"}])
    assert not is_error and "keep one in progress" in text


def test_schema_is_not_mutating_and_describes_items() -> None:
    tool = todo_tool(TodoState())
    assert not tool.mutating
    schema = tool.schema().parameters
    assert "items" in schema["properties"]  # type: ignore[operator]


def test_replace_raises_tool_error_directly() -> None:
    with pytest.raises(ToolError):
        TodoState().replace([TodoItem(content="a"), TodoItem(content="A")])
