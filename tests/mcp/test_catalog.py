"""Loading and deferral against the SDK-written test server (two copies: one `always_load`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from swecli.context.tokens import TOOL_SCHEMA_OVERHEAD, TokenCounter, serialize_tool
from swecli.mcp.catalog import TOOL_SEARCH, McpCatalog
from swecli.mcp.manager import McpManager
from swecli.messages import ToolSchema
from swecli.tools.base import ToolContext, ToolRegistry
from tests.mcp.conftest import forked_server

KIT_TOOLS = ["echo", "add", "write_note", "slow", "fail", "huge", "picture", "lookup"]
COUNTER = TokenCounter()
pytestmark = pytest.mark.xdist_group("mcp-catalog")  # with `--dist loadgroup`: the module's servers start once


def count(schema: ToolSchema) -> int:
    return TOOL_SCHEMA_OVERHEAD + COUNTER.text(serialize_tool(schema))


@pytest.fixture(scope="module")
def manager(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpManager]:
    root = tmp_path_factory.mktemp("project")
    started = McpManager({"kit": forked_server(), "pinned": forked_server(always_load=True)}, root,
                         startup_timeout=60).start()
    assert started.wait_started(90)
    yield started
    started.close()


def test_within_the_budget_every_tool_is_loaded_in_a_stable_order(manager: McpManager) -> None:
    catalog = McpCatalog(manager, budget=lambda: 100_000, count=count)
    changes = catalog.poll()
    assert [t.name for t in changes.added] == [f"mcp__kit__{n}" for n in KIT_TOOLS] + \
        [f"mcp__pinned__{n}" for n in KIT_TOOLS]
    assert "MCP server(s) ready: kit, pinned" in changes.reason
    assert not catalog.poll()  # nothing new: no change, no prefix rewrite
    loaded, deferred, search = catalog.tokens()
    assert loaded == sum(count(t.schema()) for t in changes.added) and deferred == search == 0


def test_past_the_budget_tools_wait_behind_tool_search(manager: McpManager, project: Path) -> None:
    catalog = McpCatalog(manager, budget=lambda: 200, count=count)
    registry = ToolRegistry([], source=catalog)
    first = registry.refresh()
    names = [t.name for t in first.added]
    assert names == [f"mcp__pinned__{n}" for n in KIT_TOOLS] + [TOOL_SEARCH]  # always_load skips the search
    search = registry.get(TOOL_SEARCH)
    assert search is not None and not search.mutating
    assert "- kit: echo (Echo the text back unchanged), add (Add two integers and return...)" in \
        search.description
    assert "pinned" not in search.description.split("Deferred tools by server:")[1]
    loaded, deferred, search_tokens = catalog.tokens()
    assert search_tokens < deferred
    assert catalog.summary() == (f"MCP tools: 8 loaded ({loaded:,} tokens) · 8 deferred ({deferred:,} tokens not "
                                 f"sent) · tool_search {search_tokens:,} tokens, 0 search(es) loaded 0 · budget 200")

    found = search.fn(search.parse('{"query": "sum of two integers"}'), ToolContext(root=project))
    assert "mcp__kit__add" in found.content and "next step" in found.content
    assert "mcp__kit__add" not in registry  # joins at the next request boundary, not mid-step
    second = registry.refresh()
    assert [t.name for t in second.added] == ["mcp__kit__add"] and second.reason == "tool_search loaded mcp__kit__add"
    assert list(registry.schemas())[-1].name == "mcp__kit__add"  # appended after the existing tools
    again = search.fn(search.parse('{"query": "mcp__kit__add"}'), ToolContext(root=project))
    assert "already" in again.content and not registry.refresh()
    assert registry.get(TOOL_SEARCH) is search  # its description did not change: the cache holds


def test_a_deferred_tool_called_by_name_is_loaded_on_the_spot(manager: McpManager) -> None:
    catalog = McpCatalog(manager, budget=lambda: 0, count=count)
    registry = ToolRegistry([], source=catalog)
    registry.refresh()
    assert "mcp__kit__echo" not in registry
    tool = registry.get("mcp__kit__echo")
    assert tool is not None and tool.name == "mcp__kit__echo"
    changes = registry.refresh()
    assert [t.name for t in changes.added] == ["mcp__kit__echo"] and "called by name" in changes.reason
    assert registry.get("mcp__kit__nothing") is None


def test_no_match_says_so(manager: McpManager, project: Path) -> None:
    catalog = McpCatalog(manager, budget=lambda: 0, count=count)
    registry = ToolRegistry([], source=catalog)
    registry.refresh()
    search = registry.get(TOOL_SEARCH)
    assert search is not None
    result = search.fn(search.parse('{"query": "kubernetes"}'), ToolContext(root=project))
    assert result.content.startswith("No deferred tool matches 'kubernetes'") and not registry.refresh()


def test_a_stopped_server_takes_its_tools_away(project: Path) -> None:
    manager = McpManager({"kit": forked_server(), "other": forked_server()}, project, startup_timeout=60).start()
    try:
        assert manager.wait_started(90)
        catalog = McpCatalog(manager, budget=lambda: 300, count=count)
        registry = ToolRegistry([], source=catalog)
        registry.refresh()
        loaded_before = [n for n in registry.names() if n.startswith("mcp__")]
        manager.stop_server("other")
        changes = registry.refresh()
        assert "MCP server other stopped" in changes.reason
        assert not any(n.startswith("mcp__other__") for n in registry.names())
        assert [n for n in registry.names() if n.startswith("mcp__kit__")] == \
            [n for n in loaded_before if n.startswith("mcp__kit__")]
        search = registry.get(TOOL_SEARCH)
        assert search is None or "other:" not in search.description
    finally:
        manager.close()
