"""Context assembly: what the agent loop asks of the context engine.

The loop calls, in order, each iteration:
  `prepare(history, provider)`  -> history, compacted at this turn boundary if it must be
  `request(history)`            -> the ModelRequest (stable prefix, append-only history, dynamic tail)
  `observe(request, usage)`     -> calibrate the local token count to the provider's number
and per tool call `tool_content(call, result)` -> the text that enters the history (offload hook),
and on a provider context-length error `compact(history, provider, trigger="overflow")`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from swecli.llm.base import ModelRequest, Provider
from swecli.messages import Message, SystemBlock, ToolCall, ToolSchema, Usage
from swecli.tools.base import ToolResult


@dataclass
class ContextManager:
    system: tuple[SystemBlock, ...]
    tools: tuple[ToolSchema, ...]
    max_tokens: int = 8192
    compactions: list[object] = field(default_factory=list)

    def prepare(self, history: list[Message], provider: Provider) -> list[Message]:
        return history

    def request(self, history: list[Message]) -> ModelRequest:
        return ModelRequest(system=self.system, messages=tuple(history), tools=self.tools, max_tokens=self.max_tokens)

    def observe(self, request: ModelRequest, usage: Usage | None) -> None:
        return None

    def tool_content(self, call: ToolCall, result: ToolResult) -> str:
        return result.content

    def compact(self, history: list[Message], provider: Provider, trigger: str, focus: str = "") -> list[Message]:
        return history
