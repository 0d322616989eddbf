"""Assembly: settings + project root -> a ready agent session. Shared by the REPL and headless mode.

    session = open_session(root, settings, approver=..., listeners=[renderer])
    session.run("task")        # just-in-time context, the agent loop, then reflection
    session.close()

`build_agent` wires one `Agent` (provider, tools, context engine, policy); `open_session` adds the
transcript, log and notes, resume, and the playbook around it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swecli.agent import Agent
from swecli.config import Settings
from swecli.context.manager import ContextManager
from swecli.context.todo import TodoState, todo_tool
from swecli.events import Event, Notice, TurnFinished
from swecli.llm.base import CancelToken, Provider
from swecli.llm.thinking import Thinking
from swecli.memory.playbook import Playbook
from swecli.memory.reflector import Reflector
from swecli.messages import ImagePart, SystemBlock, UserMessage
from swecli.permissions import Approver, Policy
from swecli.tools.base import Tool, ToolContext, ToolRegistry

if TYPE_CHECKING:
    from swecli.delegation.definitions import AgentDefinition
    from swecli.delegation.runner import Spawn
    from swecli.llm.retry import RetryNotice
    from swecli.mcp.catalog import McpCatalog
    from swecli.session.recorder import SessionRecorder
    from swecli.skills.catalog import SkillCatalog


def system_prompt() -> str:
    return resources.files("swecli").joinpath("prompts/system.md").read_text(encoding="utf-8")


def system_blocks(root: Path) -> tuple[SystemBlock, ...]:
    """The stable prefix: persona and rules. Nothing here may change from turn to turn (no
    timestamps, no counters): it is the part of every request the provider's prompt cache reuses."""
    return (SystemBlock(text=system_prompt() + f"\nThe project root is {root}.", cache=True),)


def memory_blocks(root: Path, settings: Settings, count: Callable[[str], int],
                  playbook: Playbook | None = None, skills: SkillCatalog | None = None,
                  session_id: str = "") -> tuple[SystemBlock, ...]:
    """Session-stable memory, loaded once at session start: OPENCLI.md (AGENTS.md, CLAUDE.md), the
    session notes (this session's when resumed, else the previous session's, labelled as such), the
    learned playbook and the skills catalog (names and descriptions only). One block, one cache
    breakpoint; it changes only when a session starts (or /init writes OPENCLI.md)."""
    from swecli.memory.notes import notes_prompt
    from swecli.memory.opencli import load_memory_prompt

    parts = [load_memory_prompt(root, settings.memory.memory_budget_tokens, count)]
    if settings.memory.session_notes and session_id:
        parts.append(notes_prompt(root, session_id, settings.memory.notes_budget_tokens, count))
    if playbook is not None:
        parts.append(playbook.as_context(settings.memory.playbook_budget_tokens, count))
    if settings.context.repo_map_tokens:
        parts.append(repo_map_prompt(root, settings.context.repo_map_tokens, count))
    if skills:
        from swecli.skills.catalog import catalog_prompt

        parts.append(catalog_prompt(skills, settings.skills.catalog_tokens, count))
    text = "\n\n".join(p for p in parts if p.strip())
    return (SystemBlock(text=text, cache=True),) if text else ()


def repo_map_prompt(root: Path, budget: int, count: Callable[[str], int], wait: float = 10.0) -> str:
    """The ranked repository map for the memory block, computed once per session so the prefix stays put."""
    from swecli.repomap.repomap import background
    from swecli.repomap.views import memory_section

    rmap = background(root).wait(wait)
    return memory_section(rmap, budget, count) if rmap is not None else ""


@dataclass
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
    from swecli.repomap.tool import REPO_MAP
    from swecli.tools.builtin import default_tools

    return ToolRegistry([*default_tools(), REPO_MAP, *(extra or [])])


ProviderFor = Callable[[str], Provider]
"""model name -> a new provider instance for it (a sub-agent's own client)."""


