"""The MCP tools of a session: loaded into the tools list, or deferred behind `tool_search`.

`McpCatalog` is the tool registry's `ToolSource`. The loop polls it before each request (on its own
thread), so the tools list changes only between requests, and each change is reported to the
prefix monitor as a planned one (`ContextManager.set_tools`).

What a poll does:
1. Servers that stopped (disabled, crashed) take their tools away.
2. Servers that became ready bring theirs, sorted by server name, each server's tools in its own
   order. A server with `always_load = true` is loaded whole. The others are loaded if all loaded MCP
   schemas (always_load ones included) stay within the budget (`mcp.schema_budget`); past it, the new
   tools are deferred, and so is every later server's (loaded tools are never unloaded: the cache).
3. Deferred tools appear only as names in the description of one small `tool_search` tool. The model
   calls it with keywords (BM25 over names, descriptions and parameter names) or exact names; the
   matching tools join the tools list from the next request on and stay for the session. A deferred
   tool the model calls directly by name is loaded on the spot (`resolve`).

The cache: new tools are appended after the existing ones; `tool_search`'s description changes only
when the set of deferred tools does (a server arrives or leaves), not when one of them is loaded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from swecli.mcp.adapter import McpArguments, as_tool
from swecli.mcp.manager import McpManager, ServerState, ServerTool
from swecli.mcp.names import tool_name
from swecli.mcp.search import ToolIndex
from swecli.messages import ToolSchema
from swecli.records import datarecord
from swecli.tools.base import Tool, ToolChanges, ToolContext, ToolResult

TOOL_SEARCH = "tool_search"
DEFAULT_MATCHES = 3
GIST_WORDS = 5
"""Words of a deferred tool's description shown in tool_search's own description."""


@datarecord
class Entry:
    spec: ServerTool
    tool: Tool[McpArguments]
    tokens: int
    """The schema's size as sent (local tokens)."""
    state: Literal["loaded", "deferred", "requested"]
    """`requested`: found by tool_search, joins the tools list at the next poll."""
    deferred: bool = False
    """Deferred when it arrived (listed in tool_search's description even after it is loaded)."""


class ToolSearchArgs(BaseModel):
    query: str = Field(description="Keywords for what you need (e.g. 'convert timezone'), or exact tool names.")
    limit: int = Field(DEFAULT_MATCHES, ge=1, le=20, description="Most tools to load.")


