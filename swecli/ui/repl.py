"""The interactive REPL: read a request, run the agent on it, show what happens, repeat.

Threads: the agent's loop runs on a worker thread for each request. The main thread owns the
terminal: it reads keys (Esc / Ctrl-C cancel the agent's token; other keys type a message that Enter
queues for after the turn), answers the agent's approval requests (queued by `ApprovalBridge`), and
returns to the prompt when the worker ends. Events reach the renderer (and any other listener on the
bus) directly from the worker thread.

Besides requests and slash commands, a line starting with `!` runs a shell command through the bash
tool (its sandbox, timeout and output cap apply) and puts the command and its output into the
conversation for the model's next turn, without asking the model anything. In plan mode, a finished
plan is followed by an offer to switch mode and carry it out.

The session itself (provider, agent, transcript, log, notes, resume) comes from
`swecli.assembly.open_session`. Slash commands see the REPL only as a `CommandContext` (what they may
read and do), and the input line as a `PromptHost`; neither module imports this one.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console, RenderableType
from rich.text import Text

from swecli import __version__
from swecli.config import Settings
from swecli.errors import SwecliError
from swecli.events import (
    Event,
    ModelCallFinished,
    SummarySpent,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnFinished,
)
from swecli.llm.base import Provider, ProviderError
from swecli.messages import ToolCall, Usage, UserMessage
from swecli.permissions import MODES, Decision
from swecli.records import datarecord
from swecli.tools.bash import BASH
from swecli.ui.approval import ApprovalBridge, PendingApproval, ask
from swecli.ui.commands import CommandRegistry, default_registry, is_command
from swecli.ui.keys import CTRL_C, ENTER, ESC, KeyWatcher, TypeAhead
from swecli.ui.meter import Meter, format_tokens
from swecli.ui.render import Renderer, completion_line, looks_like_diff, replay_lines

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession

    from swecli.agent import Agent
    from swecli.assembly import AgentSession, EventBus
    from swecli.skills.catalog import Skill

POLL = 0.05
"""Seconds between checks for keys and approval requests while the agent works."""
REPLAY_EXCHANGES = 3
"""Exchanges of a resumed session shown under the welcome line."""
SHELL_LINES = 200
"""Lines of a `!command`'s output printed in full; longer output shows its head and tail."""
PLAN_QUESTION = ("Plan ready. Carry it out? [a] yes, changes without asking · [d] yes, asking before each "
                 "change · [n] no, keep planning (or type what to change) ")
CARRY_OUT = "Carry out the plan above."


@datarecord
class _Turn:
    """One task run on its worker thread: its result or error, handed back to the main thread."""

    result: TurnFinished | None = None
    error: BaseException | None = None
    started: float = field(default_factory=time.monotonic)
    usage_before: Usage = field(default_factory=Usage)