def build_agent(
    settings: Settings,
    root: Path,
    provider: Provider,
    *,
    approver: Approver | None = None,
    bus: EventBus | None = None,
    extra_tools: list[Tool[Any]] | None = None,
    playbook: Playbook | None = None,
    skills: SkillCatalog | None = None,
    provider_for: ProviderFor | None = None,
    transcript_for: Callable[[str], str] | None = None,
    session_id: str = "",
) -> Agent:
    """One agent with its tools, context engine and policy.

    `skills`: the session's skill catalog (`swecli.skills.catalog.discover`); with skills, the agent
    gets the `skill` tool, the catalog in its memory block, and compaction keeps loaded skills.
    With `subagents.enabled` it also gets the `task` tool; each sub-agent gets its own provider from
    `provider_for` (default: `make_provider` for these settings and the model asked for), and
    `transcript_for(call_id)` names where the recorder writes a sub-agent's transcript.
    """
    bus = bus or EventBus()
    todo = TodoState()  # shared by the todo tool and the recitation in the dynamic tail
    extra = [todo_tool(todo), *(extra_tools or [])]
    if skills:
        from swecli.skills.loading import skill_tool

        extra.append(skill_tool(skills))
    tool_ctx = ToolContext(root=root, bash_timeout=settings.tools.bash_timeout,
                           max_output_chars=settings.tools.max_output_chars,
                           images=settings.accepts_images is not False, image_max_edge=settings.images.max_edge)
    policy = build_policy(settings, root, approver, bus)
    holder: list[Agent] = []  # the agent, once built: sub-agents follow its current model
    if settings.subagents.enabled:
        base = build_tools(extra)
        extra.append(_task_tool(settings, root, base, tool_ctx, policy, bus, holder, provider_for, transcript_for))
    tools = build_tools(extra)
    context = ContextManager.from_settings(settings, system=system_blocks(root), tools=tools.schemas(), root=root,
                                           on_event=bus, todo=todo)
    context.memory = memory_blocks(root, settings, context.counter.text, playbook, skills, session_id)
    if skills:
        from swecli.skills.loading import pin_skills

        context.pin = pin_skills
        tool_ctx.read_roots = tuple(s.directory for s in skills.skills if s.scope == "user")
    context.cancel = tool_ctx.cancel  # Esc also stops a summary request
    agent = Agent(provider=provider, tools=tools, context=context, tool_ctx=tool_ctx, policy=policy, on_event=bus,
                  max_iterations=settings.max_iterations, max_parallel=settings.subagents.parallel,
                  thinking=Thinking.parse(settings.thinking))
    holder.append(agent)
    return agent


# --- sub-agents ------------------------------------------------------------------------------------

CHILD_EXCLUDED = frozenset({"task", "skill", "todo", "notes"})
"""Never given to a sub-agent: no recursion, and no writing to the parent's todo list or notes."""


def _task_tool(settings: Settings, root: Path, base: ToolRegistry, tool_ctx: ToolContext, policy: Policy,
               bus: EventBus, holder: list[Agent], provider_for: ProviderFor | None,
               transcript_for: Callable[[str], str] | None) -> Tool[Any]:
    from swecli.delegation.definitions import load_agents
    from swecli.delegation.runner import Delegator
    from swecli.delegation.task import task_tool

    agents = load_agents(root, trusted=settings.project_trusted)
    for warning in agents.warnings:
        bus(Notice("warning", warning))

    def count(text: str) -> int:
        return holder[0].context.counter.text(text) if holder else len(text) // 4

    spawn = child_spawner(settings, root, base, tool_ctx, policy, holder, provider_for or _provider_for(settings))
    delegator = Delegator(agents, spawn, tool_ctx.cancel, bus, settings.subagents, count,
                          transcript_for or (lambda call_id: ""))
    return task_tool(delegator)


def _provider_for(settings: Settings) -> ProviderFor:
    def make(model: str) -> Provider:
        from swecli.llm.factory import make_provider

        return make_provider(settings.model_copy(update={"model": model}))

    return make


def child_tools(base: ToolRegistry, agent: AgentDefinition) -> tuple[ToolRegistry, list[str]]:
    """(the sub-agent's tools, names in its definition that are not tools here)."""
    from swecli.delegation.definitions import TOOL_ALIASES

    if agent.tools is None:
        chosen = [t for n in base.names() if (t := base.get(n)) is not None and not t.mutating]
        return ToolRegistry([t for t in chosen if t.name not in CHILD_EXCLUDED]), []
    wanted = [TOOL_ALIASES.get(name, name) for name in agent.tools]
    unknown = [name for name in wanted if name not in base or name in CHILD_EXCLUDED]
    return ToolRegistry([t for n in wanted if n not in unknown and (t := base.get(n)) is not None]), unknown


