"""The tool registry: stable order, raw-schema tools, and tools that join or leave between requests."""

from __future__ import annotations

import datetime
import enum
import importlib
import json
import math
import pkgutil
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from swecli.messages import ToolCall
from swecli.tools.base import Tool, ToolChanges, ToolContext, ToolRegistry, ToolResult
from swecli.tools.builtin import default_tools


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


# -- the schema's bytes are pydantic's (the prompt's cached prefix) ----------------------------------------

class Mood(enum.Enum):
    CALM = "calm"


class Word(str):
    """A str subclass: its default is not "plain"."""


class Inner(BaseModel):
    depth: int = 2


class EveryDefault(BaseModel):
    """An MCP-like argument model with a default of every kind a tool's author writes."""

    text: str = "a \"quoted\" \\ text ü"
    count: int = 10**30
    flag: bool = False
    nothing: str | None = None
    ratio: float = 0.5
    endless: float = math.inf
    mood: Mood = Mood.CALM
    kind: Literal["a", "b"] = "a"
    word: str = Word("w")
    items: list[str] = Field(default_factory=lambda: ["x"])
    pair: tuple[int, str] = (1, "y")
    nested: Inner = Inner()
    when: datetime.date = datetime.date(2026, 11, 26)
    where: Path = Path("/tmp/x")
    raw: bytes = b"\x00"
    described: int = Field(default=3, description="Three.", ge=0)


def models() -> list[type[BaseModel]]:
    """Every pydantic model swecli defines (the built-in tools' arguments among them) and `EveryDefault`."""
    import swecli

    found: dict[type[BaseModel], None] = {EveryDefault: None}
    for info in pkgutil.walk_packages(swecli.__path__, "swecli."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == info.name:
                found[value] = None
    return list(found)


@pytest.mark.filterwarnings("ignore:Default value w is not JSON serializable")
def test_tool_schemas_are_byte_for_byte_pydantic_s_own() -> None:
    from swecli.tools.base import _plain_defaults

    checked = 0
    for model in models():
        try:
            expected = json.dumps(model.model_json_schema())
        except Exception:  # a model pydantic cannot write a schema for: not a tool's
            continue
        assert json.dumps(model.model_json_schema(schema_generator=_plain_defaults())) == expected, model
        checked += 1
    assert checked > 30
    for builtin in default_tools():
        params = builtin.args.model_json_schema()
        params.pop("title", None)
        for prop in params.get("properties", {}).values():
            prop.pop("title", None)
        assert json.dumps(builtin.schema().parameters) == json.dumps(params)
