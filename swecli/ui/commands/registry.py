"""The slash-command registry the REPL dispatches to.

A command is a name, one line of help, a handler `(ctx, args) -> None` and, optionally, a
completer for its argument `(ctx, typed) -> candidates`. A family module declares its commands by
decorating the handlers:

    commands = Family()

    @commands.command("compact", "Compact the conversation now", usage="/compact [focus instructions]")
    def compact(ctx: CommandContext, args: str) -> None: ...

A handler gets a `CommandContext`: the session it acts on (`ctx.session.agent`, `.provider`, `.bus`,
`.mcp`, ...) and the few things only the REPL can do between turns (print, ask yes or no, switch the mode,
the model or the session, leave). It never sees the REPL object itself, so commands and the REPL do not
import each other, and a test can drive a command with any object of that shape.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rich.console import RenderableType
from rich.text import Text

from swecli.records import datarecord

if TYPE_CHECKING:
    from swecli.assembly import AgentSession
    from swecli.config import Settings
    from swecli.messages import Usage
    from swecli.skills.catalog import Skill


class CommandContext(Protocol):
    """What a slash command may read and do (the REPL is one; tests pass their own)."""

    @property
    def root(self) -> Path: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def session(self) -> AgentSession:
        """The session the command acts on: its agent, provider, bus, MCP servers, skills, playbook."""
        ...

    @property
    def commands(self) -> CommandRegistry: ...

    @property
    def session_usage(self) -> Usage:
        """What the session spent so far (across /clear)."""
        ...

    @property
    def mode(self) -> str: ...

    def print(self, renderable: RenderableType = "") -> None: ...

    def confirm(self, question: str) -> bool:
        """A yes/no question on the terminal (False when no one answers)."""
        ...

    def set_mode(self, mode: str) -> None: ...

    def switch_model(self, name: str) -> None: ...

    def clear(self) -> None:
        """A new conversation with the same settings."""
        ...

    def reopen(self, resume: str | None = None) -> None:
        """Switch to another session (SessionError when there is none to resume)."""
        ...

    def request_exit(self) -> None: ...

    def refresh_meter(self) -> None:
        """Recount the context for the toolbar (after a command changed it)."""
        ...

    def run_skill(self, skill: Skill, request: str) -> object:
        """Load a skill's instructions and run the request with them (a turn of the loop)."""
        ...


Handler = Callable[["CommandContext", str], None]
ArgCompleter = Callable[["CommandContext", str], Iterable[str]]

COMMAND_LINE = re.compile(r"^/([A-Za-z][\w-]*)(?:\s+(.*))?$", re.DOTALL)


@datarecord(frozen=True)
class Command:
    """One slash command."""

    name: str
    """Without the slash: `mode` is typed `/mode`."""
    help: str
    handler: Handler
    usage: str = ""
    """How to call it, e.g. `/mode [default|auto|plan]` (defaults to `/name`)."""
    complete: ArgCompleter | None = None
    """Candidates for the argument, given what has been typed of it so far."""
    aliases: tuple[str, ...] = ()

    @property
    def signature(self) -> str:
        return self.usage or f"/{self.name}"


class CommandRegistry:
    def __init__(self, commands: Iterable[Command] = ()) -> None:
        self._commands: dict[str, Command] = {}
        self._aliases: dict[str, str] = {}
        for command in commands:
            self.register(command)

    def register(self, command: Command, *, replace: bool = False) -> None:
        """Add a command; `replace=True` swaps out an existing one of the same name."""
        if not re.fullmatch(r"[A-Za-z][\w-]*", command.name):
            raise ValueError(f"command name {command.name!r} must be a word (letters, digits, - or _)")
        taken = [n for n in (command.name, *command.aliases) if n in self._commands or n in self._aliases]
        if taken and not replace:
            raise ValueError(f"/{taken[0]} is already registered; pass replace=True to override it")
        if replace:
            self._forget(command.name)
        self._commands[command.name] = command
        for alias in command.aliases:
            self._aliases[alias] = command.name

    def unregister(self, name: str) -> None:
        """Remove a command (and its aliases); nothing happens when there is none of that name."""
        self._forget(name)

    def _forget(self, name: str) -> None:
        old = self._commands.pop(name, None)
        for alias in old.aliases if old else ():
            self._aliases.pop(alias, None)

    def get(self, name: str) -> Command | None:
        name = name.lstrip("/")
        return self._commands.get(self._aliases.get(name, name))

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def commands(self) -> list[Command]:
        return [self._commands[n] for n in sorted(self._commands)]

    def names(self) -> list[str]:
        return sorted([*self._commands, *self._aliases])

    def suggest(self, name: str) -> str | None:
        """The closest known command to a mistyped one (difflib), or None."""
        close = difflib.get_close_matches(name.lstrip("/"), self.names(), n=1, cutoff=0.5)
        return close[0] if close else None

    def dispatch(self, ctx: CommandContext, line: str) -> bool:
        """Run the command on `line`; False (after saying so) when it names no known command."""
        match = COMMAND_LINE.match(line.strip())
        if not match:
            ctx.print(Text(f"Not a command: {line.strip()!r}. Commands look like /help.", style="red"))
            return False
        name, args = match.group(1), (match.group(2) or "").strip()
        command = self.get(name)
        if command is None:
            hint = self.suggest(name)
            message = f"Unknown command /{name}." + (f" Did you mean /{hint}?" if hint else "") + \
                " Type /help for the list."
            ctx.print(Text(message, style="red"))
            return False
        command.handler(ctx, args)
        return True


def is_command(text: str) -> bool:
    """`/help` and `/mode plan` are commands; `/etc/hosts is broken` is a prompt that starts with a path."""
    return COMMAND_LINE.match(text.strip()) is not None


class Family:
    """The commands of one module (a family: session, model, context, memory), declared by decorating
    their handlers; `swecli.ui.commands.default_registry` gathers every family."""

    def __init__(self) -> None:
        self._commands: list[Command] = []

    def __iter__(self) -> Iterator[Command]:
        return iter(self._commands)

    def command(self, name: str, help: str, *, usage: str = "", complete: ArgCompleter | None = None,
                aliases: tuple[str, ...] = ()) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            self._commands.append(Command(name, help, handler, usage=usage, complete=complete, aliases=aliases))
            return handler

        return register
