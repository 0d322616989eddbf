"""Result conversion and tool shape, on the SDK's own result types."""

from __future__ import annotations

import base64

from mcp.types import (
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from swecli.mcp.adapter import as_tool, to_tool_result
from swecli.mcp.manager import McpManager, ServerTool


def test_text_blocks_are_joined() -> None:
    result = to_tool_result(CallToolResult(content=[TextContent(type="text", text="one"),
                                                    TextContent(type="text", text="two\nthree")]))
    assert result.content == "one\ntwo\nthree" and not result.is_error and result.summary == "3 lines"


def test_images_and_binary_resources_are_described_not_inlined() -> None:
    data = base64.b64encode(b"\0" * 3000).decode()
    blob = BlobResourceContents(uri="file:///a.bin", mime_type="application/zip", blob=data)
    result = to_tool_result(CallToolResult(content=[
        ImageContent(type="image", data=data, mime_type="image/png"),
        EmbeddedResource(type="resource", resource=blob),
        ResourceLink(type="resource_link", uri="file:///b.txt", name="b.txt", mime_type="text/plain"),
    ]))
    assert data not in result.content
    assert "[image: image/png, 2.9 KB" in result.content
    assert "[binary resource file:///a.bin: application/zip, 2.9 KB]" in result.content
    assert "[resource link: file:///b.txt (b.txt, text/plain)]" in result.content


def test_text_resources_are_included_with_their_uri() -> None:
    text = TextResourceContents(uri="memo://x", mime_type="text/plain", text="the memo")
    result = to_tool_result(CallToolResult(content=[EmbeddedResource(type="resource", resource=text)]))
    assert result.content == "[resource memo://x]\nthe memo"


def test_structured_content_alone_is_shown_as_json() -> None:
    result = to_tool_result(CallToolResult(content=[], structured_content={"timezone": "UTC"}))
    assert '"timezone": "UTC"' in result.content


def test_is_error_makes_a_tool_error() -> None:
    result = to_tool_result(CallToolResult(content=[TextContent(type="text", text="no such city")], is_error=True))
    assert result.is_error and result.content == "no such city" and result.summary == "no such city"
    empty = to_tool_result(CallToolResult(content=[], is_error=True))
    assert empty.is_error and "without a message" in empty.content


def test_read_only_hint_decides_approval_and_the_server_schema_is_sent(tmp_path: object) -> None:
    manager = McpManager({}, root=tmp_path)  # type: ignore[arg-type]
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
              "$schema": "https://json-schema.org/draft/2020-12/schema"}
    reader = as_tool(ServerTool("w", "forecast", "Weather forecast.", schema, read_only=True), "mcp__w__forecast",
                     manager)
    writer = as_tool(ServerTool("w", "set_alarm", "", {}, read_only=False), "mcp__w__set_alarm", manager)
    assert not reader.mutating and writer.mutating
    sent = reader.schema()
    assert sent.name == "mcp__w__forecast" and sent.parameters["required"] == ["city"]
    assert "$schema" not in sent.parameters
    assert writer.schema().parameters == {"type": "object", "properties": {}}
    assert writer.schema().description == "set_alarm (MCP server w)"
    assert reader.parse('{"city": "Oslo", "days": 3}').model_extra == {"city": "Oslo", "days": 3}
