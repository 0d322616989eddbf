"""Assembly: settings + project root -> a ready agent session. Shared by the REPL and headless mode.

    session = open_session(root, settings, approver=..., listeners=[renderer])
    session.run("task")        # just-in-time context, the agent loop, then reflection
    session.close()

`build_agent` wires one `Agent` (provider, tools, context engine, policy); `open_session` adds the
transcript and log, resume, and the session's subsystems around it. A subsystem (the session notes, the
playbook, the repository map, skills, sub-agents, MCP servers) registers itself: the tools it adds, its
section of the memory block, what it hooks into once the session exists, before and after each task, and
what it stops at the end. A new one is a `Subsystem` and an entry in `SUBSYSTEMS`, not a block here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swecli.agent import Agent
from swecli.config import Settings
from swecli.context.manager import ContextManager, Prompt, Wiring
from swecli.context.meter import counter_for
from swecli.context.todo import TodoState, todo_tool
from swecli.events import ContextOverflow, Event, ModelCallStarted, Notice, TurnFinished
from swecli.llm.base import CancelToken, Provider
from swecli.memory.playbook import Playbook
from swecli.messages import ImagePart, SystemBlock, UserMessage
from swecli.models.thinking import Thinking
from swecli.permissions import Approver, Policy
from swecli.records import datarecord
from swecli.tools.base import Tool, ToolContext, ToolRegistry
from swecli.tools.environment import CommandEnvironment

if TYPE_CHECKING:
    from swecli.context.compaction import Pin
    from swecli.delegation.definitions import AgentDefinition
    from swecli.delegation.runner import Delegator, Spawn
    from swecli.llm.retry import RetryNotice
    from swecli.mcp.catalog import McpCatalog
    from swecli.memory.reflector import Reflector
    from swecli.session.recorder import SessionRecorder
    from swecli.session.store import LoadedSession
    from swecli.skills.catalog import Skill, SkillCatalog

CountTokens = Callable[[str], int]


def system_prompt() -> str:
    # Read beside this module, as the package ships it (package-data): `importlib.resources` would import its
    # readers and zipfile on the way to every first request (~2 ms of the main thread).
    return (Path(__file__).parent / "prompts" / "system.md").read_text(encoding="utf-8")


def system_blocks(root: Path) -> tuple[SystemBlock, ...]:
    """The stable prefix: persona and rules. Nothing here may change from turn to turn (no
    timestamps, no counters): it is the part of every request the provider's prompt cache reuses."""
    return (SystemBlock(text=system_prompt() + f"\nThe project root is {root}.", cache=True),)


def memory_blocks(root: Path, settings: Settings, count: CountTokens,
                  parts: Sequence[Subsystem] = ()) -> tuple[SystemBlock, ...]:
    """Session-stable memory, loaded once at session start: OPENCLI.md (AGENTS.md, CLAUDE.md), then each
    subsystem's section (the session notes, the learned playbook, the repository map, the skills catalog).
    One block, one cache breakpoint; it changes only when a session starts (or /init writes OPENCLI.md)."""
    from swecli.memory.opencli import load_memory_prompt

    parts_text = [load_memory_prompt(root, settings.memory.memory_budget_tokens, count),
                  *(part.memory(count) for part in parts)]
    text = "\n\n".join(p for p in parts_text if p.strip())
    return (SystemBlock(text=text, cache=True),) if text else ()


def repo_map_prompt(root: Path, budget: int, count: Callable[[str], int], wait: float = 10.0) -> str:
    """The ranked repository map for the memory block, computed once per session so the prefix stays put."""
    from swecli.repomap.repomap import background
    from swecli.repomap.views import memory_section

    rmap = background(root).wait(wait)
    return memory_section(rmap, budget, count) if rmap is not None else ""


@datarecord
class EventBus:
    """Fans the loop's events out to every listener (renderer, transcript, log, notes). Sub-agents
    report from their own threads, so one event is delivered at a time."""

    listeners: list[Callable[[Event], None]] = field(default_factory=list)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def __call__(self, event: Event) -> None:
        with self._lock:
            for listener in self.listeners:
                listener(event)


def build_tools(extra: list[Tool[Any]] | None = None) -> ToolRegistry:
    from swecli.tools.builtin import default_tools

    return ToolRegistry([*default_tools(), *(extra or [])])


ProviderFor = Callable[[str], Provider]
"""model name -> a new provider instance for it (a sub-agent's own client)."""


# --- subsystems ------------------------------------------------------------------------------------