def child_spawner(settings: Settings, root: Path, base: ToolRegistry, tool_ctx: ToolContext, policy: Policy,
                  holder: list[Agent], provider_for: ProviderFor) -> Spawn:
    """Builds a sub-agent: the same loop, tools, policy (mode, approvals, guard) and tool context
    (root, sandbox) as the parent; a fresh context; its own provider, cancel token and step budget."""
    from swecli.memory.opencli import load_memory_prompt

    def spawn(agent: AgentDefinition, cancel: CancelToken, on_event: Callable[[Event], None]) -> Agent:
        tools, unknown = child_tools(base, agent)
        if unknown:
            on_event(Notice("warning", f"sub-agent {agent.name}: no tool named {', '.join(unknown)}; ignored"))
        model = agent.model or (holder[0].provider.model if holder else settings.model)
        child_settings = settings.model_copy(update={"model": model})
        system = (SystemBlock(text=f"{agent.prompt}\nThe project root is {root}.", cache=True),)
        context = ContextManager.from_settings(child_settings, system=system, tools=tools.schemas(), root=root,
                                               on_event=on_event)
        memory = load_memory_prompt(root, settings.memory.memory_budget_tokens, context.counter.text)
        context.memory = (SystemBlock(text=memory, cache=True),) if memory else ()
        context.cancel = cancel
        writes = any(t.mutating for n in tools.names() if (t := tools.get(n)) is not None)
        # Writing tools go through the parent's own policy: its mode decides, its approvals apply.
        child_policy = policy if writes else Policy(mode="plan")
        # A sub-agent thinks as the parent does now (`/thinking` may have changed it since the start).
        thinking = holder[0].thinking if holder else Thinking.parse(settings.thinking)
        return Agent(provider=provider_for(model), tools=tools, context=context,
                     tool_ctx=replace(tool_ctx, cancel=cancel), policy=child_policy, on_event=on_event,
                     max_iterations=settings.subagents.max_iterations, thinking=thinking)

    return spawn


def build_policy(settings: Settings, root: Path, approver: Approver | None, bus: EventBus) -> Policy:
    """The approval policy with the configured sandbox; says once (per session) why the sandbox
    cannot run here, and which writable paths do not exist."""
    from swecli.tools.sandbox import from_settings

    sandbox, problem, warnings = from_settings(settings.sandbox, root)
    for text in ([problem] if problem else []) + warnings:
        bus(Notice("warning", text))
    return Policy(mode=settings.mode, approver=approver, sandbox=sandbox, sandbox_problem=problem)


