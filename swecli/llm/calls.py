"""Tool calls as they stream in, and the ids they end up with.

Arguments are assembled from their fragments and repaired where the model wrote almost-JSON
(`arguments.normalize_arguments`).

Servers differ: some send no id (older llama.cpp, some Ollama builds), some repeat the same id for
every call (`call_0` on each turn). swecli's history pairs results with calls by id, so every call
gets an id that is unique within the response and against every id already in the request.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from dataclasses import field

from swecli.llm.arguments import normalize_arguments
from swecli.messages import AssistantMessage, Message, ToolCall
from swecli.records import datarecord


@datarecord
class PendingCall:
    """A tool call whose arguments are still streaming in."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    complete: bool = False
    """Known to be finished (block stop, a later call began, the response finished)."""
    announced: bool = False

    @property
    def text(self) -> str:
        return "".join(self.arguments)

    def looks_complete(self) -> bool:
        """Finished, or its arguments already form a JSON object (a cut-off object never parses)."""
        if self.complete:
            return True
        try:
            return isinstance(json.loads(self.text), dict)
        except ValueError:
            return False


def ids_in(messages: Iterable[Message]) -> set[str]:
    return {call.id for m in messages if isinstance(m, AssistantMessage) for call in m.tool_calls}


class IdAllocator:
    """Hands out the final id of each call of one response, as soon as the call is announced."""

    def __init__(self, taken: set[str]) -> None:
        self._used = set(taken)
        self._count = 0

    def assign(self, raw: str) -> str:
        self._count += 1
        call_id = raw or f"call_{self._count}_{secrets.token_hex(4)}"
        if call_id in self._used:
            suffix = 2
            while f"{call_id}_{suffix}" in self._used:
                suffix += 1
            call_id = f"{call_id}_{suffix}"
        self._used.add(call_id)
        return call_id


def to_tool_calls(pending: Iterable[PendingCall], ids: IdAllocator,
                  only_complete: bool = False) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = []
    for call in pending:
        if only_complete and not call.looks_complete():
            continue
        if not call.announced:
            call.id, call.announced = ids.assign(call.id), True
        # Almost-JSON is repaired here, once, so the tool, the approval prompt, the log and the history
        # sent back to the provider all see the same arguments.
        calls.append(ToolCall(id=call.id, name=call.name, arguments=normalize_arguments(call.text)))
    return tuple(calls)
