"""The tool registry: stable order, raw-schema tools, and tools that join or leave between requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from swecli.messages import ToolCall
from swecli.tools.base import Tool, ToolChanges, ToolContext, ToolRegistry, ToolResult


class Free(BaseModel):
    model_config = ConfigDict(extra="allow")


def tool(name: str, **kw: Any) -> Tool[Free]:
    return Tool(name, f"The {name} tool.", Free, lambda a, c: ToolResult(f"{name} ran with {a.model_extra}"), **kw)


class Source:
    """A tool source fed by the test: what it holds is what the next poll reports."""

    def __init__(self) -> None:
        self.next = ToolChanges()
        self.by_name: dict[str, Tool[Any]] = {}

    def poll(self) -> ToolChanges:
        changes, self.next = self.next, ToolChanges()
        return changes

    def resolve(self, name: str) -> Tool[Any] | None:
        return self.by_name.pop(name, None)


def test_initial_tools_are_sorted_and_later_ones_appended_in_arrival_order() -> None:
    source = Source()
    registry = ToolRegistry([tool("zeta"), tool("alpha")], source=source)
    assert [s.name for s in registry.schemas()] == ["alpha", "zeta"]
    source.next = ToolChanges((tool("mid"), tool("beta")), reason="joined")
    changes = registry.refresh()
    assert changes and changes.reason == "joined"
    assert [s.name for s in registry.schemas()] == ["alpha", "zeta", "mid", "beta"]
    source.next = ToolChanges(removed=("zeta",), reason="left")
    registry.refresh()
    assert [s.name for s in registry.schemas()] == ["alpha", "mid", "beta"]
    assert not registry.refresh()  # nothing new: falsy, so the loop changes nothing


def test_a_tool_resolved_by_name_runs_at_once_and_is_announced_once(project: Path) -> None:
    source = Source()
    source.by_name["late"] = tool("late")
    registry = ToolRegistry([tool("alpha")], source=source)
    result = registry.run(ToolCall(id="1", name="late", arguments='{"x": 1}'), ToolContext(root=project))
    assert result.content == "late ran with {'x': 1}" and not result.is_error
    changes = registry.refresh()
    assert [t.name for t in changes.added] == ["late"] and changes.reason == "tools called by name: late"
    assert not registry.refresh()
    unknown = registry.run(ToolCall(id="2", name="nope"), ToolContext(root=project))
    assert unknown.is_error and "Available tools: alpha, late" in unknown.content


def test_a_tool_may_carry_its_own_json_schema() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    assert tool("weather", parameters=schema).schema().parameters == schema
    assert tool("plain").schema().parameters == {"additionalProperties": True, "properties": {}, "type": "object"}