@datarecord
class Build:
    """What a subsystem may use while the agent is put together (`Subsystem.tools`)."""

    settings: Settings
    root: Path
    bus: EventBus
    tool_ctx: ToolContext
    policy: Policy
    tools: list[Tool[Any]]
    """The tools registered so far, the built-in ones included (sub-agents choose theirs from these)."""
    agent: list[Agent] = field(default_factory=list)
    """The agent, once built (sub-agents follow its current model and thinking)."""


class Subsystem:
    """One feature's part in a session. Each method is a moment of the session's life; the defaults do
    nothing, and a subsystem overrides the moments it takes part in."""

    def tools(self, build: Build) -> list[Tool[Any]]:
        """Tools it adds to the agent (asked in `SUBSYSTEMS` order, before the agent exists)."""
        return []

    def memory(self, count: CountTokens) -> str:
        """Its section of the session's memory block ("" for none)."""
        return ""

    def compaction_pin(self) -> Pin | None:
        """What compaction must keep verbatim for it besides the prompts (asked before the agent exists)."""
        return None

    def attach(self, session: AgentSession) -> None:
        """The session exists: hook into it (a writer on the recorder, a tool source)."""

    def before_task(self, session: AgentSession) -> None:
        """A task is about to run."""

    def after_task(self, session: AgentSession, turn: TurnFinished) -> None:
        """A task ended (the loop's turn is over)."""

    def announce(self, session: AgentSession) -> None:
        """Say what happened since the last call (between tasks, and while the prompt is idle)."""

    def close(self) -> None:
        """The session ends: stop what it started (before the transcript and the provider close)."""


@datarecord
class Opening:
    """What a subsystem may use to decide whether it takes part, and to set itself up."""

    root: Path
    settings: Settings
    bus: EventBus
    recorder: SessionRecorder | None = None
    """None for a bare agent (`build_agent` without a session: benchmarks, tests)."""

    def warn(self, text: str) -> None:
        self.bus(Notice("warning", text))


@datarecord
class SessionNotes(Subsystem):
    """The session notes: a writer fed the loop's events, the `notes` tool, and the notes in the memory block."""

    root: Path
    settings: Settings
    recorder: SessionRecorder

    @classmethod
    def open(cls, opening: Opening) -> SessionNotes | None:
        if not opening.settings.memory.session_notes or opening.recorder is None:
            return None
        return cls(opening.root, opening.settings, opening.recorder)

    def tools(self, build: Build) -> list[Tool[Any]]:
        from swecli.memory.notes import notes_tool

        return [notes_tool(self.recorder.session_id, redactor=self.recorder.redactor)]

    def memory(self, count: CountTokens) -> str:
        from swecli.memory.notes import notes_prompt

        return notes_prompt(self.root, self.recorder.session_id, self.settings.memory.notes_budget_tokens, count)

    def attach(self, session: AgentSession) -> None:
        from swecli.memory.notes import NotesUpdater

        recorder = self.recorder
        updater = NotesUpdater(self.root, recorder.session_id, resumed=recorder.resumed, redactor=recorder.redactor)
        recorder.attach("notes", updater.handle, close=updater.close)


@datarecord
class LearnedPlaybook(Subsystem):
    """The project's learned playbook: in the memory block, and updated by reflection after a completed task."""

    playbook: Playbook
    settings: Settings
    reflector: Reflector | None = None

    @classmethod
    def open(cls, opening: Opening) -> LearnedPlaybook | None:
        if not opening.settings.context.playbook:
            return None
        return cls(Playbook.for_project(opening.root), opening.settings)

    def memory(self, count: CountTokens) -> str:
        return self.playbook.as_context(self.settings.memory.playbook_budget_tokens, count)

    def attach(self, session: AgentSession) -> None:
        for problem in self.playbook.warnings:
            session.bus(Notice("warning", problem))
        session.playbook = self.playbook

    def after_task(self, session: AgentSession, turn: TurnFinished) -> None:
        if turn.stop_reason != "done":
            return
        if self.reflector is None:  # made by the first completed task: nothing before the first request needs it
            from swecli.memory.reflector import Reflector

            self.reflector = Reflector(self.playbook, session.provider,
                                       use_llm=self.settings.memory.reflect_with_llm)
        reflection = self.reflector.reflect(session.agent.history, turn.answer, session.agent.cancel)
        if reflection.changes:
            # Bookkeeping, not news: the log and /playbook have it, the turn's output does not.
            session.recorder.record("reflection", summary=reflection.summary())
            session.playbook_changes += [f"{c.action}: {c.bullet.content}" for c in reflection.changes]
        for warning in reflection.warnings:
            session.bus(Notice("warning", warning))


