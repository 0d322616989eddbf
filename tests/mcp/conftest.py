"""Fixtures for the MCP tests: the SDK-written test server (tests/mcp/server.py) over stdio and HTTP.

Two ways to start it. `stdio_server` / `http_server`: a fresh `python server.py` (the SDK's import, ~2.5 s
of CPU, at each start), for the tests of the client against a real server process (`test_manager.py`) and
the failure cases. `forked_server` / `forked_http_server`: a real process all the same (`launch.py`, over
real pipes or a real port), served by a copy of the server forked from one pre-imported per test process
(`forkserver.py`), for the tests whose subject is what swecli does with the tools.
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from swecli.config import McpServerConfig

SERVER = Path(__file__).with_name("server.py")
LAUNCH = Path(__file__).with_name("launch.py")
FORK_SERVER = Path(__file__).with_name("forkserver.py")
_fork_socket: list[str] = []
"""The socket of this test process's fork server, once started."""


def stdio_server(**fields: object) -> McpServerConfig:
    """The test server as a stdio command, a fresh interpreter importing the SDK."""
    return McpServerConfig(command=sys.executable, args=[str(SERVER)], **fields)  # type: ignore[arg-type]


def forked_server(**fields: object) -> McpServerConfig:
    """The test server as a stdio command: the launcher, served by a forked, pre-imported copy."""
    return McpServerConfig(command=sys.executable, args=launcher_args(), **fields)  # type: ignore[arg-type]


def launcher_args(before: str = "", *server_args: str) -> list[str]:
    """`python` arguments that run `before` (Python code: write a pid file, sleep) in the launcher's process,
    then the launcher for a forked test server."""
    argv = [str(LAUNCH), fork_socket(), *server_args]
    if not before:
        return ["-S", *argv]
    return ["-S", "-c", f"{before}; import runpy, sys; sys.argv = {argv!r}; "
                        f"runpy.run_path(sys.argv[0], run_name='__main__')"]


def fork_socket() -> str:
    """Start this process's fork server on first use (once per xdist worker) and return its socket. It exits
    when this process does: its stdin, our pipe, closes."""
    if _fork_socket:
        return _fork_socket[0]
    folder = tempfile.mkdtemp(prefix="mcp-fork-")  # short: a unix socket's path has at most 107 bytes
    path, log = os.path.join(folder, "socket"), Path(folder) / "log"
    with open(log, "w") as errors:
        process = subprocess.Popen([sys.executable, str(FORK_SERVER), folder], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=errors, text=True)
    assert process.stdout is not None and process.stdin is not None
    if process.stdout.readline() != "ready\n":
        process.wait(60)
        raise AssertionError(f"the MCP fork server did not start: {log.read_text()}")

    def stop() -> None:  # it removes its folder as it ends
        process.stdin.close()  # type: ignore[union-attr]
        process.wait(60)

    atexit.register(stop)
    _fork_socket.append(path)
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class HttpServer:
    url: str
    notes: Path
    """The server's $NOTES_FILE: `write_note` appends here."""


def _serve_http(folder: Path, command: list[str]) -> Iterator[HttpServer]:
    """The test server over streamable HTTP on a loopback port, `command` followed by `--http PORT`."""
    port = _free_port()
    log, notes = folder / "server.log", folder / "notes.txt"
    with open(log, "w") as handle:
        # stdin: a pipe only this process writes to, so the server ends with it even if it is killed
        process = subprocess.Popen([*command, "--http", str(port)], stdin=subprocess.PIPE, stdout=handle,
                                   stderr=subprocess.STDOUT, env={**os.environ, "NOTES_FILE": str(notes)})
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
        yield HttpServer(f"http://127.0.0.1:{port}/mcp", notes)
    finally:
        process.terminate()
        process.wait(10)
        process.stdin.close()  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """A fresh `python server.py --http PORT` for the whole module."""
    yield from _serve_http(tmp_path_factory.mktemp("http"), [sys.executable, str(SERVER)])


@pytest.fixture(scope="module")
def forked_http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """The launcher with `--http PORT` for the whole module: a forked copy serves the port."""
    yield from _serve_http(tmp_path_factory.mktemp("http"), [sys.executable, *launcher_args()])


@pytest.fixture(scope="module")
def http_url(http_server: HttpServer) -> str:
    return http_server.url
