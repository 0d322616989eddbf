"""The MCP client manager: every configured server's session on one background event loop.

The `mcp` SDK is asyncio (anyio) based; swecli's loop is synchronous and threaded. `McpManager`
owns one daemon thread running an asyncio loop. Each server gets one task on it that connects
(stdio: spawns the command in its own process group; HTTP: streamable-HTTP to `url`), lists the
tools, then holds the session open until it is stopped. Everything else talks to the loop through
`call()`, a synchronous wrapper that waits for the result with a timeout and gives up at once when
the loop's CancelToken is set (Esc).

Lifecycle:
- `start()` returns at once; servers come up in the background (never blocking the prompt). A server
  that fails, or does not finish starting within `startup_timeout`, is marked failed and produces
  exactly one notice (`take_notices()`).
- `close()` stops every server (stdio: stdin closed, then SIGTERM/SIGKILL to its process group, as
  the SDK's shutdown does) and the loop thread. It is also registered with `atexit`, so an exception
  or Ctrl-C that skips the caller's own cleanup still leaves no server process behind.

A server's stderr goes to `<root>/.swecli/logs/mcp-<name>.log` (rewritten at each start), never to
the terminal swecli is drawing on.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import math
import os
import threading
import time
from contextlib import AsyncExitStack
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from swecli.config import McpServerConfig
from swecli.errors import SwecliError
from swecli.records import datarecord

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult

    from swecli.llm.base import CancelToken

Status = Literal["starting", "ready", "failed", "stopped", "disabled"]
POLL = 0.05
"""Seconds between checks of the cancel token while a call runs."""
CLOSE_TIMEOUT = 10.0
"""Bound on `close()`: the SDK's stdio shutdown waits at most ~6 s for a stubborn server."""
MAX_TOOL_PAGES = 100


class McpCallError(SwecliError):
    """A call that did not produce a result: server not ready, timed out, interrupted, connection lost."""


@datarecord(frozen=True)
class ServerTool:
    """One tool a server offers, in the server's own terms."""

    server: str
    name: str
    description: str
    parameters: dict[str, Any]
    read_only: bool
    """The server's `readOnlyHint` annotation."""


@datarecord(frozen=True)
class ServerState:
    """A snapshot of one server (the manager hands out copies; they never change under the reader)."""

    name: str
    config: McpServerConfig
    status: Status = "starting"
    error: str = ""
    tools: tuple[ServerTool, ...] = ()
    generation: int = 0
    """Bumped at every start: a restarted server's tools are new tools."""
    startup_seconds: float = 0.0

    @property
    def transport(self) -> str:
        cfg = self.config
        return cfg.url if cfg.url else " ".join([cfg.command, *cfg.args])


@datarecord
class _Live:
    """The loop thread's handles for one running server."""

    client: Client | None = None
    scope: Any = None
    """The anyio CancelScope around the server's task: cancelling it stops the server."""
    done: concurrent.futures.Future[None] | None = None
    stopping: Status | None = None