@datarecord
class RepositoryMap(Subsystem):
    """The repository map: warmed up while the person types, the `repo_map` tool, and (with
    `context.repo_map_tokens`) the ranked map in the memory block."""

    root: Path
    settings: Settings

    @classmethod
    def open(cls, opening: Opening) -> RepositoryMap:
        config = opening.settings.context
        if opening.recorder is not None and (config.just_in_time or config.repo_map_tokens):
            from swecli.repomap.repomap import background

            background(opening.root)  # warm the repository map while the person types
        if opening.recorder is not None and config.just_in_time:
            from swecli.repomap.lexical import lexical_background

            lexical_background(opening.root)  # and its BM25 index, which retrieval reads next
        return cls(opening.root, opening.settings)

    def tools(self, build: Build) -> list[Tool[Any]]:
        from swecli.repomap.tool import REPO_MAP

        return [REPO_MAP]

    def memory(self, count: CountTokens) -> str:
        budget = self.settings.context.repo_map_tokens
        return repo_map_prompt(self.root, budget, count) if budget else ""


@datarecord
class Skills(Subsystem):
    """Skills: the `skill` tool, the catalog in the memory block, loaded skills kept through compaction, and
    user-level skill folders readable by read_file (with no skill found, only `/skills` says so)."""

    catalog: SkillCatalog
    settings: Settings

    @classmethod
    def open(cls, opening: Opening) -> Skills | None:
        catalog = discover_skills(opening.root, opening.settings, opening.warn)
        return cls(catalog, opening.settings) if catalog is not None else None

    def tools(self, build: Build) -> list[Tool[Any]]:
        if not self.catalog:
            return []
        from swecli.skills.loading import skill_tool

        build.tool_ctx.read_roots = tuple(s.directory for s in self.catalog.skills if s.scope == "user")
        return [skill_tool(self.catalog)]

    def memory(self, count: CountTokens) -> str:
        if not self.catalog:
            return ""
        from swecli.skills.catalog import catalog_prompt

        return catalog_prompt(self.catalog, self.settings.skills.catalog_tokens, count)

    def compaction_pin(self) -> Pin | None:
        if not self.catalog:
            return None
        from swecli.skills.loading import pin_skills

        return pin_skills  # loaded skills are kept through compaction

    def attach(self, session: AgentSession) -> None:
        session.skills = self.catalog


@datarecord
class Subagents(Subsystem):
    """Sub-agents: the `task` tool (`subagents.enabled`). Each sub-agent gets its own provider from
    `provider_for` (default: `make_provider` for these settings and the model asked for), and
    `transcript_for(call_id)` names where the recorder writes its transcript."""

    provider_for: ProviderFor | None = None
    transcript_for: Callable[[str], str] | None = None

    @classmethod
    def open(cls, opening: Opening) -> Subagents | None:
        if not opening.settings.subagents.enabled:
            return None
        recorder, root = opening.recorder, opening.root
        if recorder is None:
            return cls()
        return cls(transcript_for=lambda call_id: _relative(recorder.child_transcript(call_id), root))

    def tools(self, build: Build) -> list[Tool[Any]]:
        from swecli.delegation.definitions import load_agents
        from swecli.delegation.task import task_tool

        settings, holder = build.settings, build.agent
        agents = load_agents(build.root, trusted=settings.project_trusted)
        for warning in agents.warnings:
            build.bus(Notice("warning", warning))

        def count(text: str) -> int:
            return holder[0].context.counter.text(text) if holder else len(text) // 4

        spawn = child_spawner(build, build_tools(build.tools), self.provider_for or _provider_for(settings))
        made: list[Delegator] = []
        lock = threading.Lock()

        def delegator() -> Delegator:  # one per session, made by the first task call (parallel calls share it)
            from swecli.delegation.runner import Delegator

            with lock:
                if not made:
                    made.append(Delegator(agents, spawn, build.tool_ctx.cancel, build.bus, settings.subagents, count,
                                          self.transcript_for or (lambda call_id: "")))
                return made[0]

        return [task_tool(agents, delegator)]


@datarecord
class ModelServer(Subsystem):
    """What the model's server said about itself (`swecli.llm.window`): a chat template that leaves the tool
    schemas out of the prompt is said once (and the schemas are not counted: the meter matches the
    server's count); a window learnt from the server's context-length error is remembered for the next
    start."""

    @classmethod
    def open(cls, opening: Opening) -> ModelServer | None:
        from swecli.llm.window import worth_asking

        return cls() if worth_asking(opening.settings) else None  # a server that may say (OpenAI's API does not)

    def attach(self, session: AgentSession) -> None:
        from swecli.llm.window import template_without_tools

        note = template_without_tools(session.settings.server_window)
        if note:
            session.agent.context.counter.tools_in_prompt = False
            session.bus(Notice("warning", note))
        session.bus.listeners.append(lambda event: self._learn(session, event))

    def _learn(self, session: AgentSession, event: Event) -> None:
        if isinstance(event, ContextOverflow) and event.adopted and event.server_window:
            from swecli.llm.window import remember_learnt

            remember_learnt(session.settings, event.server_window)


