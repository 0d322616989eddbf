"""Tools are plain functions with a pydantic argument model that doubles as their JSON schema."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from swecli.llm.base import CancelToken
from swecli.messages import ImagePart, ToolCall, ToolSchema

if TYPE_CHECKING:
    from swecli.tools.spool import FullOutput

A = TypeVar("A", bound=BaseModel)


class ToolError(Exception):
    """A failure the model should read and act on (bad path, missing string, ...)."""


@dataclass
class ToolContext:
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


@dataclass
class ToolResult:
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


@dataclass(frozen=True)
class Tool(Generic[A]):
    name: str
    description: str
    args: type[A]
    fn: Callable[[A, ToolContext], ToolResult]
    mutating: bool = False
    """Mutating tools need approval in default mode and are refused in plan mode."""
    preview: Callable[[A, ToolContext], str] | None = None
    """What the tool will do, shown before approval (the diff of an edit, the command of bash)."""
    concurrent: bool = False
    """Several calls of it in one reply may run at the same time (a sub-agent's `task`): it shares no
    state with the other calls. Only non-mutating tools run concurrently."""

    def schema(self) -> ToolSchema:
        params = self.args.model_json_schema()
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


def invalid_json(tool: str, raw: str, exc: json.JSONDecodeError) -> str:
    """What the model reads about arguments that are not JSON (the provider already repaired what it
    could, see `swecli.llm.arguments`): a cut-off call is named as such, so the model resends it whole."""
    if exc.msg.startswith("Unterminated string") or exc.pos >= len(raw.rstrip()):
        return (f"The arguments for {tool} end before the JSON object is complete ({len(raw):,} characters "
                f"received; {exc.msg}): the call was cut off, probably at the output limit, and was not run. "
                "Send it again complete; split long content into smaller writes or edits.")
    return (f"Invalid JSON arguments for {tool}: {exc.msg} at position {exc.pos}; the call was not run. "
            "Send a JSON object matching the tool schema.")


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool[Any]]) -> None:
        self._tools = {t.name: t for t in tools}

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def get(self, name: str) -> Tool[Any] | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def schemas(self) -> tuple[ToolSchema, ...]:
        # Sorted by name so the serialized schemas (part of the cached prompt prefix) never reorder.
        return tuple(self._tools[n].schema() for n in self.names())

    def run(self, call: ToolCall, ctx: ToolContext) -> ToolResult:
        """Run one call; every failure becomes a result the model can read, never an exception."""
        tool = self._tools.get(call.name)
        if tool is None:
            return ToolResult(
                f"Unknown tool {call.name!r}. Available tools: {', '.join(self.names())}.",
                is_error=True, summary="unknown tool",
            )
        try:
            return tool.fn(tool.parse(call.arguments), replace(ctx, call_id=call.id))
        except ToolError as exc:
            return ToolResult(str(exc), is_error=True, summary=_first_line(str(exc)))
        except Exception as exc:
            msg = f"{call.name} failed: {type(exc).__name__}: {exc}"
            return ToolResult(msg, is_error=True, summary=_first_line(msg))


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:120] if text.strip() else ""