@datarecord
class McpManager:
    servers: dict[str, McpServerConfig]
    root: Path
    startup_timeout: float = 30.0
    tool_timeout: float = 300.0
    _states: dict[str, ServerState] = field(default_factory=dict, repr=False)
    _live: dict[str, _Live] = field(default_factory=dict, repr=False)
    _notices: list[tuple[str, str]] = field(default_factory=list, repr=False)
    _changed: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name, cfg in sorted(self.servers.items()):
            self._states[name] = ServerState(name, cfg, "starting" if cfg.enabled else "disabled")

    # -- lifecycle (any thread) ------------------------------------------------------------------
    def start(self) -> McpManager:
        """Start every enabled server in the background; returns at once."""
        for name, state in self._states.items():
            if state.status == "starting":
                self.start_server(name)
        return self

    def start_server(self, name: str) -> None:
        """Start (or restart) one server, enabled or not (`/mcp enable NAME`)."""
        loop = self._ensure_loop()
        with self._changed:
            state = self._states[name]
            live = self._live.get(name)
            if live is not None and live.done is not None and not live.done.done():
                return  # already starting or running
            self._set(replace(state, status="starting", error="", tools=(), generation=state.generation + 1))
            live = self._live[name] = _Live()
        live.done = asyncio.run_coroutine_threadsafe(self._serve(name, live), loop)

    def stop_server(self, name: str, status: Status = "disabled", wait: float = CLOSE_TIMEOUT) -> None:
        """Stop one server (`/mcp disable NAME`); its tools leave the tools list at the next request."""
        live = self._live.get(name)
        if live is None or self._loop is None:
            with self._changed:
                self._set(replace(self._states[name], status=status, tools=()))
            return
        live.stopping = status
        self._loop.call_soon_threadsafe(_cancel, live)
        if live.done is not None:
            concurrent.futures.wait([live.done], timeout=wait)

    def close(self) -> None:
        """Stop every server and the loop thread (idempotent)."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        atexit.unregister(self.close)
        pending = []
        for live in list(self._live.values()):
            live.stopping = live.stopping or "stopped"
            loop.call_soon_threadsafe(_cancel, live)
            if live.done is not None:
                pending.append(live.done)
        concurrent.futures.wait(pending, timeout=CLOSE_TIMEOUT)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=2.0)
        if not thread.is_alive():
            loop.close()
        self._loop = self._thread = None

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="swecli-mcp", daemon=True)
            thread.start()
            self._loop, self._thread = loop, thread
            atexit.register(self.close)
        return self._loop

    # -- state (any thread) ----------------------------------------------------------------------
    def states(self) -> list[ServerState]:
        with self._changed:
            return [self._states[n] for n in sorted(self._states)]

    def state(self, name: str) -> ServerState | None:
        with self._changed:
            return self._states.get(name)

    def starting(self) -> list[str]:
        return [s.name for s in self.states() if s.status == "starting"]

    def wait_started(self, timeout: float, cancel: CancelToken | None = None) -> bool:
        """Block until no server is starting (each one is ready or failed), at most `timeout`
        seconds or until `cancel` is set; True when none is starting any more."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while any(s.status == "starting" for s in self._states.values()):
                left = deadline - time.monotonic()
                if left <= 0 or (cancel is not None and cancel.cancelled):
                    return False
                self._changed.wait(min(left, POLL * 4))
        return True

    def take_notices(self) -> list[tuple[str, str]]:
        """(level, text) pairs produced since the last call: one per server that failed or hung."""
        with self._changed:
            notices, self._notices = self._notices, []
        return notices

    def _set(self, state: ServerState) -> None:
        self._states[state.name] = state
        self._changed.notify_all()

    def _update(self, name: str, **changes: Any) -> None:
        with self._changed:
            self._set(replace(self._states[name], **changes))

    # -- calls (the agent's thread) --------------------------------------------------------------
    def call(self, server: str, tool: str, arguments: dict[str, Any], cancel: CancelToken | None = None,
             timeout: float | None = None) -> CallToolResult:
        """Call one tool and wait for its result; raises McpCallError when there is none."""
        state, live, loop = self.state(server), self._live.get(server), self._loop
        if state is None or state.status != "ready" or live is None or live.client is None or loop is None:
            status = state.status if state is not None else "not configured"
            raise McpCallError(f"MCP server {server!r} is {status}" + (f" ({state.error})" if state and
                                                                        state.error else "") + ".")
        limit = self.tool_timeout if timeout is None else timeout
        future = asyncio.run_coroutine_threadsafe(_call(live.client, tool, arguments, limit), loop)
        done, _ = concurrent.futures.wait([future], timeout=POLL)
        while not done:
            if cancel is not None and cancel.cancelled:
                future.cancel()
                raise McpCallError("interrupted by user")
            done, _ = concurrent.futures.wait([future], timeout=POLL)
        try:
            return future.result()
        except TimeoutError:  # anyio.fail_after inside the call (concurrent's TimeoutError is the same class)
            raise McpCallError(f"{server} did not answer {tool} within {limit:g}s (mcp.tool_timeout); "
                               "the call was abandoned.") from None
        except Exception as exc:
            raise McpCallError(f"{server} failed to run {tool}: {describe_error(exc)}") from None

    # -- the loop thread -------------------------------------------------------------------------
    async def _serve(self, name: str, live: _Live) -> None:
        import anyio

        from swecli.mcp.variables import MissingVariable, expand

        try:
            cfg = expand(self._states[name].config)  # ${VAR} from the environment, at each start
            cfg = _trusted_command(cfg, self.root)
        except (MissingVariable, PlantedCommand) as exc:
            self._fail(name, str(exc))
            return
        started = time.monotonic()
        scope = live.scope = anyio.CancelScope(deadline=anyio.current_time() + self.startup_timeout)
        if live.stopping is not None:
            scope.cancel()  # stopped before this task began
        error = ""
        with scope, _stderr_log(self.root, name) as errlog:
            try:
                async with AsyncExitStack() as stack:
                    client = live.client = await _connect(stack, cfg, errlog, self.root)
                    tools = await _list_tools(client, name)
                    scope.deadline = math.inf
                    self._update(name, status="ready", tools=tools, startup_seconds=time.monotonic() - started)
                    await anyio.sleep_forever()
            except Exception as exc:
                error = describe_error(exc, cfg)
        live.client = None
        if live.stopping is not None:
            self._update(name, status=live.stopping, tools=())
        elif scope.cancelled_caught:
            self._fail(name, f"did not start within {self.startup_timeout:g}s (mcp.startup_timeout)")
        else:
            self._fail(name, error or "the connection closed")

    def _fail(self, name: str, error: str) -> None:
        with self._changed:
            was_ready = self._states[name].status == "ready"
            self._set(replace(self._states[name], status="failed", error=error, tools=()))
            what = "stopped" if was_ready else "failed to start"
            self._notices.append(("warning", f"MCP server {name} {what}: {error}. Its tools are unavailable "
                                             f"(see /mcp; its log is .swecli/logs/mcp-{name}.log)."))