@datarecord
class McpServers(Subsystem):
    """MCP servers (`mcp.servers`): started in the background when the session opens (never waited for);
    their tools reach the loop through the registry's source, loaded or deferred within `mcp.schema_budget`.
    A task waits a short grace for servers still starting; their failures are announced between tasks."""

    settings: Settings
    root: Path
    catalog: McpCatalog | None = None

    @classmethod
    def open(cls, opening: Opening) -> McpServers | None:
        return cls(opening.settings, opening.root) if opening.settings.mcp.servers else None

    def attach(self, session: AgentSession) -> None:
        from swecli.context.tokens import TOOL_SCHEMA_OVERHEAD, serialize_tool
        from swecli.mcp.catalog import McpCatalog
        from swecli.mcp.manager import McpManager

        cfg, context = self.settings.mcp, session.agent.context
        manager = McpManager(cfg.servers, self.root, cfg.startup_timeout, cfg.tool_timeout).start()
        self.catalog = McpCatalog(manager, budget=lambda: cfg.budget_tokens(context.window),
                                  count=lambda schema: TOOL_SCHEMA_OVERHEAD + context.counter.text(
                                      serialize_tool(schema)))
        session.agent.tools.source = self.catalog
        session.mcp = self.catalog

    def before_task(self, session: AgentSession) -> None:
        """Servers still starting when a task begins get a short grace in the REPL (`mcp.repl_wait`; later
        ones join between requests), and in -p (`session.mcp_wait` set) until they are ready or have failed,
        up to `mcp.startup_timeout`, as Claude Code waits `MCP_TIMEOUT`. Esc or Ctrl-C skips the wait. Each
        server still not ready is named in a warning."""
        if self.catalog is not None and (starting := self.catalog.manager.starting()):
            wait = self.settings.mcp.repl_wait if session.mcp_wait is None else session.mcp_wait
            setting = " (mcp.startup_timeout)" if session.mcp_wait is not None else ""
            session.bus(Notice("info", f"waiting up to {wait:g}s{setting} for MCP server(s) {', '.join(starting)}"))
            # -p: a bit past the timeout, by when a server that hangs has been marked failed with its reason
            self.catalog.manager.wait_started(wait + (MCP_SETTLE if setting else 0.0), session.agent.cancel)
            self.announce(session)  # those that failed meanwhile say why
            late = self.catalog.manager.starting()
            if late:
                joining = "" if setting else " (they join when ready)"
                session.bus(Notice("warning", f"MCP server(s) {', '.join(late)} not ready after {wait:g}s: this "
                                              f"task starts without their tools{joining}."))
        self.announce(session)

    def after_task(self, session: AgentSession, turn: TurnFinished) -> None:
        self.announce(session)

    def announce(self, session: AgentSession) -> None:
        """MCP servers that failed or hung since the last call (once each)."""
        if self.catalog is not None:
            for level, text in self.catalog.manager.take_notices():
                session.bus(Notice(level, text))

    def close(self) -> None:
        if self.catalog is not None:
            self.catalog.manager.close()  # no server process outlives the session


SUBSYSTEMS: tuple[Callable[[Opening], Subsystem | None], ...] = (
    SessionNotes.open, LearnedPlaybook.open, RepositoryMap.open, Skills.open, Subagents.open, McpServers.open,
    ModelServer.open,
)
"""Every subsystem, in the order of their memory sections (and tools). Each decides from the settings
whether it takes part."""


def open_subsystems(opening: Opening) -> list[Subsystem]:
    return [part for open_part in SUBSYSTEMS if (part := open_part(opening)) is not None]


