"""Tools are plain functions with a pydantic argument model that doubles as their JSON schema.

The registry may grow and shrink during a session (MCP servers that finish starting, tools loaded by
`tool_search`, a server disabled): a `ToolSource` offers such changes, and the loop pulls them with
`ToolRegistry.refresh()` at a request boundary, so the tools list changes only between requests.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from swecli.errors import SwecliError
from swecli.llm.base import CancelToken
from swecli.messages import ImagePart, ToolCall, ToolSchema
from swecli.records import datarecord
from swecli.tools.environment import CommandEnvironment
from swecli.tools.facts import OTHER, ToolFacts

if TYPE_CHECKING:
    from pydantic.json_schema import GenerateJsonSchema

    from swecli.tools.sandbox import Sandbox
    from swecli.tools.spool import FullOutput

A = TypeVar("A", bound=BaseModel)


class ToolError(SwecliError):
    """A failure the model should read and act on (bad path, missing string, ...)."""


@datarecord
class ToolContext:
    """What every tool call may use: the project root, the cancel token, limits and the sandbox."""

    root: Path
    cancel: CancelToken = field(default_factory=CancelToken)
    bash_timeout: float = 120.0
    max_output_chars: int = 30_000
    on_output: Callable[[str], None] | None = None
    """Receives a running command's output as it arrives (the UI shows its last lines); set per call."""
    read_roots: tuple[Path, ...] = ()
    """Folders outside the project that read_file may also read (user-level skill folders)."""
    call_id: str = ""
    """The id of the call being run (set per call by `ToolRegistry.run`; a sub-agent links to it)."""
    images: bool = True
    """Whether read_file may return an image file as an image (False: the model is known not to take images)."""
    image_max_edge: int = 1568
    """Images are scaled down to this many pixels on their long edge."""
    sandbox: Sandbox | None = None
    """How bash confines this call; None runs it unconfined (the approval policy decides, per call)."""
    escalate: Callable[[str], bool] | None = None
    """Asks the user whether a command the sandbox blocked may run again outside it (given why it
    failed); None when no one may be asked."""
    environment: CommandEnvironment = field(default_factory=CommandEnvironment)
    """Which environment variables commands get (`sandbox.inherit_env`, `sandbox.pass_env`), sandboxed or not."""


@datarecord
class ToolResult:
    """What a tool call returns: the text the model sees and what the person is shown."""

    content: str
    """What the model sees."""
    is_error: bool = False
    summary: str = ""
    """One line for the person: `120 lines`, `exit 0 · 3.2s`, `Found 15 matches across 4 files`."""
    diff: str = ""
    """Unified diff for edits and writes, shown to the person."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Structured facts (exit_code, path, duration) for logs and compaction's extractors."""
    full: FullOutput | None = None
    """The whole output when `content` is a cut of it (bash over its cap, grep over its match limit):
    the context engine saves it and gives the model a preview. None when `content` is all of it."""
    images: tuple[ImagePart, ...] = ()
    """Images for the model (read_file on an image file), sent with `content`."""


@datarecord(frozen=True)
class Tool(Generic[A]):
    """One tool: its name, its pydantic argument model, the function that runs it, and its facts."""

    name: str
    description: str
    args: type[A]
    fn: Callable[[A, ToolContext], ToolResult]
    mutating: bool = False
    """Mutating tools need approval in default mode and are refused in plan mode."""
    preview: Callable[[A, ToolContext], str] | None = None
    """What the tool will do, shown before approval (the diff of an edit, the command of bash)."""
    parameters: dict[str, Any] | None = None
    """The JSON schema when it is not the argument model's own (an MCP tool carries its server's)."""
    concurrent: bool = False
    """Several calls of it in one reply may run at the same time (a sub-agent's `task`): it shares no
    state with the other calls. Only non-mutating tools run concurrently."""
    facts: ToolFacts = OTHER
    """What the rest of swecli knows about it (a shell? how a call is shown, folded...: `tools.facts`)."""
    ready: Callable[[ToolContext], None] | None = None
    """Called on the loop's thread when a request goes out (with the sandbox the tool's next call would
    run in): work the next call would otherwise wait for starts now, while the model thinks (bash starts
    its sandbox and the shell parser)."""
    stand_down: Callable[[], None] | None = None
    """Called when the session closes or its conversation is cleared: what `ready` started and no call will
    use now is stopped (bash discards its spare sandbox)."""

    def schema(self) -> ToolSchema:
        if self.parameters is not None:
            return ToolSchema(name=self.name, description=self.description, parameters=self.parameters)
        params = self.args.model_json_schema(schema_generator=_plain_defaults())
        params.pop("title", None)
        for prop in params.get("properties", {}).values():
            prop.pop("title", None)
        return ToolSchema(name=self.name, description=self.description, parameters=params)

    def parse(self, raw: str) -> A:
        """Validate the model's raw JSON arguments; raise ToolError with a message it can act on."""
        try:
            data = json.loads(raw or "{}")
        except json.JSONDecodeError as exc:
            raise ToolError(invalid_json(self.name, raw, exc)) from None
        if not isinstance(data, dict):
            raise ToolError(f"Arguments for {self.name} must be a JSON object, got {type(data).__name__}.")
        try:
            return self.args.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
            )
            raise ToolError(f"Invalid arguments for {self.name}: {problems}.") from None