def _cancel(live: _Live) -> None:
    if live.scope is not None:
        live.scope.cancel()


class _stderr_log:
    """The server's stderr file (devnull when the log directory cannot be written)."""

    def __init__(self, root: Path, name: str) -> None:
        self.path = root / ".swecli" / "logs" / f"mcp-{name}.log"
        self.handle: TextIO | None = None

    def __enter__(self) -> TextIO:
        import os

        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # the user's alone, as every log
            self.handle = open(fd, "w", encoding="utf-8")
        except OSError:
            self.handle = open(os.devnull, "w", encoding="utf-8")
        return self.handle

    def __exit__(self, *exc: object) -> None:
        if self.handle is not None:
            self.handle.close()


class PlantedCommand(SwecliError):
    """A stdio server's program was found on PATH only where a sandboxed command can write."""


def _trusted_command(cfg: McpServerConfig, root: Path) -> McpServerConfig:
    """`cfg` with its program's name looked up as swecli's own helpers are (`own_process.trusted_program`):
    swecli starts the server itself, outside the sandbox, with the tokens of its `env`, so a program of that
    name a command wrote into a writable path on PATH (`~/.local/bin` with `~/.local` writable) must not be
    the one started (measured: it was, at the next session's start). A path the user gave is theirs."""
    import shutil

    from swecli.tools.own_process import trusted_program

    if not cfg.command or "/" in cfg.command:
        return cfg
    search = cfg.env.get("PATH", os.environ.get("PATH", os.defpath))
    program = trusted_program(cfg.command, root, search)
    if program is not None:
        return cfg.model_copy(update={"command": program})
    anywhere = shutil.which(cfg.command, path=search)
    if anywhere is None:
        return cfg  # not installed: the start fails and says so, as before
    raise PlantedCommand(f"its program {cfg.command} was found only at {anywhere}, in a folder a sandboxed command "
                         "can write (the project or sandbox.writable_paths), so a command could have replaced it and "
                         "swecli does not start it; give the program's absolute path as the server's command to "
                         "run it anyway, or take that folder out of sandbox.writable_paths.")


async def _connect(stack: AsyncExitStack, cfg: McpServerConfig, errlog: TextIO, root: Path) -> Client:
    from mcp import Client, Implementation, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from swecli import __version__

    info = Implementation(name="swecli", version=__version__)
    if cfg.url:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        http = await stack.enter_async_context(create_mcp_http_client(headers=dict(cfg.headers) or None))
        client = Client(streamable_http_client(cfg.url, http_client=http), client_info=info)
    else:
        params = StdioServerParameters(command=cfg.command, args=list(cfg.args), env=dict(cfg.env) or None,
                                       cwd=str(root))
        client = Client(stdio_client(params, errlog=errlog), client_info=info)
    return await stack.enter_async_context(client)


async def _list_tools(client: Client, server: str) -> tuple[ServerTool, ...]:
    if client.server_capabilities.tools is None:
        return ()  # a server of resources or prompts only
    tools: list[ServerTool] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            hint = tool.annotations.read_only_hint if tool.annotations is not None else None
            tools.append(ServerTool(server, tool.name, (tool.description or "").strip(), dict(tool.input_schema),
                                    read_only=bool(hint)))
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(tools)


async def _call(client: Client, tool: str, arguments: dict[str, Any], timeout: float) -> CallToolResult:
    import anyio

    with anyio.fail_after(timeout):
        return await client.call_tool(tool, arguments)


def describe_error(exc: BaseException, cfg: McpServerConfig | None = None) -> str:
    """One line for a connection or call failure (the first real error inside exception groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError) and cfg is not None and cfg.command:
        return f"command not found: {cfg.command}"
    if isinstance(exc, PermissionError) and cfg is not None and cfg.command:
        return f"cannot run {cfg.command} (permission denied)"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    name = type(exc).__name__
    if "Connect" in name and cfg is not None and cfg.url:
        return f"cannot connect to {cfg.url} ({text or name})"
    return f"{name}: {text}" if text else name