def build_agent(  # noqa: PLR0913 (what a session, a test or a benchmark builds an agent from)
        settings: Settings, root: Path, provider: Provider, *, approver: Approver | None = None,
        bus: EventBus | None = None, parts: Sequence[Subsystem] | None = None,
        summary_provider: Callable[[], Provider] | None = None, probe_later: bool = False) -> Agent:
    """One agent with its tools, context engine and policy. `parts`: the session's subsystems (default:
    those a session without a transcript has: the repository map, and sub-agents when enabled).
    `summary_provider` makes the background summary's own provider (default: one for the agent's model);
    `probe_later`: see `build_policy`."""
    bus = bus or EventBus()
    parts = open_subsystems(Opening(root, settings, bus)) if parts is None else parts
    todo = TodoState()  # shared by the todo tool and the recitation in the dynamic tail
    tool_ctx = ToolContext(root=root, bash_timeout=settings.tools.bash_timeout,
                           max_output_chars=settings.tools.max_output_chars,
                           images=settings.accepts_images is not False, image_max_edge=settings.images.max_edge,
                           environment=CommandEnvironment.from_settings(settings.sandbox.inherit_env,
                                                                        settings.sandbox.pass_env))
    build = Build(settings, root, bus, tool_ctx, build_policy(settings, root, approver, bus, probe_later),
                  [todo_tool(todo)])
    for part in parts:
        build.tools += part.tools(build)
    tools = build_tools(build.tools)
    counter = counter_for(settings.model)
    memory = memory_blocks(root, settings, counter.text, parts)
    if summary_provider is None:  # a bare agent: a provider for the model the agent uses at the time
        make = _provider_for(settings)
        summary_provider = lambda: make(build.agent[0].provider.model if build.agent else settings.model)  # noqa: E731
    pin = next((p for part in parts if (p := part.compaction_pin()) is not None), None)
    wiring = Wiring(on_event=bus, cancel=tool_ctx.cancel, summary_provider=summary_provider, pin=pin, todo=todo,
                    counter=counter)  # Esc also stops a summary request
    context = ContextManager.from_settings(settings, Prompt(system_blocks(root), tools.schemas(), memory), root=root,
                                           wiring=wiring)
    agent = Agent(provider=provider, tools=tools, context=context, tool_ctx=tool_ctx, policy=build.policy,
                  on_event=bus, max_iterations=settings.max_iterations, max_parallel=settings.subagents.parallel,
                  thinking=Thinking.parse(settings.thinking))
    build.agent.append(agent)
    return agent


# --- sub-agents ------------------------------------------------------------------------------------

CHILD_EXCLUDED = frozenset({"agent", "skill", "memory"})
"""Kinds of tool never given to a sub-agent: no recursion (`task`), no skills, and no writing to the parent's
todo list or notes."""

def _provider_for(settings: Settings) -> ProviderFor:
    def make(model: str) -> Provider:
        from swecli.llm.factory import make_provider

        return make_provider(settings.model_copy(update={"model": model}))

    return make


def child_tools(base: ToolRegistry, agent: AgentDefinition) -> tuple[ToolRegistry, list[str]]:
    """(the sub-agent's tools, names in its definition that are not tools here)."""
    from swecli.delegation.definitions import TOOL_ALIASES

    allowed = {n: t for n in base.names() if (t := base.get(n)) is not None and t.facts.kind not in CHILD_EXCLUDED}
    if agent.tools is None:
        return ToolRegistry([t for t in allowed.values() if not t.mutating]), []
    wanted = [TOOL_ALIASES.get(name, name) for name in agent.tools]
    return ToolRegistry([allowed[n] for n in wanted if n in allowed]), [n for n in wanted if n not in allowed]


def child_spawner(build: Build, base: ToolRegistry, provider_for: ProviderFor) -> Spawn:
    """Builds a sub-agent: the same loop, tools, policy (mode, approvals, guard) and tool context
    (root, sandbox) as the parent; a fresh context; its own provider, cancel token and step budget."""
    from swecli.memory.opencli import load_memory_prompt

    settings, root, tool_ctx, policy, holder = build.settings, build.root, build.tool_ctx, build.policy, build.agent

    def spawn(agent: AgentDefinition, cancel: CancelToken, on_event: Callable[[Event], None]) -> Agent:
        tools, unknown = child_tools(base, agent)
        if unknown:
            on_event(Notice("warning", f"sub-agent {agent.name}: no tool named {', '.join(unknown)}; ignored"))
        model = agent.model or (holder[0].provider.model if holder else settings.model)
        child_settings = settings.model_copy(update={"model": model})
        system = (SystemBlock(text=f"{agent.prompt}\nThe project root is {root}.", cache=True),)
        counter = counter_for(model)
        memory = load_memory_prompt(root, settings.memory.memory_budget_tokens, counter.text)
        prompt = Prompt(system, tools.schemas(), (SystemBlock(text=memory, cache=True),) if memory else ())
        context = ContextManager.from_settings(child_settings, prompt, root=root,
                                               wiring=Wiring(on_event=on_event, cancel=cancel, counter=counter))
        writes = any(t.mutating for n in tools.names() if (t := tools.get(n)) is not None)
        # Writing tools go through the parent's own policy: its mode decides, its approvals apply.
        child_policy = policy if writes else Policy(mode="plan")
        # A sub-agent thinks as the parent does now (`/thinking` may have changed it since the start).
        thinking = holder[0].thinking if holder else Thinking.parse(settings.thinking)
        return Agent(provider=provider_for(model), tools=tools, context=context,
                     tool_ctx=replace(tool_ctx, cancel=cancel), policy=child_policy, on_event=on_event,
                     max_iterations=settings.subagents.max_iterations, thinking=thinking)

    return spawn