@datarecord(frozen=True)
class ToolChanges:
    """What a `ToolSource` adds to or removes from the registry at one request boundary."""

    added: tuple[Tool[Any], ...] = ()
    removed: tuple[str, ...] = ()
    reason: str = ""
    """For the prefix monitor and the logs: `tools loaded: mcp__time__convert_time`."""

    def __bool__(self) -> bool:
        return bool(self.added or self.removed)


class ToolSource(Protocol):
    """Tools that come and go during a session (MCP). Called on the loop's thread only."""

    def poll(self) -> ToolChanges:
        """The changes since the last poll (new tools are appended after the existing ones)."""
        ...

    def resolve(self, name: str) -> Tool[Any] | None:
        """A tool the model called by name that the registry does not have yet (a deferred one)."""
        ...

def invalid_json(tool: str, raw: str, exc: json.JSONDecodeError) -> str:
    """What the model reads about arguments that are not JSON (the provider already repaired what it
    could, see `swecli.llm.arguments`): a cut-off call is named as such, so the model resends it whole."""
    if exc.msg.startswith("Unterminated string") or exc.pos >= len(raw.rstrip()):
        return (f"The arguments for {tool} end before the JSON object is complete ({len(raw):,} characters "
                f"received; {exc.msg}): the call was cut off, probably at the output limit, and was not run. "
                "Send it again complete; split long content into smaller writes or edits.")
    return (f"Invalid JSON arguments for {tool}: {exc.msg} at position {exc.pos}; the call was not run. "
            "Send a JSON object matching the tool schema.")


@functools.cache
def _plain_defaults() -> type[GenerateJsonSchema]:
    """pydantic's JSON schema generator, writing a `str`, `int`, `bool` or `None` default as it is: pydantic
    builds a `TypeAdapter` per default to serialize it (~0.3 M instructions each, ~40 in the built-in tools'
    schemas, on every start) and gets the same value. Anything else (a float: `inf` is written `null`; an enum;
    a `str` subclass) still goes through pydantic. The schema is the prompt's stable prefix: it must not change
    by a byte (`tests/tools/test_base.py` compares it with pydantic's own)."""
    from pydantic.json_schema import GenerateJsonSchema

    class PlainDefaults(GenerateJsonSchema):
        def encode_default(self, dft: Any) -> Any:
            if dft is None or type(dft) in (str, int, bool):
                return dft
            return super().encode_default(dft)

    return PlainDefaults


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool[Any]], source: ToolSource | None = None) -> None:
        # Sorted by name so the serialized schemas (part of the cached prompt prefix) never reorder;
        # tools that join later are appended after them, in the order they joined.
        self._tools = {t.name: t for t in sorted(tools, key=lambda t: t.name)}
        self.source = source
        self._resolved: list[Tool[Any]] = []
        self._lock = threading.Lock()

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def get(self, name: str) -> Tool[Any] | None:
        tool = self._tools.get(name)
        if tool is None and self.source is not None:
            tool = self.source.resolve(name)
            if tool is not None:
                with self._lock:
                    self._tools[name] = tool
                    self._resolved.append(tool)  # announced by the next refresh()
        return tool

    def names(self) -> list[str]:
        return sorted(self._tools)

    def ready(self, ctx: ToolContext) -> None:
        """Call every tool's `ready` hook (a request went out; `ctx` carries the sandbox of the next call)."""
        for tool in list(self._tools.values()):
            if tool.ready is not None:
                tool.ready(ctx)

    def stand_down(self) -> None:
        """Call every tool's `stand_down` hook (the session closes or starts a new conversation)."""
        for tool in list(self._tools.values()):
            if tool.stand_down is not None:
                tool.stand_down()

    def schemas(self) -> tuple[ToolSchema, ...]:
        """In a stable order: the initial tools by name, then the ones that joined, as they joined."""
        return tuple(t.schema() for t in self._tools.values())

    def refresh(self) -> ToolChanges:
        """Apply the source's changes (and announce tools resolved by name since the last call)."""
        changes = self.source.poll() if self.source is not None else ToolChanges()
        with self._lock:
            resolved, self._resolved = self._resolved, []
            for name in changes.removed:
                self._tools.pop(name, None)
            for tool in changes.added:
                self._tools.setdefault(tool.name, tool)
        if not resolved:
            return changes
        names = ", ".join(t.name for t in resolved)
        reason = "; ".join(r for r in (changes.reason, f"tools called by name: {names}") if r)
        return ToolChanges(tuple(resolved) + changes.added, changes.removed, reason)

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolResult:
        """Run one call; every failure becomes a result the model can read, never an exception."""
        tool = self.get(call.name)
        if tool is None:
            return ToolResult(
                f"Unknown tool {call.name!r}. Available tools: {', '.join(self.names())}.",
                is_error=True, summary="unknown tool",
            )
        try:
            result = tool.fn(tool.parse(call.arguments), replace(ctx, call_id=call.id))
        except ToolError as exc:
            result = ToolResult(str(exc), is_error=True, summary=_first_line(str(exc)))
        except Exception as exc:
            msg = f"{call.name} failed: {type(exc).__name__}: {exc}"
            result = ToolResult(msg, is_error=True, summary=_first_line(msg))
        return _visible(result)


def _visible(result: ToolResult) -> ToolResult:
    """The result with the control sequences of what the tool read or ran made visible (tools.visible):
    they reach the model and the terminal as text, not as commands to the terminal."""
    from swecli.tools.visible import visible

    return replace(result, content=visible(result.content), summary=visible(result.summary),
                   diff=visible(result.diff))


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:120] if text.strip() else ""
