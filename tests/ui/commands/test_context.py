from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from rich.console import Console

from swecli.config import ContextConfig
from swecli.context.archive import MemoryArchive
from swecli.context.manager import ContextManager, Limits, Prompt, Wiring
from swecli.events import CompactionDone, Event
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolCall, ToolMessage, Usage, UserMessage
from swecli.testing.model import ScriptedModel, say
from swecli.ui.commands.context import commands, compact, context, context_report


@dataclass
class FakeAgent:
    context: ContextManager
    history: list[Message]
    replaced: list[str] = field(default_factory=list)

    def replace_history(self, history: list[Message], reason: str) -> None:
        if history is not self.history:
            self.history = list(history)
            self.replaced.append(reason)

    def sync_tools(self) -> None:
        """No tool source here (MCP is covered by tests/mcp)."""


@dataclass
class FakeSession:
    agent: FakeAgent
    provider: Any
    mcp: None = None


@dataclass
class FakeRepl:
    """The part of a `CommandContext` the context commands use."""

    session: FakeSession
    console: Console = field(default_factory=lambda: Console(record=True, width=110, color_system=None))
    meter_refreshed: int = 0

    @property
    def agent(self) -> FakeAgent:
        return self.session.agent

    def print(self, renderable: Any = "") -> None:
        self.console.print(renderable)

    def refresh_meter(self) -> None:
        self.meter_refreshed += 1

    def output(self) -> str:
        return self.console.export_text()


def history() -> list[Message]:
    out: list[Message] = [UserMessage(content="[bold]fix[/bold] the parser")]
    for i in range(6):
        call = ToolCall(id=f"c{i}", name="bash", arguments='{"command": "pytest -q"}')
        out += [AssistantMessage(tool_calls=(call,)), ToolMessage(tool_call_id=f"c{i}", name="bash",
                                                                 content="FAILED test_x\n" * 300)]
    return [*out, AssistantMessage(content="done")]


def make(events: list[Event], provider: Any = None) -> FakeRepl:
    context = ContextManager(Prompt((SystemBlock(text="system prompt"),), (), (SystemBlock(text="memory"),)),
                             Limits(window=200_000), ContextConfig(keep_recent_tokens=300),
                             wiring=Wiring(on_event=events.append, archive=MemoryArchive()))
    return FakeRepl(FakeSession(FakeAgent(context, history()), provider))


def test_context_prints_the_breakdown_table_and_bar() -> None:
    repl = make([])
    context(cast(Any, repl), "")
    text = repl.output()
    state = repl.agent.context.state(repl.agent.history)
    for label in ("system", "tools", "memory", "history", "current turn", "free", "reserved for reply"):
        assert label in text
    assert f"{state.current_turn:,}" in text
    assert "▲ compaction at 160k" in text and "█" in text
    assert "calibrates after the provider's first usage report" in text
    assert "background summary from 140k · compaction at 160k · hard limit 191.8k (replies get max_tokens 8.2k)" in text


def test_context_report_mentions_calibration_once_known() -> None:
    repl = make([])
    context = repl.agent.context
    request = context.request(repl.agent.history)
    context.observe(request, Usage(input_tokens=int(context.counter.request(request) * 1.1)))
    console = Console(record=True, width=110, color_system=None)
    console.print(context_report(context.state(repl.agent.history), context))
    assert "calibrated to the provider: ×1.1" in console.export_text()


def test_compact_replaces_the_history_and_reports_through_events() -> None:
    events: list[Event] = []
    model = ScriptedModel([say("summary of the parser work")])
    repl = make(events, model)
    before = repl.agent.history
    compact(cast(Any, repl), "keep the failing test names")
    model.assert_done()
    assert "keep the failing test names" in model.requests[0].messages[0].content
    assert repl.agent.replaced == ["compaction"] and len(repl.agent.history) < len(before)
    assert repl.agent.history[0] == before[0]  # the prompt, markup-looking text and all
    assert [type(e) for e in events if isinstance(e, CompactionDone)] == [CompactionDone]
    assert repl.meter_refreshed == 1


def test_compact_on_an_empty_conversation_says_so() -> None:
    repl = make([], ScriptedModel([]))
    repl.agent.history = []
    compact(cast(Any, repl), "")
    assert "conversation is empty" in repl.output()


def test_the_context_family_declares_context_and_compact() -> None:
    assert [c.name for c in commands] == ["context", "compact"]
    assert [c.signature for c in commands][1] == "/compact [focus instructions]"


def test_context_report_says_where_the_window_came_from() -> None:
    repl = make([])
    context = repl.agent.context
    context.window_source = "server (llama.cpp /props default_generation_settings.n_ctx)"
    console = Console(record=True, width=110, color_system=None)
    console.print(context_report(context.state(repl.agent.history), context))
    assert "window 200k: server (llama.cpp /props default_generation_settings.n_ctx)" in console.export_text()
