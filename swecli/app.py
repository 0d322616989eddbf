"""Assembly: settings + project root -> a ready agent. Shared by the REPL and headless mode."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from swecli.agent import Agent
from swecli.config import Settings
from swecli.context.manager import ContextManager
from swecli.events import Event
from swecli.llm.base import Provider
from swecli.messages import SystemBlock
from swecli.permissions import Approver, Policy
from swecli.tools.base import ToolContext, ToolRegistry


def system_prompt() -> str:
    return resources.files("swecli").joinpath("prompts/system.md").read_text(encoding="utf-8")


def system_blocks(root: Path, memory: str = "") -> tuple[SystemBlock, ...]:
    """The stable prefix: persona and rules, then session-stable memory (each a cache breakpoint).

    Nothing here may change from turn to turn (no timestamps, no counters): it is the part of every
    request the provider's prompt cache reuses.
    """
    blocks = [SystemBlock(text=system_prompt() + f"\nThe project root is {root}.", cache=True)]
    if memory.strip():
        blocks.append(SystemBlock(text=memory, cache=True))
    return tuple(blocks)


@dataclass
class EventBus:
    """Fans the loop's events out to every listener (renderer, transcript, log, notes)."""

    listeners: list[Callable[[Event], None]] = field(default_factory=list)

    def __call__(self, event: Event) -> None:
        for listener in self.listeners:
            listener(event)


def build_tools() -> ToolRegistry:
    from swecli.tools.builtin import default_tools

    return ToolRegistry(default_tools())


def build_agent(
    settings: Settings,
    root: Path,
    provider: Provider,
    *,
    approver: Approver | None = None,
    bus: EventBus | None = None,
    memory: str = "",
) -> Agent:
    tools = build_tools()
    context = ContextManager(system=system_blocks(root, memory), tools=tools.schemas(), max_tokens=settings.max_tokens)
    tool_ctx = ToolContext(root=root, bash_timeout=settings.tools.bash_timeout,
                           max_output_chars=settings.tools.max_output_chars)
    return Agent(
        provider=provider,
        tools=tools,
        context=context,
        tool_ctx=tool_ctx,
        policy=Policy(mode=settings.mode, approver=approver),
        on_event=bus or EventBus(),
        max_iterations=settings.max_iterations,
    )
