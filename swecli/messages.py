"""Typed conversation history: the one shape every layer speaks.

The wire formats (OpenAI chat, Anthropic messages) live inside the providers; everything else
(agent loop, context engine, transcript, UI) works with these models.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    # Frozen so a message can never be rewritten behind the prompt cache's back: a change to an
    # old message is always a new object, made on purpose (compaction, decay).
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolCall(_Frozen):
    id: str
    name: str
    arguments: str = "{}"
    """The raw JSON text the model produced; it may be malformed, and the tool layer says so."""

    def args(self) -> dict[str, Any]:
        """Best-effort arguments for display, approval and logs ({} when malformed); validation
        proper happens in the tool layer."""
        try:
            data = json.loads(self.arguments or "{}")
        except json.JSONDecodeError:
            return {}
        return data if isinstance(data, dict) else {}


class ImagePart(_Frozen):
    """An image sent to the model with a message (already capped in size), and where it came from."""

    media_type: str
    """image/png, image/jpeg, image/gif or image/webp."""
    data: str = Field(repr=False)
    """Base64 of the image bytes."""
    width: int
    height: int
    path: str
    """Where it can be read again: root-relative in the project, else absolute."""
    origin: str = "attached by the user"
    """What brought it in: `attached by the user`, `read with read_file`."""

    def stand_in(self) -> str:
        """The one line that stands for the image once it is old (see `swecli.context.images`), or for a
        model that does not take images: what it was, where it came from, how to see it again."""
        kind = self.media_type.removeprefix("image/").upper()
        return (f"[image: {self.path} ({self.width}×{self.height} {kind}), {self.origin}; not in the context now: "
                f"read_file {self.path!r} to see it]")


class UserMessage(_Frozen):
    role: Literal["user"] = "user"
    content: str
    kind: Literal["prompt", "context", "summary", "note", "skill"] = "prompt"
    """`prompt` is what the person typed; the other kinds are text swecli adds on their behalf
    (`skill`: a skill's instructions the person loaded with /skill-name)."""
    images: tuple[ImagePart, ...] = ()
    """Images attached to the message (`@shot.png`, a pasted image path), sent after its text."""


class ThinkingBlock(_Frozen):
    """One Anthropic thinking block, kept verbatim: during tool use the API wants each block back,
    unchanged and with its signature, alongside the tool results of the same turn."""

    text: str = ""
    signature: str = ""
    redacted: str = ""
    """The encrypted `data` of a `redacted_thinking` block (then `text` is empty)."""


class AssistantMessage(_Frozen):
    role: Literal["assistant"] = "assistant"
    content: str = ""
    reasoning: str = ""
    """The model's reasoning as text, for display (never sent back on its own)."""
    tool_calls: tuple[ToolCall, ...] = ()
    thinking: tuple[ThinkingBlock, ...] = ()
    """Signed thinking blocks (Anthropic extended thinking), sent back as they came; decay drops
    them from old messages."""


class ToolMessage(_Frozen):
    role: Literal["tool"] = "tool"
    tool_call_id: str
    name: str
    content: str
    is_error: bool = False
    images: tuple[ImagePart, ...] = ()
    """Images the tool returned (read_file on an image file)."""


Message = Annotated[UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")]


class SystemBlock(_Frozen):
    """A piece of the system prompt. `cache` marks the end of a stable block (an Anthropic breakpoint)."""

    text: str
    cache: bool = False


class ToolSchema(_Frozen):
    name: str
    description: str
    parameters: dict[str, object]


class Usage(BaseModel):
    """Token usage as a value object: responses add up with `+` (every field is a sum).

    Estimates compose by counting: a server that reports no usage (llama.cpp ignores
    `include_usage`) gets local counts with `estimated_requests=1`, so a sum says how many of its
    `requests` were counted locally, and `estimated` whether any number in it is an estimate.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    """Part of `output_tokens` the model spent reasoning, when the provider says."""
    requests: int = 0
    estimated_requests: int = 0
    """Requests whose numbers are local counts, not the provider's."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{name: getattr(self, name) + getattr(other, name) for name in Usage.model_fields})

    def __sub__(self, other: Usage) -> Usage:
        return Usage(**{name: getattr(self, name) - getattr(other, name) for name in Usage.model_fields})

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def estimated(self) -> bool:
        """Some of these numbers are local counts (shown with `~`)."""
        return self.estimated_requests > 0


def dangling_tool_calls(history: list[Message]) -> list[ToolCall]:
    """Tool calls that have no result yet (e.g. after an interrupt or a kill)."""
    answered = {m.tool_call_id for m in history if isinstance(m, ToolMessage)}
    return [
        call
        for m in history
        if isinstance(m, AssistantMessage)
        for call in m.tool_calls
        if call.id not in answered
    ]


def close_dangling_tool_calls(history: list[Message], reason: str) -> list[Message]:
    """Answer every open tool call so the history is valid for the next request.

    Each result goes right after the assistant message (and any results) that issued it, because
    providers require a tool call to be followed by its result before the next user/assistant turn.
    """
    open_ids = {c.id for c in dangling_tool_calls(history)}
    if not open_ids:
        return list(history)
    out: list[Message] = []
    pending: list[ToolCall] = []
    for msg in history:
        if pending and not isinstance(msg, ToolMessage):
            out.extend(_closing(pending, reason))
            pending = []
        out.append(msg)
        if isinstance(msg, AssistantMessage):
            pending = [c for c in msg.tool_calls if c.id in open_ids]
    out.extend(_closing(pending, reason))
    return out


def _closing(calls: list[ToolCall], reason: str) -> list[ToolMessage]:
    return [ToolMessage(tool_call_id=c.id, name=c.name, content=reason, is_error=True) for c in calls]
