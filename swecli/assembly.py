"""Assembly: settings + project root -> a ready agent session. Shared by the REPL and headless mode.

    session = open_session(root, settings, approver=..., listeners=[renderer])
    session.run("task")        # just-in-time context, the agent loop, then reflection
    session.close()

`build_agent` wires one `Agent` (provider, tools, context engine, policy); `open_session` adds the
transcript, log and notes, resume, and the playbook around it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swecli.agent import Agent
from swecli.config import Settings
from swecli.context.manager import ContextManager
from swecli.context.todo import TodoState, todo_tool
from swecli.events import Event, Notice, TurnFinished
from swecli.llm.base import Provider
from swecli.memory.playbook import Playbook
from swecli.memory.reflector import Reflector
from swecli.messages import SystemBlock, UserMessage
from swecli.permissions import Approver, Policy
from swecli.tools.base import Tool, ToolContext, ToolRegistry

if TYPE_CHECKING:
    from swecli.llm.retry import RetryNotice
    from swecli.session.recorder import SessionRecorder


def system_prompt() -> str:
    return resources.files("swecli").joinpath("prompts/system.md").read_text(encoding="utf-8")


def system_blocks(root: Path) -> tuple[SystemBlock, ...]:
    """The stable prefix: persona and rules. Nothing here may change from turn to turn (no
    timestamps, no counters): it is the part of every request the provider's prompt cache reuses."""
    return (SystemBlock(text=system_prompt() + f"\nThe project root is {root}.", cache=True),)


def memory_blocks(root: Path, settings: Settings, count: Callable[[str], int],
                  playbook: Playbook | None = None) -> tuple[SystemBlock, ...]:
    """Session-stable memory, loaded once at session start: OPENCLI.md (AGENTS.md, CLAUDE.md), the
    session notes and the learned playbook. One block, one cache breakpoint; it changes only when a
    session starts."""
    from swecli.memory.notes import notes_prompt
    from swecli.memory.opencli import load_memory_prompt

    parts = [load_memory_prompt(root, settings.memory.memory_budget_tokens, count)]
    if settings.memory.session_notes:
        parts.append(notes_prompt(root, settings.memory.notes_budget_tokens, count))
    if playbook is not None:
        parts.append(playbook.as_context(settings.memory.playbook_budget_tokens, count))
    text = "\n\n".join(p for p in parts if p.strip())
    return (SystemBlock(text=text, cache=True),) if text else ()


@dataclass
class EventBus:
    """Fans the loop's events out to every listener (renderer, transcript, log, notes)."""

    listeners: list[Callable[[Event], None]] = field(default_factory=list)

    def __call__(self, event: Event) -> None:
        for listener in self.listeners:
            listener(event)


def build_tools(extra: list[Tool[Any]] | None = None) -> ToolRegistry:
    from swecli.tools.builtin import default_tools

    return ToolRegistry([*default_tools(), *(extra or [])])


def build_agent(
    settings: Settings,
    root: Path,
    provider: Provider,
    *,
    approver: Approver | None = None,
    bus: EventBus | None = None,
    extra_tools: list[Tool[Any]] | None = None,
    playbook: Playbook | None = None,
) -> Agent:
    bus = bus or EventBus()
    todo = TodoState()  # shared by the todo tool and the recitation in the dynamic tail
    tools = build_tools([todo_tool(todo), *(extra_tools or [])])
    context = ContextManager.from_settings(settings, system=system_blocks(root), tools=tools.schemas(), root=root,
                                           on_event=bus, todo=todo)
    context.memory = memory_blocks(root, settings, context.counter.text, playbook)
    tool_ctx = ToolContext(root=root, bash_timeout=settings.tools.bash_timeout,
                           max_output_chars=settings.tools.max_output_chars)
    context.cancel = tool_ctx.cancel  # Esc also stops a summary request
    return Agent(provider=provider, tools=tools, context=context, tool_ctx=tool_ctx,
                 policy=Policy(mode=settings.mode, approver=approver), on_event=bus,
                 max_iterations=settings.max_iterations)


