"""A small MCP server for the tests, written with the official SDK (`MCPServer`).

    python tests/mcp/server.py                 # stdio
    python tests/mcp/server.py --http PORT     # streamable HTTP on 127.0.0.1:PORT/mcp, until stdin ends

Most tests start a forked copy instead (`forkserver.py`, `launch.py`): the same server, without paying
the SDK's import at every start.

Tools: `echo` and `add` (read-only), `write_note` (changes something: asks in default mode), `slow`
(sleeps), `fail` (an error result), `huge` (a result large enough to be offloaded), `picture`
(an image), `lookup` (text plus an embedded resource). `write_note` appends to the file named by
$NOTES_FILE so a test can see whether it really ran.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import threading

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import EmbeddedResource, ImageContent, TextContent, TextResourceContents, ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True)
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 2040).decode()

server = MCPServer("testkit")


@server.tool(annotations=READ_ONLY)
def echo(text: str) -> str:
    """Echo the text back unchanged."""
    return text


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> str:
    """Add two integers and return the sum."""
    return str(a + b)


@server.tool()
def write_note(title: str, body: str) -> str:
    """Save a note with a title and a body."""
    with open(os.environ["NOTES_FILE"], "a", encoding="utf-8") as handle:
        handle.write(f"{title}: {body}\n")
    return f"saved note {title!r}"


@server.tool(annotations=READ_ONLY)
async def slow(seconds: float) -> str:
    """Wait for the given number of seconds, then answer."""
    await asyncio.sleep(seconds)
    return f"waited {seconds}s"


@server.tool(annotations=READ_ONLY)
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool(annotations=READ_ONLY)
def huge(lines: int) -> str:
    """Return a long numbered report."""
    return "\n".join(f"report line {i}: " + "x" * 60 for i in range(1, lines + 1))


@server.tool(annotations=READ_ONLY)
def picture() -> list[ImageContent | TextContent]:
    """Return a small PNG picture."""
    return [TextContent(type="text", text="here is the picture"), ImageContent(type="image", data=PNG,
                                                                                mime_type="image/png")]


@server.tool(annotations=READ_ONLY)
def lookup(key: str) -> list[TextContent | EmbeddedResource]:
    """Look a key up in the test dictionary."""
    resource = TextResourceContents(uri=f"memo://{key}", mime_type="text/plain", text=f"definition of {key}")
    return [TextContent(type="text", text=f"found {key}"), EmbeddedResource(type="resource", resource=resource)]


def _end_with_stdin() -> None:
    """Over HTTP nothing else ties the server to the test process that started it: that process holds the
    write end of our stdin, so its end (killed, not only stopped by its fixture) ends the server too."""
    while os.read(0, 4096):
        pass
    os._exit(0)


def main(args: list[str]) -> None:
    """Serve over stdio, or over HTTP with `--http PORT` (also what a forked copy runs: forkserver.py)."""
    if len(args) == 2 and args[0] == "--http":
        threading.Thread(target=_end_with_stdin, daemon=True).start()
        server.run("streamable-http", host="127.0.0.1", port=int(args[1]))
    else:
        server.run()


if __name__ == "__main__":
    main(sys.argv[1:])
