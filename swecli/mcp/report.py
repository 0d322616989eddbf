"""The MCP listing `swecli mcp list` prints and `/mcp` shows: each server, whether it started, and
its tools (name, one line of description, schema size in tokens, loaded or deferred, read-only)."""

from __future__ import annotations

from collections.abc import Mapping

from swecli.mcp.catalog import Entry, McpCatalog
from swecli.mcp.manager import ServerState

Line = tuple[str, str]
"""Text and a rich style name ("" for plain)."""

DESCRIPTION_CHARS = 64
_STATUS_STYLE = {"ready": "green", "starting": "yellow", "failed": "red", "disabled": "dim", "stopped": "dim"}


def listing(catalog: McpCatalog, scopes: Mapping[str, str] | None = None) -> list[Line]:
    """Every configured server (with the scope that defines it, when known) and its tools, then the
    totals against the budget."""
    entries = catalog.entries()
    lines: list[Line] = []
    for state in catalog.manager.states():
        scope = (scopes or {}).get(state.name, "")
        lines.append((_server_line(state) + (f" · {scope} scope" if scope else ""),
                      _STATUS_STYLE.get(state.status, "")))
        tools = [e for e in entries if e.spec.server == state.name]
        width = max((len(e.tool.name) for e in tools), default=0)
        lines.extend((_tool_line(e, width), "dim" if e.state == "deferred" else "") for e in tools)
    lines.append(("", ""))
    lines.append((totals(catalog), "bold"))
    return lines


def _server_line(state: ServerState) -> str:
    kind = "http" if state.config.url else "stdio"
    status: str = state.status
    if state.status == "ready":
        status = f"ready in {state.startup_seconds:.1f}s · {len(state.tools)} tool(s)"
    elif state.status == "failed":
        status = f"failed: {state.error}"
    elif state.status == "disabled":
        status = "disabled (enabled = false, or /mcp disable)"
    always = " · always_load" if state.config.always_load else ""
    return f"{state.name} · {status} · {kind}: {state.transport}{always}"


def _tool_line(entry: Entry, width: int) -> str:
    description = " ".join(entry.spec.description.split()) or "(no description)"
    if len(description) > DESCRIPTION_CHARS:
        description = description[: DESCRIPTION_CHARS - 1] + "…"
    flags = "loaded" if entry.state != "deferred" else "deferred"
    flags += " · read-only" if entry.spec.read_only else " · asks in default mode"
    return f"  {entry.tool.name:<{width}}  {description:<{DESCRIPTION_CHARS}}  {entry.tokens:>6,} tokens  {flags}"


def totals(catalog: McpCatalog) -> str:
    entries = catalog.entries()
    loaded, deferred, search = catalog.tokens()
    n_deferred = sum(e.state == "deferred" for e in entries)
    line = (f"MCP tool schemas: {loaded + deferred:,} tokens for {len(entries)} tool(s); budget "
            f"{catalog.budget():,} (mcp.schema_budget)")
    if n_deferred:
        line += (f" · {n_deferred} deferred ({deferred:,} tokens) behind tool_search ({search:,} tokens), "
                 f"{len(entries) - n_deferred} loaded ({loaded:,} tokens)")
    elif entries:
        line += " · all loaded"
    return line