def build_policy(settings: Settings, root: Path, approver: Approver | None, bus: EventBus,
                 probe_later: bool = False) -> Policy:
    """The approval policy with the configured sandbox; says once (per session) why the sandbox
    cannot run here, and which writable paths do not exist. With `probe_later` (-p), what only running bwrap
    can tell is found once the first request is out (`LaterProbe`), and said before the first command."""
    from swecli.tools.protected import broad_project_warning
    from swecli.tools.sandbox import configured, from_settings, unprobed_reason

    probe: LaterProbe | None = None
    if probe_later:
        sandbox, warnings = configured(settings.sandbox, root)
        known = unprobed_reason(sandbox.root, sandbox.writable) if sandbox is not None else ""
        if known is None and sandbox is not None:
            probe = LaterProbe(sandbox.root, settings.sandbox.network, bus, sandbox.writable)
        problem = known or ""
    else:
        sandbox, problem, warnings = from_settings(settings.sandbox, root)
    broad = broad_project_warning(root.resolve())
    for text in ([broad] if broad else []) + ([problem] if problem else []) + warnings:
        bus(Notice("warning", text))
    return Policy(mode=settings.mode, approver=approver, sandbox=sandbox, sandbox_problem=problem, root=root.resolve(),
                  probe=probe.problem if probe is not None else None)


class LaterProbe:
    """-p's sandbox probe (`tools.sandbox.probe_findings`: a bwrap run, `ldconfig -p`, the seccomp binding's
    load), off the path to the first request: on a daemon thread from `ON_THE_WIRE` after that request starts
    (the model's time covers it), or at once when a decision needs the answer (`problem`, which waits for
    it). What it finds is said then, on the deciding thread, before the command it concerns; a run in which
    nothing needed it ends without waiting for it (and says nothing of it). A spare sandbox started meanwhile
    (`Policy.expected_confinement`) shares its bwrap run (`tools.sandbox._probe`)."""

    def __init__(self, root: Path, network: bool, bus: EventBus, writable: tuple[Path, ...] = ()) -> None:
        self.root, self.network, self.bus, self.writable = root, network, bus, writable
        self._now, self._done = threading.Event(), threading.Event()
        self._lock = threading.Lock()
        self._started = self._said = False
        self._found: tuple[str, list[str]] = ("", [])
        bus.listeners.append(self._on_event)

    def _on_event(self, event: Event) -> None:
        if isinstance(event, ModelCallStarted):
            self._start()

    def _start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._run, name="swecli-sandbox-probe", daemon=True).start()

    def _run(self) -> None:
        from swecli.collector import ON_THE_WIRE
        from swecli.tools import syscalls
        from swecli.tools.sandbox import CANNOT_START, probe_findings

        self._now.wait(ON_THE_WIRE)
        try:
            if not self.network:  # the filter first: a spare sandbox started meanwhile runs the bwrap probe beside it
                syscalls.unavailable()
            self._found = probe_findings(self.root, network=self.network, writable=self.writable)
        except Exception as exc:  # as bwrap failing to start: commands are asked for, never run unconfined
            self._found = (CANNOT_START.format(error=f"{type(exc).__name__}: {exc}"), [])
        finally:
            self._done.set()

    def problem(self) -> str:
        """Why bwrap cannot run here ("" when it can), waited for (started now if it waits for its time);
        said once, with the filter's warning."""
        self._now.set()
        self._start()
        self._done.wait()
        problem, warnings = self._found
        with self._lock:
            said, self._said = self._said, True
        if not said:
            for text in ([problem] if problem else []) + warnings:
                self.bus(Notice("warning", text))
        return problem


MCP_SETTLE = 0.5
"""Seconds -p waits past `mcp.startup_timeout`: a server that hangs is marked failed at that deadline."""


def retry_notices(bus: EventBus) -> Callable[[RetryNotice], None]:
    """Say why nothing seems to happen while a provider waits to retry (called on the loop's thread)."""

    def announce(notice: RetryNotice) -> None:
        delay = f"{notice.delay:.1f}s" if notice.delay < 60 else f"{notice.delay / 60:.1f}min"
        bus(Notice("warning", f"{str(notice.error).rstrip('.')}; retrying in {delay} "
                              f"(attempt {notice.attempt + 1} of {notice.max_attempts})."))

    return announce