class McpCatalog:
    """Which MCP tools the model sees; see the module docstring."""

    def __init__(self, manager: McpManager, budget: Callable[[], int], count: Callable[[ToolSchema], int]) -> None:
        self.manager = manager
        self.budget = budget
        """The schema budget in local tokens (re-read at each decision: /model changes the window)."""
        self.count = count
        self._entries: dict[str, Entry] = {}
        self._generations: dict[str, int] = {}
        self._deferring = False
        self._search: Tool[ToolSearchArgs] | None = None
        self._listed: tuple[str, ...] = ()
        self._index: ToolIndex | None = None
        self._pending: list[Entry] = []
        self._lock = threading.RLock()
        self.searches = 0
        self.loaded_by_search = 0

    # -- ToolSource ------------------------------------------------------------------------------
    def poll(self) -> ToolChanges:
        with self._lock:
            added: list[Tool[Any]] = []
            removed: list[str] = []
            reasons: list[str] = []
            states = self.manager.states()
            self._drop_gone(states, removed, reasons)
            self._take_new(states, added, reasons)
            if self._pending:
                names = [e.tool.name for e in self._pending]
                reasons.append(f"tool_search loaded {', '.join(names)}")
                for entry in self._pending:
                    entry.state = "loaded"
                    added.append(entry.tool)
                self._pending = []
            self._refresh_search(added, removed)
            return ToolChanges(tuple(added), tuple(removed), "; ".join(reasons))

    def resolve(self, name: str) -> Tool[Any] | None:
        with self._lock:
            entry = self._entries.get(name)
            if entry is None or entry.state == "loaded":
                return None
            if entry in self._pending:
                self._pending.remove(entry)
            entry.state = "loaded"
            return entry.tool

    # -- what the session shows ------------------------------------------------------------------
    def entries(self) -> list[Entry]:
        with self._lock:
            return list(self._entries.values())

    def tokens(self) -> tuple[int, int, int]:
        """(loaded MCP schemas, deferred MCP schemas, tool_search's own schema), in local tokens."""
        with self._lock:
            loaded = sum(e.tokens for e in self._entries.values() if e.state != "deferred")
            deferred = sum(e.tokens for e in self._entries.values() if e.state == "deferred")
            search = self.count(self._search.schema()) if self._search is not None else 0
            return loaded, deferred, search

    def summary(self) -> str:
        """One line for /context."""
        entries = self.entries()
        loaded, deferred, search = self.tokens()
        n_deferred = sum(e.state == "deferred" for e in entries)
        line = (f"MCP tools: {len(entries) - n_deferred} loaded ({loaded:,} tokens) · {n_deferred} deferred "
                f"({deferred:,} tokens not sent)")
        if self._search is not None:
            line += f" · tool_search {search:,} tokens, {self.searches} search(es) loaded {self.loaded_by_search}"
        return line + f" · budget {self.budget():,}"

    # -- internals -------------------------------------------------------------------------------
    def _drop_gone(self, states: list[ServerState], removed: list[str], reasons: list[str]) -> None:
        current = {s.name: s for s in states}
        for server, generation in list(self._generations.items()):
            state = current.get(server)
            if state is not None and state.status == "ready" and state.generation == generation:
                continue
            del self._generations[server]
            gone = [name for name, e in self._entries.items() if e.spec.server == server]
            for name in gone:
                entry = self._entries.pop(name)
                if entry in self._pending:
                    self._pending.remove(entry)
                if entry.state == "loaded":
                    removed.append(name)
            if gone:
                reasons.append(f"MCP server {server} stopped")

    def _take_new(self, states: list[ServerState], added: list[Tool[Any]], reasons: list[str]) -> None:
        fresh = [s for s in states if s.status == "ready" and self._generations.get(s.name) != s.generation]
        arrived: list[tuple[ServerState, list[Entry]]] = []
        for state in fresh:
            self._generations[state.name] = state.generation
            arrived.append((state, [self._entry(spec) for spec in state.tools]))
        batch = sum(e.tokens for state, entries in arrived if not state.config.always_load for e in entries)
        pinned = sum(e.tokens for state, entries in arrived if state.config.always_load for e in entries)
        loaded = sum(e.tokens for e in self._entries.values() if e.state == "loaded")
        # always_load tools take their room first: the others fit in what remains, or wait.
        if batch and (self._deferring or loaded + pinned + batch > self.budget()):
            self._deferring = True
        for state, entries in arrived:
            if state.config.always_load or not self._deferring:
                self._load(entries, added)
            else:
                for entry in entries:
                    entry.deferred = True
        if fresh:
            reasons.append("MCP server(s) ready: " + ", ".join(s.name for s in fresh))

    def _entry(self, spec: ServerTool) -> Entry:
        name = tool_name(spec.server, spec.name, self._entries)
        tool = as_tool(spec, name, self.manager)
        entry = self._entries[name] = Entry(spec, tool, self.count(tool.schema()), "deferred")
        return entry

    @staticmethod
    def _load(entries: list[Entry], added: list[Tool[Any]]) -> None:
        for entry in entries:
            entry.state = "loaded"
            added.append(entry.tool)

    def _refresh_search(self, added: list[Tool[Any]], removed: list[str]) -> None:
        """(Re)build tool_search when the set of deferred tools changed."""
        listed = tuple(name for name, e in self._entries.items() if e.deferred)
        if listed == self._listed:
            return
        self._listed = listed
        self._index = None
        if self._search is not None:
            removed.append(TOOL_SEARCH)
            self._search = None
        if listed:
            self._search = Tool(TOOL_SEARCH, self._description(), ToolSearchArgs, self._run_search)
            added.append(self._search)
            threading.Thread(target=self._warm_index, name="swecli-tool-index", daemon=True).start()

    def _warm_index(self) -> None:
        """Build the search index off the loop's thread (importing bm25s and numpy takes ~0.3 s), so
        the first tool_search answers at once."""
        import bm25s  # noqa: F401  (outside the lock: the slow part)

        with self._lock:
            if self._index is None and self._listed:
                self._index = ToolIndex([(n, _document(self._entries[n].spec)) for n in self._listed])

    def _description(self) -> str:
        by_server: dict[str, list[str]] = {}
        for name in self._listed:
            spec = self._entries[name].spec
            by_server.setdefault(spec.server, []).append(f"{spec.name} ({gist(spec.description)})")
        lines = [f"- {server}: " + ", ".join(tools) for server, tools in by_server.items()]
        return ("Load tools from MCP servers. The tools below are not in your tools list yet (their schemas "
                "would fill the context). Search with keywords, or exact names; the matching tools join your "
                "tools list from your next step on, named mcp__<server>__<tool>, and stay for the session.\n"
                "Deferred tools by server:\n" + "\n".join(lines))

    def _run_search(self, args: ToolSearchArgs, ctx: ToolContext) -> ToolResult:
        with self._lock:
            self.searches += 1
            hits = self._find(args.query, args.limit)
            new = [e for e in hits if e.state == "deferred"]
            for entry in new:
                entry.state = "requested"
                self._pending.append(entry)
            self.loaded_by_search += len(new)
            already = [e for e in hits if e not in new]
        if not hits:
            return ToolResult(f"No deferred tool matches {args.query!r}. Try other keywords, or a tool named in "
                              "tool_search's description.", summary="no match")
        lines = [f"- {e.tool.name}: {gist(e.spec.description, 20)}" for e in new]
        lines += [f"- {e.tool.name} (already loaded): {gist(e.spec.description, 20)}" for e in already]
        head = (f"Loaded {len(new)} tool(s); call them by these names from your next step on:" if new
                else "These tools are already in your tools list:")
        return ToolResult(head + "\n" + "\n".join(lines), summary=f"loaded {len(new)}: "
                          + ", ".join(e.spec.name for e in new) if new else "already loaded")

    def _find(self, query: str, limit: int) -> list[Entry]:
        listed = [self._entries[n] for n in self._listed]
        wanted = {w.strip(" ,;") for w in query.split()}
        exact = [e for e in listed if {e.tool.name, e.spec.name, f"{e.spec.server}:{e.spec.name}"} & wanted]
        if exact:
            return exact[:limit]
        if self._index is None:  # not warmed yet
            self._index = ToolIndex([(e.tool.name, _document(e.spec)) for e in listed])
        return [self._entries[key] for key in self._index.search(query, limit)]


def gist(description: str, words: int = GIST_WORDS) -> str:
    """The first sentence of a description, cut to a few words."""
    first = description.strip().split("\n", 1)[0].split(". ", 1)[0].rstrip(".")
    parts = first.split()
    # ASCII only: providers' JSON bodies escape "…" as \u2026, six characters that cost tokens
    return " ".join(parts[:words]) + ("..." if len(parts) > words else "") if parts else "no description"


def _document(spec: ServerTool) -> str:
    params = spec.parameters.get("properties", {})
    described = [f"{key} {value.get('description', '')}" for key, value in params.items() if isinstance(value, dict)] \
        if isinstance(params, dict) else []
    return " ".join([spec.server, spec.name, spec.description, *described])
