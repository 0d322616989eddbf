"""Assembly: each subsystem registers itself (its tools, its memory section, its hooks), so a session is
the built-in tools plus whatever the subsystems the settings choose contribute."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from swecli.assembly import (
    AgentSession,
    Build,
    EventBus,
    McpServers,
    Opening,
    RepositoryMap,
    Skills,
    Subagents,
    Subsystem,
    build_agent,
    open_session,
    open_subsystems,
)
from swecli.config import ContextConfig, McpServerConfig, MemoryConfig, Settings, SkillsConfig, SubagentsConfig
from swecli.events import TurnFinished
from swecli.testing.model import ScriptedModel, say
from swecli.testing.server import Reply, ScriptedLLM
from swecli.tools.base import Tool, ToolContext, ToolResult


class _Nothing(BaseModel):
    pass


def _sunny(args: _Nothing, ctx: ToolContext) -> ToolResult:
    return ToolResult("sunny")


@dataclass
class Weather(Subsystem):
    """A subsystem as a new feature would write it."""

    seen: list[str] = field(default_factory=list)

    def tools(self, build: Build) -> list[Tool[Any]]:
        return [Tool("forecast", "Today's weather.", _Nothing, _sunny)]

    def memory(self, count: Any) -> str:
        return "## Weather\nIt is sunny here."

    def attach(self, session: AgentSession) -> None:
        self.seen.append("attach")

    def before_task(self, session: AgentSession) -> None:
        self.seen.append("before")

    def after_task(self, session: AgentSession, turn: TurnFinished) -> None:
        self.seen.append(f"after:{turn.stop_reason}")

    def close(self) -> None:
        self.seen.append("close")


def test_a_subsystem_adds_its_tools_and_its_memory_section(tmp_path: Path) -> None:
    agent = build_agent(Settings(model="scripted-model"), tmp_path, ScriptedModel([say("hi")]), parts=[Weather()])
    assert "forecast" in agent.tools and "read_file" in agent.tools and "todo" in agent.tools
    assert "It is sunny here." in agent.context.memory[0].text


def test_the_settings_choose_the_subsystems(tmp_path: Path) -> None:
    off = Settings(skills=SkillsConfig(enabled=False), subagents=SubagentsConfig(enabled=False),
                   context=ContextConfig(playbook=False), memory=MemoryConfig(session_notes=False))
    assert [type(p) for p in open_subsystems(Opening(tmp_path, off, EventBus()))] == [RepositoryMap]
    on = off.model_copy(update={"skills": SkillsConfig(), "subagents": SubagentsConfig(enabled=True),
                                "mcp": off.mcp.model_copy(update={"servers": {"t": McpServerConfig(command="x")}})})
    assert [type(p) for p in open_subsystems(Opening(tmp_path, on, EventBus()))] == \
        [RepositoryMap, Skills, Subagents, McpServers]


def test_a_session_runs_its_subsystems_around_each_task_and_closes_them(project: Path) -> None:
    with ScriptedLLM([Reply("Done.")]) as llm:
        settings = Settings(provider="openai-compatible", base_url=llm.base_url, model="scripted-model",
                            context=ContextConfig(just_in_time=False, playbook=False))
        session = open_session(project, settings)
        weather = Weather()
        session.parts = [*session.parts, weather]
        weather.attach(session)
        session.run("hello")
        session.close()
    assert weather.seen == ["attach", "before", "after:done", "close"]