def explain_provider_error(settings: Settings, error: Exception) -> str:
    """The provider error's sentence, plus a hint when an OpenAI-compatible base URL lacks the `/v1` such
    servers serve under (the commonest cause of a 404 or of nothing answering there)."""
    from urllib.parse import urlsplit

    from swecli.llm.base import AuthError, ContextOverflowError, RateLimitError
    from swecli.models.presets import PRESETS

    text = str(error)
    preset = PRESETS.get(settings.provider)
    if (preset is None or preset.wire != "openai" or not settings.base_url
            or isinstance(error, AuthError | RateLimitError | ContextOverflowError)):
        return text
    parts = urlsplit(settings.base_url)
    if "/v1" in parts.path:
        return text
    suggested = settings.base_url.rstrip("/") + "/v1"
    return (f"{text} (hint: OpenAI-compatible servers usually answer under /v1; try --base-url {suggested})")


@datarecord
class AgentSession:
    """A running session: the agent and everything around it, closed together."""

    root: Path
    settings: Settings
    provider: Provider
    agent: Agent
    bus: EventBus
    recorder: SessionRecorder
    parts: Sequence[Subsystem] = ()
    """Its subsystems (`SUBSYSTEMS`); those that take part set the fields below."""

    playbook: Playbook | None = None
    skills: SkillCatalog | None = None
    mcp: McpCatalog | None = None
    mcp_wait: float | None = None
    """Seconds a task waits for MCP servers still starting (None: the REPL's short `mcp.repl_wait`)."""
    playbook_changes: list[str] = field(default_factory=list)
    """What reflection changed in the playbook this session, one line each (shown by /playbook)."""

    @property
    def session_id(self) -> str:
        return self.recorder.session_id

    def restore(self, loaded: LoadedSession) -> None:
        """Go on from a resumed session's history (its repeated failures too); its problems are warnings."""
        self.agent.history = list(loaded.history)
        self.agent.context.resume(self.agent.history)  # repeated failures survive a resume
        for problem in loaded.problems:
            self.bus(Notice("warning", problem))

    def reload_memory(self) -> None:
        """Load OPENCLI.md (and the rest of the memory block) again, e.g. after /init wrote it: the
        stable prefix changes once, on purpose."""
        context = self.agent.context
        context.memory = memory_blocks(self.root, self.settings, context.counter.text, self.parts)
        context.mark_rewrite("memory")

    def rescan_skills(self) -> list[Skill]:
        """Look for skills again (one added during the session: `/skills`, or a `/name` not known yet);
        returns the new ones. The model hears of them in a note appended to the conversation (the
        system prompt's list stays as it was: it is the cached prefix)."""
        if self.skills is None:
            return []
        added = self.skills.refresh()
        self.agent.tool_ctx.read_roots = tuple(s.directory for s in self.skills.skills if s.scope == "user")
        if added and "skill" in self.agent.tools:
            lines = "\n".join(f"- {s.name}: {s.description}" for s in added)
            note = f"Skills installed during this session (load one with the `skill` tool if a task matches):\n{lines}"
            self.agent.append(UserMessage(kind="context", content=note))
        return added

    def run(self, prompt: str) -> TurnFinished:
        """One user task: its `@path` attachments and just-in-time context, the loop, then reflection.

        Images the prompt names (`@shot.png`, a pasted image path) are attached to the prompt itself;
        other `@path` files and what retrieval finds go in one context message before it."""
        for part in self.parts:
            part.before_task(self)
        images = self._prompt_images(prompt)
        self._attach_named_context(prompt)
        turn = self.agent.run(UserMessage(content=prompt, images=images))
        for part in self.parts:
            part.after_task(self, turn)
        return turn

    def _prompt_images(self, prompt: str) -> tuple[ImagePart, ...]:
        """The images the prompt names, loaded and capped; each problem is one warning, nothing is lost."""
        from swecli.tools.base import ToolError
        from swecli.tools.images import image_refs, load_image, resolve_image

        images: list[ImagePart] = []
        for ref in image_refs(prompt):
            path, shown = resolve_image(self.root, ref.raw)
            if not path.is_file():
                if ref.mentioned:
                    self.bus(Notice("warning", f"@{ref.raw}: no such image file; nothing was attached."))
                continue
            if self.settings.accepts_images is False:
                self.bus(Notice("warning", f"{self.agent.provider.model} does not accept images, so {shown} was "
                                           "not attached; switch to a model that does (/model), or describe it."))
                continue
            try:
                image = load_image(path, shown, "attached by the user", self.settings.images.max_edge)
            except ToolError as exc:
                self.bus(Notice("warning", str(exc)))
                continue
            if not path.is_relative_to(self.root.resolve()):  # so its stand-in's read_file can show it again
                self.agent.tool_ctx.read_roots = (*self.agent.tool_ctx.read_roots, path)
            tokens = self.agent.context.counter.image_tokens(image.width, image.height)
            self.bus(Notice("info", f"attached image {shown} ({image.width}×{image.height}, ~{tokens:,} tokens)"))
            images.append(image)
        return tuple(images)

    def _attach_named_context(self, prompt: str) -> None:
        """One attachment path for the REPL and `-p`: `@path` files whole, then what retrieval finds."""
        from swecli.retrieval.retrieval import retrieve

        config = self.settings.context
        found = retrieve(prompt, self.root, budget_tokens=config.just_in_time_tokens,
                         count_tokens=self.agent.context.counter.text, time_limit=config.just_in_time_seconds,
                         just_in_time=config.just_in_time)
        for problem in found.problems:
            self.bus(Notice("warning", problem))
        for a in found.attachments:
            if a.kind == "file":
                note = " (truncated)" if a.truncated else ""
                self.bus(Notice("info", f"📎 {a.path} · {a.lines} lines · ~{a.tokens:,} tokens{note}"))
        message = found.message()
        if message is not None:
            self.agent.append(message)
        if config.just_in_time and (any(a.kind == "excerpt" for a in found.attachments) or found.listed
                                    or found.notes):
            self.bus(Notice("info", found.summary()))

    def drain_notices(self) -> None:
        """Announce what the subsystems saw happen since the last call (an MCP server that failed or hung)."""
        for part in self.parts:
            part.announce(self)

    def close(self) -> None:
        for part in self.parts:
            part.close()  # first: no server process outlives the session
        self.agent.context.close()  # a background summary still running is dropped (and logged)
        self.agent.tools.stand_down()  # no spare sandbox is left waiting while the process lives on
        self.recorder.close()
        self.provider.close()


