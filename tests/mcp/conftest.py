"""Fixtures for the MCP tests: the SDK-written test server (tests/mcp/server.py) over stdio and HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from swecli.config import McpServerConfig

SERVER = Path(__file__).with_name("server.py")


def stdio_server(**fields: object) -> McpServerConfig:
    """The test server as a stdio command."""
    return McpServerConfig(command=sys.executable, args=[str(SERVER)], **fields)  # type: ignore[arg-type]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class HttpServer:
    url: str
    notes: Path
    """The server's $NOTES_FILE: `write_note` appends here."""


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """The test server over streamable HTTP on a loopback port, for the whole module (each start costs ~2.5 s
    of CPU, most of it the SDK's import)."""
    port = _free_port()
    log = tmp_path_factory.mktemp("http") / "server.log"
    env = {**os.environ, "NOTES_FILE": str(log.with_name("notes.txt"))}
    with open(log, "w") as handle:
        process = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)], stdout=handle,
                                   stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the HTTP test server did not start: {log.read_text()}") from None
                time.sleep(0.1)
        yield HttpServer(f"http://127.0.0.1:{port}/mcp", log.with_name("notes.txt"))
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="module")
def http_url(http_server: HttpServer) -> str:
    return http_server.url
