"""MCP servers as tools, loaded only when needed.

- `manager`: `McpManager` runs every configured server's MCP session (the official `mcp` SDK) on one
  background asyncio thread; synchronous `call()` with a timeout and the loop's CancelToken; servers
  start in the background and stop (no orphan processes) on `close()`.
- `adapter`: an MCP tool as a swecli `Tool` (its server's schema, approval from `readOnlyHint`) and an
  MCP result as a `ToolResult` (text joined, images and resources described, isError an error).
- `names`: provider-safe tool names `mcp__<server>__<tool>`.
- `catalog`: `McpCatalog`, the registry's `ToolSource`: loads servers' tools as they become ready,
  or, past `mcp.schema_budget`, defers them behind one `tool_search` tool.
- `search`: the keyword (BM25) index `tool_search` queries.
- `configfile`: `swecli mcp add/remove` edit `.swecli/config.toml`, comments and all.
- `report`: the listing `swecli mcp list` and `/mcp` print.

This package sits at the tools layer: it knows `swecli.tools`, `swecli.config`, `swecli.messages` and
`swecli.llm.base` (the CancelToken), never the context engine, the agent or the UI; the session's
assembly wires it in (`swecli.assembly`).
"""