def open_session(  # noqa: PLR0913 (what the REPL and -p open a session with)
    root: Path,
    settings: Settings,
    *,
    approver: Approver | None = None,
    listeners: list[Callable[[Event], None]] | None = None,
    resume: str | None = None,
    continue_latest: bool = False,
    first_prompt: str | None = None,
    probe_later: bool = False,
) -> AgentSession:
    """A new or resumed session with its transcript, log and subsystems wired to the loop's events.
    `probe_later` (-p): the sandbox is probed once the first request is out (`build_policy`).

    Raises SessionError (a one-sentence message) when there is nothing to resume.
    """
    from swecli.llm.factory import make_provider
    from swecli.memory.opencli import refused_memory_files
    from swecli.session.store import ensure_state_dir

    repaired = ensure_state_dir(root)
    bus = EventBus(list(listeners or []))
    for warning in repaired + refused_memory_files(root):
        bus(Notice("warning", warning))
    opening = Opening(root, settings, bus)
    recorder, loaded = open_recorder(opening, resume, continue_latest, first_prompt)
    opening.recorder = recorder
    parts = open_subsystems(opening)
    provider = make_provider(settings, on_retry=retry_notices(bus))
    # A background summary talks to its own provider (its own HTTP client, no retry notices from its
    # thread), for the model the session uses at the time (/model changes it).
    agent = build_agent(settings, root, provider, approver=approver, bus=bus, parts=parts,
                        summary_provider=lambda: make_provider(session.settings), probe_later=probe_later)
    bus.listeners.append(recorder.handle)
    session = AgentSession(root, settings, provider, agent, bus, recorder, parts)
    if loaded is not None:
        session.restore(loaded)
    for part in parts:
        part.attach(session)
    return session


def open_recorder(opening: Opening, resume: str | None, continue_latest: bool,
                  first_prompt: str | None) -> tuple[SessionRecorder, LoadedSession | None]:
    """The session's transcript and log: a new session's, or the resumed one's with what it held."""
    from swecli.session.recorder import SessionRecorder

    root, settings = opening.root, opening.settings
    if resume is not None or continue_latest:
        return SessionRecorder.resume(root, settings, resume or None, on_error=opening.warn)
    return SessionRecorder.start(root, settings, first_prompt=first_prompt, on_error=opening.warn), None


def _relative(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


def discover_skills(root: Path, settings: Settings, warn: Callable[[str], None]) -> SkillCatalog | None:
    """The session's skills (None when `skills.enabled` is off); each bad SKILL.md is one warning."""
    if not settings.skills.enabled:
        return None
    from swecli.skills.catalog import discover

    catalog = discover(root)
    for warning in catalog.warnings:
        warn(warning)
    return catalog
