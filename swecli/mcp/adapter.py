"""An MCP tool as a swecli `Tool`, and an MCP result as a `ToolResult`.

The tool's JSON schema is the server's `inputSchema`, sent as is (the server validates arguments and
answers with an error result the model can read). Approval follows the built-in tools' rule:
a tool whose server marks it `readOnlyHint` counts as read-only (runs without asking in default
mode, allowed in plan mode); every other MCP tool counts as mutating (asks in default mode, refused
in plan mode). The results go through the loop like any tool's: offloaded when large, logged.

Results: the text blocks are joined; images, audio and binary resources are described (type and
size), never inlined as base64; embedded text resources are included with their URI; a result with
only `structuredContent` is shown as JSON; `isError` makes the result a tool error.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from swecli.mcp.manager import McpCallError, McpManager, ServerTool
from swecli.tools.base import Tool, ToolContext, ToolError, ToolResult

if TYPE_CHECKING:
    from mcp.types import CallToolResult, ContentBlock


class McpArguments(BaseModel):
    """Any JSON object: the server's own schema is what the model sees and what the server checks."""

    model_config = ConfigDict(extra="allow")


def as_tool(spec: ServerTool, name: str, manager: McpManager) -> Tool[McpArguments]:
    """The swecli tool `name` (see `names.tool_name`) that calls `spec` on its server."""

    def run(args: McpArguments, ctx: ToolContext) -> ToolResult:
        try:
            result = manager.call(spec.server, spec.name, dict(args.model_extra or {}), ctx.cancel)
        except McpCallError as exc:
            raise ToolError(str(exc)) from None
        return to_tool_result(result)

    def preview(args: McpArguments, ctx: ToolContext) -> str:
        arguments = json.dumps(args.model_extra or {}, indent=2, ensure_ascii=False)
        return f"MCP server {spec.server} · tool {spec.name}\n{arguments}"

    return Tool(name, spec.description or f"{spec.name} (MCP server {spec.server})", McpArguments, run,
                mutating=not spec.read_only, preview=preview, parameters=_object_schema(spec.parameters))


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    # Providers require an object schema; a server that sends none (or {}) takes no arguments.
    out = dict(schema) if schema else {}
    out.setdefault("type", "object")
    if out["type"] == "object":
        out.setdefault("properties", {})
    out.pop("$schema", None)
    return out


def to_tool_result(result: CallToolResult) -> ToolResult:
    parts = [describe_block(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, indent=2, ensure_ascii=False))
    text = "\n".join(p for p in parts if p)
    if result.is_error:
        text = text or "the tool reported an error without a message"
        return ToolResult(text, is_error=True, summary=_first_line(text))
    lines = len(text.splitlines())
    return ToolResult(text, summary=f"{lines} line{'s' if lines != 1 else ''}" if text else "no output")


def describe_block(block: ContentBlock) -> str:
    """One content block as text for the model."""
    kind = block.type
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        size = _base64_size(str(getattr(block, "data", "")))
        return f"[{kind}: {getattr(block, 'mime_type', '') or 'unknown type'}, {size}; not shown to the model]"
    if kind == "resource_link":
        mime = getattr(block, "mime_type", None)
        return f"[resource link: {getattr(block, 'uri', '')} ({getattr(block, 'name', '')}" + \
            (f", {mime}" if mime else "") + ")]"
    if kind == "resource":
        resource = getattr(block, "resource", None)
        uri = getattr(resource, "uri", "")
        text = getattr(resource, "text", None)
        if text is not None:
            return f"[resource {uri}]\n{text}"
        size = _base64_size(str(getattr(resource, "blob", "")))
        return f"[binary resource {uri}: {getattr(resource, 'mime_type', None) or 'unknown type'}, {size}]"
    return f"[{kind} content]"


def _base64_size(data: str) -> str:
    n = len(data) * 3 // 4 - data.count("=")
    return f"{n:,} bytes" if n < 1024 else f"{n / 1024:,.1f} KB"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:120] if text.strip() else ""