def start_mcp(settings: Settings, root: Path, agent: Agent) -> McpCatalog | None:
    """Start the configured MCP servers in the background (never waiting for them); their tools reach
    the loop through the registry's source, loaded or deferred within `mcp.schema_budget`."""
    if not settings.mcp.servers:
        return None
    from swecli.context.tokens import TOOL_SCHEMA_OVERHEAD, serialize_tool
    from swecli.mcp.catalog import McpCatalog
    from swecli.mcp.manager import McpManager

    cfg, context = settings.mcp, agent.context
    manager = McpManager(cfg.servers, root, cfg.startup_timeout, cfg.tool_timeout).start()
    catalog = McpCatalog(manager, budget=lambda: cfg.budget_tokens(context.window),
                         count=lambda schema: TOOL_SCHEMA_OVERHEAD + context.counter.text(serialize_tool(schema)))
    agent.tools.source = catalog
    return catalog


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
    from swecli.llm.presets import PRESETS

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
    skills: SkillCatalog | None = None
    mcp: McpCatalog | None = None
    playbook_changes: list[str] = field(default_factory=list)
    """What reflection changed in the playbook this session, one line each (shown by /playbook)."""

    @property
    def session_id(self) -> str:
        return self.recorder.session_id

    def reload_memory(self) -> None:
        """Load OPENCLI.md (and the rest of the memory block) again, e.g. after /init wrote it: the
        stable prefix changes once, on purpose."""
        context = self.agent.context
        context.memory = memory_blocks(self.root, self.settings, context.counter.text, self.playbook, self.skills,
                                       self.session_id)
        context.mark_rewrite("memory")

    def run(self, prompt: str) -> TurnFinished:
        """One user task: its `@path` attachments and just-in-time context, the loop, then reflection.

        Images the prompt names (`@shot.png`, a pasted image path) are attached to the prompt itself;
        other `@path` files and what retrieval finds go in one context message before it."""
        self._await_mcp()
        images = self._prompt_images(prompt)
        self._attach_named_context(prompt)
        turn = self.agent.run(UserMessage(content=prompt, images=images))
        self.drain_notices()
        if turn.stop_reason == "done" and self.reflector is not None:
            reflection = self.reflector.reflect(self.agent.history, turn.answer, self.agent.cancel)
            if reflection.changes:
                # Bookkeeping, not news: the log and /playbook have it, the turn's output does not.
                self.recorder.record("reflection", summary=reflection.summary())
                self.playbook_changes += [f"{c.action}: {c.bullet.content}" for c in reflection.changes]
            for warning in reflection.warnings:
                self.bus(Notice("warning", warning))
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
        from swecli.context.retrieval import retrieve

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

    def _await_mcp(self) -> None:
        """Servers still starting when a task begins get a short grace (Esc skips it); later ones join
        between requests."""
        if self.mcp is not None and (starting := self.mcp.manager.starting()):
            from swecli.mcp.manager import START_GRACE

            self.bus(Notice("info", f"waiting up to {START_GRACE:g}s for MCP server(s) {', '.join(starting)}"))
            self.mcp.manager.wait_started(START_GRACE, self.agent.cancel)
        self.drain_notices()

    def drain_notices(self) -> None:
        """Announce MCP servers that failed or hung since the last call (once each)."""
        if self.mcp is not None:
            for level, text in self.mcp.manager.take_notices():
                self.bus(Notice(level, text))

    def close(self) -> None:
        if self.mcp is not None:
            self.mcp.manager.close()  # first: no server process outlives the session
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
    from swecli.session.store import ensure_state_dir

    ensure_state_dir(root)
    bus = EventBus(list(listeners or []))
    if settings.context.just_in_time or settings.context.repo_map_tokens:
        from swecli.repomap.repomap import background

        background(root)  # warm the repository map while the person types

    def warn(text: str) -> None:
        bus(Notice("warning", text))

    if resume is not None or continue_latest:
        recorder, loaded = SessionRecorder.resume(root, settings, resume or None, on_error=warn)
    else:
        recorder, loaded = SessionRecorder.start(root, settings, first_prompt=first_prompt, on_error=warn), None
    if settings.memory.session_notes:
        recorder.attach("notes", NotesUpdater(root, recorder.session_id, resumed=recorder.resumed,
                                              redactor=recorder.redactor).handle)
    provider = make_provider(settings, on_retry=retry_notices(bus))
    extra = [notes_tool(recorder.session_id, redactor=recorder.redactor)] if settings.memory.session_notes else []
    playbook = Playbook.for_project(root) if settings.context.playbook else None
    skills = discover_skills(root, settings, warn)
    agent = build_agent(settings, root, provider, approver=approver, bus=bus, extra_tools=extra, playbook=playbook,
                        skills=skills, session_id=recorder.session_id,
                        transcript_for=lambda call_id: _relative(recorder.child_transcript(call_id), root))
    bus.listeners.append(recorder.handle)
    if loaded is not None:
        agent.history = list(loaded.history)
        if agent.context.mechanisms is not None:
            agent.context.mechanisms.failures.replay(agent.history)  # repeated failures survive a resume
        for problem in loaded.problems:
            warn(problem)
    catalog = start_mcp(settings, root, agent)
    reflector = None
    if playbook is not None:
        for problem in playbook.warnings:
            warn(problem)
        reflector = Reflector(playbook, provider, use_llm=settings.memory.reflect_with_llm)
    session = AgentSession(root, settings, provider, agent, bus, recorder, playbook, reflector, skills, catalog)
    # A background summary talks to its own provider (its own HTTP client, no retry notices from its
    # thread), for the model the session uses at the time (/model changes it).
    agent.context.summary_provider = lambda: make_provider(session.settings)
    return session


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