@datarecord
class Repl:
    """The interactive session: the prompt, the running task and the slash commands."""

    root: Path
    settings: Settings
    console: Console = field(default_factory=lambda: Console(highlight=False))
    resume: str | None = None
    """Session ID to resume ('' for the latest), as `swecli --resume`."""
    continue_latest: bool = False
    task: str | None = None
    """The first request (`swecli "TASK"`), run before the first prompt."""

    def __post_init__(self) -> None:
        self.renderer = Renderer(self.console)
        self.commands: CommandRegistry = default_registry()
        self.session_usage = Usage()
        self.approvals = ApprovalBridge()
        self.session: AgentSession = self._open(self.resume, self.continue_latest)
        self._skill_commands()
        self._exit = False
        self._meter = self._measure()
        self.typed = TypeAhead()
        self._draft = ""
        """Text typed during the last turn without Enter: the next prompt starts with it."""

    def _open(self, resume: str | None, continue_latest: bool) -> AgentSession:
        from swecli.assembly import open_session
        from swecli.ui.headless import vocabulary_after_first_request

        # The vocabulary loads while the first request is in flight: loading holds the interpreter for a
        # moment, which must fall neither in front of the request nor on the person's typing.
        vocabulary = vocabulary_after_first_request(self.settings.model)
        return open_session(self.root, self.settings, approver=self.approvals,
                            listeners=[self.renderer, self._track, vocabulary],
                            resume=resume, continue_latest=continue_latest)

    def reopen(self, resume: str | None = None) -> None:
        """Switch to another session (`/resume ID`; '' for the latest) or, with None, a fresh one.

        The current session is closed first; the mode and the session's "always" approvals carry over.
        Raises SessionError (one sentence) when there is nothing to resume; the current session then
        stays open.
        """
        policy = self.agent.policy
        session = self._open(resume, continue_latest=False)
        session.agent.policy.mode = policy.mode
        session.agent.policy.always_tools |= policy.always_tools
        session.agent.policy.always_commands |= policy.always_commands
        old, self.session = self.session, session
        old.close()
        self._skill_commands()
        self.refresh_meter()

    def _skill_commands(self) -> None:
        from swecli.ui.commands.skills import register_skill_commands

        register_skill_commands(self.commands, self.session.skills)

    @property
    def agent(self) -> Agent:
        return self.session.agent

    @property
    def provider(self) -> Provider:
        return self.session.provider

    @property
    def bus(self) -> EventBus:
        return self.session.bus

    # -- state the commands and the toolbar use -----------------------------------------------------
    @property
    def mode(self) -> str:
        return self.agent.policy.mode

    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
        self._set_mode(mode)
        self.print(Text(f"Mode: {mode}", style="bold"))

    def cycle_mode(self) -> None:
        """Shift-Tab: the next mode, silently (the toolbar shows it)."""
        self._set_mode(MODES[(MODES.index(self.mode) + 1) % len(MODES)])

    def _set_mode(self, mode: str) -> None:
        self.agent.policy.mode = mode
        self.settings = self.settings.model_copy(update={"mode": mode})

    def clear(self) -> None:
        """A new conversation with the same settings, mode and session approvals, on a clear screen."""
        self.agent.replace_history([], "clear")
        self.agent.tools.stand_down()  # the next request starts what the next call needs again
        self.refresh_meter()
        self.console.clear()
        self.print(Text("Started a new conversation.", style="dim"))

    def switch_model(self, name: str) -> None:
        from swecli.assembly import retry_notices
        from swecli.llm.factory import make_provider
        from swecli.llm.window import resolve_window

        settings = resolve_window(self.settings.model_copy(update={"model": name}))
        try:
            provider = make_provider(settings, on_retry=retry_notices(self.bus))
        except SwecliError as exc:
            self.print(Text(f"Could not switch to {name}: {exc}", style="red"))
            return
        old = self.session.provider
        self.session.provider = self.agent.provider = provider
        self.session.settings = self.settings = settings
        self.agent.context.use_model(name, settings.context_window, settings.window_source)  # window, tokenizer
        self.agent.tool_ctx.images = settings.accepts_images is not False
        old.close()
        self.refresh_meter()
        self.print(Text(f"Model: {name} (context window {format_tokens(settings.context_window)})"))

    def context_meter(self) -> Meter:
        """The toolbar's numbers (read on every keystroke, so computed once per prompt)."""
        return self._meter

    def refresh_meter(self) -> None:
        self._meter = self._measure()

    def _measure(self) -> Meter:
        """The one place the meter's numbers come from: the context engine's count of the next request."""
        state = self.agent.context.state(self.agent.history)
        window = state.budget.window
        return Meter(state.total, window, state.budget.limit / window if window else 1.0)

    def request_exit(self) -> None:
        self._exit = True

    def print(self, renderable: RenderableType = "") -> None:
        self.renderer.print(renderable)

    def warn(self, text: str) -> None:
        self.print(Text(f"⚠ {text}", style="yellow"))

    def _track(self, event: Event) -> None:
        """Session totals for /tokens (across /clear, unlike the agent's own count)."""
        if isinstance(event, ModelCallFinished | SummarySpent):  # summary requests are spend too
            self.session_usage = self.session_usage + event.usage

    # -- the loop -----------------------------------------------------------------------------------
    def run(self) -> int:
        self._welcome()
        session = self._session()
        armed = False  # Ctrl-C pressed once on an empty prompt
        try:
            if self.task:
                self.print(Text(f"❯ {self.task}", style="bold"))
                self.submit(self.task)
            while not self._exit:
                self.session.drain_notices()  # an MCP server that failed while the prompt was idle
                self.refresh_meter()
                if session is not None:  # a background summary that ends redraws the toolbar (thread-safe)
                    self.agent.context.on_background_done = session.app.invalidate
                draft, self._draft = self._draft, ""
                try:
                    text = session.prompt(default=draft) if session is not None else input("> ")
                except KeyboardInterrupt:
                    if armed:
                        break
                    armed = True
                    self.print(Text("Press Ctrl-C again to exit (or Ctrl-D).", style="dim"))
                    continue
                except EOFError:
                    break
                armed = False
                self.submit(text)
        finally:
            self._farewell()
            self.close()
        return 0

    def _farewell(self) -> None:
        """The session id and the command that comes back to it (when anything was said)."""
        if self.session.recorder.transcript.started:
            sid = self.session.session_id
            self.print(Text(f"Session {sid} · resume it with: swecli --resume {sid}", style="dim"))

    def _session(self) -> PromptSession[str] | None:
        import sys

        if not sys.stdin.isatty():
            return None  # piped input: plain lines, no editing
        from swecli.ui.input import build_session

        return build_session(self)

    def _welcome(self) -> None:
        line = Text("swecli ", style="bold")
        line.append(__version__, style="dim")
        line.append(f" · {self.settings.provider or 'auto'}/{self.settings.model} · {self.mode} mode · {self.root}")
        self.print(line)
        if self.resume is not None or self.continue_latest:
            self.print(Text(f"Resumed session {self.session.session_id} · {len(self.agent.history)} messages",
                            style="dim"))
            for line in replay_lines(self.agent.history, REPLAY_EXCHANGES, max(40, self.console.width - 4)):
                self.print(line)
        self.print(Text("/help for commands · @path attaches a file · esc interrupts · ctrl-d exits", style="dim"))

    def close(self) -> None:
        self.approvals.close()
        self.session.close()

    def submit(self, text: str) -> None:
        """One line from the prompt: a slash command, a `!command`, or a request for the agent; then
        the messages typed while it ran, in order."""
        if not text.strip():
            return
        if is_command(text):
            try:
                self._find_new_skill(text)
                self.commands.dispatch(self, text)
            except Exception as exc:  # a broken command must not take the session down
                self.print(Text(f"/{text.split()[0].lstrip('/')} failed: {type(exc).__name__}: {exc}", style="red"))
        elif text.lstrip().startswith("!"):
            self.run_shell(text.lstrip()[1:].strip())
        else:
            turn = self.run_task(text)
            if turn is not None and not self.typed.queued and not self._draft:
                self._offer_plan(turn)
        self._send_queued()

    def _find_new_skill(self, text: str) -> None:
        """A `/name` no command has yet may be a skill installed since the session began: look again."""
        from swecli.ui.commands.skills import rescan

        name = text.strip().split()[0].lstrip("/")
        if self.commands.get(name) is None and self.session.skills is not None:
            rescan(self)

    def _send_queued(self) -> None:
        queued = self.typed.take()
        if not queued:
            return
        if self.agent.cancel.cancelled:  # interrupted: hand them back for editing rather than sending them
            self._draft = "\n".join([*queued, self._draft]).strip()
            return
        first, self.typed.queued = queued[0], queued[1:]  # the rest stay queued (and shown) meanwhile
        self.print(Text(f"❯ {first}", style="bold"))
        self.submit(first)

    def _offer_plan(self, turn: TurnFinished) -> None:
        """Plan mode: once a plan is ready, offer to switch mode and carry it out (Claude Code's exit
        from plan mode)."""
        import sys

        if self.mode != "plan" or turn.stop_reason != "done" or not turn.answer.strip() or not sys.stdin.isatty():
            return  # (piped input: the next line is the person's next request, not an answer to this)
        key = self._read_one_key(PLAN_QUESTION)
        mode = {"a": "auto", "d": "default"}.get(key.lower())
        if mode is None:
            self.print(Text("no", style="yellow"))
            if len(key) == 1 and key.isprintable() and key.lower() != "n":
                self._draft = key  # the start of what to change: the next prompt goes on from it
            self.print(Text("Still in plan mode; say what to change, or switch with /mode.", style="dim"))
            return
        self.print(Text("yes", style="green"))
        self.set_mode(mode)
        self.print(Text(f"❯ {CARRY_OUT}", style="bold"))
        self.run_task(CARRY_OUT)

    def run_shell(self, command: str) -> None:
        """`!command`: run it with the bash tool (sandbox, timeout and output cap included), show the
        output, and append the command and output to the conversation as context for the next turn."""
        if not command:
            self.print(Text("Type a shell command after !, e.g. !git status", style="dim"))
            return
        call = ToolCall(id=f"user-shell-{secrets.token_hex(6)}", name=BASH.name,
                        arguments=json.dumps({"command": command}))
        self.session.recorder.handle(ToolStarted(call, {"command": command}))
        self.agent.cancel.reset()
        outcome: list[ToolFinished] = []
        started = time.monotonic()
        # The sandbox the current mode gives bash (you typed the command: no approval, no escalation).
        ctx = replace(self.agent.tool_ctx, sandbox=self.agent.policy.confinement, escalate=None,
                      on_output=lambda text: self.bus(ToolOutput(call, text)))

        def work() -> None:
            result = self.agent.tools.run(call, ctx)
            outcome.append(ToolFinished(call, result, time.monotonic() - started))

        worker = threading.Thread(target=work, name="swecli-shell", daemon=True)
        self.renderer.begin_turn(f"Running !{command[:40]}")
        try:
            worker.start()
            self._supervise(worker)
        finally:
            self.renderer.end_turn()
        if not outcome:
            return
        finished = outcome[0]
        self.session.recorder.handle(finished)  # the log, and the notes' record of changed files
        content = self.agent.context.tool_content(call, finished.result)
        self._print_shell_output(finished.result.content, finished.result.summary)
        self.agent.append(UserMessage(kind="context", content=(
            f"The user ran a shell command in the project root (with `!` in swecli):\n$ {command}\n{content}")))
        self.refresh_meter()

    def _print_shell_output(self, content: str, summary: str) -> None:
        lines = content.splitlines()
        if lines and lines[-1].startswith("exit code "):
            lines.pop()  # the summary line says it
        if len(lines) > SHELL_LINES:
            half = SHELL_LINES // 2
            lines = [*lines[:half], f"… {len(lines) - SHELL_LINES:,} lines not shown …", *lines[-half:]]
        self.print(Text("\n".join(lines)))
        self.print(Text(f"⎿  {summary}", style="dim"))

    def run_skill(self, skill: Skill, request: str) -> TurnFinished | None:
        """`/skill-name [request]`: the skill's instructions go into the conversation, then the request runs."""
        from swecli.skills.catalog import SkillError
        from swecli.skills.loading import skill_command

        try:
            message, task = skill_command(skill, self.root, request)
        except SkillError as exc:
            self.warn(f"/{skill.name}: {exc}")
            return None
        self.print(Text(f"📘 loaded skill {skill.name} ({skill.path})", style="dim"))
        return self.run_task(task, preface=(message,))

    def run_task(self, text: str, preface: Sequence[UserMessage] = ()) -> TurnFinished | None:
        """Run one request; `preface` messages (a loaded skill) go into the history just before it. `@path`
        files are attached by the session (swecli.retrieval.retrieval), the same way as with -p."""
        turn = _Turn(usage_before=self.agent.usage)
        worker = threading.Thread(target=self._work, args=(text, tuple(preface), turn), name="swecli-agent",
                                  daemon=True)
        self.renderer.begin_turn()
        worker.start()
        self._supervise(worker)
        self.renderer.end_turn()
        if turn.error is not None:
            self._report(turn)
        return turn.result

    def _work(self, prompt: str, context: Sequence[UserMessage], turn: _Turn) -> None:
        try:
            for message in context:
                self.agent.append(message)
            turn.result = self.session.run(prompt)
        except BaseException as exc:  # reported by the main thread; the session goes on
            turn.error = exc
            self.agent.close_open_calls()

    def _report(self, turn: _Turn) -> None:
        error = turn.error
        assert error is not None
        if isinstance(error, ProviderError):
            from swecli.assembly import explain_provider_error

            self.print(Text(f"✗ {explain_provider_error(self.settings, error)}", style="red"))
        else:
            detail = "".join(traceback.format_exception(error)).rstrip()
            self.print(Text(f"✗ internal error: {type(error).__name__}: {error}", style="red"))
            self.print(Text(detail, style="dim"))
        spent = self.agent.usage - turn.usage_before  # what the turn cost before it failed, and how long it took
        self.print(completion_line(TurnFinished("", 0, spent, time.monotonic() - turn.started, "error", str(error))))

    # -- while the agent works ----------------------------------------------------------------------
    def _supervise(self, worker: threading.Thread) -> None:
        """Wait for the worker while answering approvals, watching for Esc / Ctrl-C, and taking typed
        messages for after the turn."""
        keys = KeyWatcher.for_stream()
        self._keys = keys
        self.renderer.show_typing(self.typed.line, self.typed.queued)
        try:
            if keys is not None:
                keys.start()
            while worker.is_alive():
                try:
                    self._poll(worker, keys)
                except KeyboardInterrupt:  # no key watcher (not a terminal): SIGINT still interrupts
                    self._interrupt()
        finally:
            if keys is not None:
                while (key := keys.read_key(0)) is not None:  # typed as the turn ended
                    if key not in (ESC, CTRL_C):
                        self.typed.feed(key)
                keys.stop()
            self._keys = None
            if self.typed.line:
                self._draft = (self._draft + self.typed.line).strip()
                self.typed.line = ""
            self.renderer.show_typing("", [])

    def _poll(self, worker: threading.Thread, keys: KeyWatcher | None) -> None:
        pending = self.approvals.next()
        if pending is not None:
            self._answer(pending, keys)
            return
        if keys is None:
            worker.join(POLL)
            return
        key = keys.read_key(POLL)
        if key in (ESC, CTRL_C):
            self._interrupt()
        elif key:
            self.typed.feed(key)
            self.renderer.show_typing(self.typed.line, self.typed.queued)

    def _interrupt(self) -> None:
        if not self.agent.cancel.cancelled:
            self.agent.cancel.cancel()
            self.renderer.mark_interrupting()

    def _answer(self, pending: PendingApproval, keys: KeyWatcher | None) -> None:
        self.renderer.pause()
        try:
            answer = ask(pending.request, self.console, lambda: self._read_key(keys),
                         lambda prompt: self._read_line(prompt, keys), self.typed if keys is not None else None)
        except BaseException:
            pending.answer(_declined())
            raise
        if answer.decision.verdict != "no" and looks_like_diff(pending.request.preview):
            self.renderer.note_diff_shown(pending.request.call.id)
        pending.answer(answer.decision)
        if answer.interrupt:
            self._interrupt()
        self.renderer.resume()

    def confirm(self, question: str) -> bool:
        """A yes/no question from a slash command (main thread, between turns)."""
        try:
            return self._read_line(f"{question} [y/N] ", None).strip().lower().startswith("y")
        except (EOFError, KeyboardInterrupt):
            return False

    def _read_key(self, keys: KeyWatcher | None) -> str | None:
        if keys is None:
            return input()
        key = None
        while key is None:
            key = keys.read_key(1.0)
        return key

    def _read_one_key(self, prompt: str) -> str:
        """One key, as `Allow?` takes its answer: the key's text, or "" for Esc, Ctrl-C, Enter or an
        arrow (or a line's first character where the input is not a terminal)."""
        self.console.print(Text(prompt, style="bold"), end="")
        keys = KeyWatcher.for_stream()
        if keys is None:
            try:
                return input().strip()[:1]
            except (EOFError, KeyboardInterrupt):
                return ""
        with keys:
            key = ""
            while not key:  # an arrow or function key is no answer
                key = self._read_key(keys) or ""
        return "" if key in (ESC, CTRL_C, ENTER) else key[:1]

    def _read_line(self, prompt: str, keys: KeyWatcher | None) -> str:
        self.console.print(Text(prompt, style="bold"), end="")
        if keys is None:
            return input()
        with keys.paused():
            return input()


def _declined() -> Decision:
    return Decision("no", "the approval prompt failed")


def run_repl(root: Path, settings: Settings, *, resume: str | None = None, continue_latest: bool = False,
             task: str | None = None) -> int:
    """The `swecli` command without -p: run the REPL in `root` until the user leaves (`task`, from
    `swecli "TASK"`, is its first request).

    ConfigError and SessionError (nothing to resume) propagate: the runner prints them as one line.
    """
    repl = Repl(root, settings, resume=resume, continue_latest=continue_latest, task=task)
    return repl.run()