def retry_notices(bus: EventBus) -> Callable[[RetryNotice], None]:
    """Say why nothing seems to happen while a provider waits to retry (called on the loop's thread)."""

    def announce(notice: RetryNotice) -> None:
        delay = f"{notice.delay:.1f}s" if notice.delay < 60 else f"{notice.delay / 60:.1f}min"
        bus(Notice("warning", f"{notice.error} Retrying in {delay} "
                              f"(attempt {notice.attempt + 1} of {notice.max_attempts})."))

    return announce


@dataclass
class AgentSession:
    root: Path
    settings: Settings
    provider: Provider
    agent: Agent
    bus: EventBus
    recorder: SessionRecorder

    playbook: Playbook | None = None
    reflector: Reflector | None = None

    @property
    def session_id(self) -> str:
        return self.recorder.session_id

    def run(self, prompt: str, attachments: Sequence[str] = ()) -> TurnFinished:
        """One user task: just-in-time context for what the prompt names, the loop, then reflection.

        `attachments` are root-relative paths already attached by the caller (`@path` mentions).
        """
        self._attach_named_context(prompt, attachments)
        turn = self.agent.run(prompt)
        if turn.stop_reason == "done" and self.reflector is not None:
            reflection = self.reflector.reflect(self.agent.history, turn.answer, self.agent.cancel)
            if reflection.changes:
                self.bus(Notice("info", reflection.summary()))
            for warning in reflection.warnings:
                self.bus(Notice("warning", warning))
        return turn

    def _attach_named_context(self, prompt: str, attachments: Sequence[str]) -> None:
        if not self.settings.context.just_in_time:
            return
        from swecli.context.retrieval import retrieve

        found = retrieve(prompt, self.root, budget_tokens=self.settings.context.just_in_time_tokens,
                         count_tokens=self.agent.context.counter.text, already_attached=attachments)
        if found is not None and found.text:
            self.agent.append(UserMessage(content=found.text, kind="context"))
            self.bus(Notice("info", found.summary()))

    def close(self) -> None:
        self.agent.context.close()  # a background summary still running is dropped (and logged)
        self.recorder.close()
        self.provider.close()


def open_session(
    root: Path,
    settings: Settings,
    *,
    approver: Approver | None = None,
    listeners: list[Callable[[Event], None]] | None = None,
    resume: str | None = None,
    continue_latest: bool = False,
    first_prompt: str | None = None,
) -> AgentSession:
    """A new or resumed session with its transcript, log and notes wired to the loop's events.

    Raises SessionError (a one-sentence message) when there is nothing to resume.
    """
    from swecli.llm.factory import make_provider
    from swecli.memory.notes import NotesUpdater, notes_tool
    from swecli.session.recorder import SessionRecorder

    bus = EventBus(list(listeners or []))

    def warn(text: str) -> None:
        bus(Notice("warning", text))

    if resume is not None or continue_latest:
        recorder, loaded = SessionRecorder.resume(root, settings, resume or None, on_error=warn)
    else:
        recorder, loaded = SessionRecorder.start(root, settings, first_prompt=first_prompt, on_error=warn), None
    if settings.memory.session_notes:
        recorder.attach("notes", NotesUpdater(root, resumed=recorder.resumed, redactor=recorder.redactor).handle)
    provider = make_provider(settings, on_retry=retry_notices(bus))
    extra = [notes_tool(redactor=recorder.redactor)] if settings.memory.session_notes else []
    playbook = Playbook.for_project(root) if settings.context.playbook else None
    agent = build_agent(settings, root, provider, approver=approver, bus=bus, extra_tools=extra, playbook=playbook)
    bus.listeners.append(recorder.handle)
    if loaded is not None:
        agent.history = list(loaded.history)
        if agent.context.mechanisms is not None:
            agent.context.mechanisms.failures.replay(agent.history)  # repeated failures survive a resume
        for problem in loaded.problems:
            warn(problem)
    reflector = None
    if playbook is not None:
        for problem in playbook.warnings:
            warn(problem)
        reflector = Reflector(playbook, provider, use_llm=settings.memory.reflect_with_llm)
    session = AgentSession(root, settings, provider, agent, bus, recorder, playbook, reflector)
    # A background summary talks to its own provider (its own HTTP client, no retry notices from its
    # thread), for the model the session uses at the time (/model changes it).
    agent.context.summary_provider = lambda: make_provider(session.settings)
    return session
