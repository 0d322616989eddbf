"""Slash commands: a registry that the REPL dispatches to and that later features extend.

A command is a name, one line of help, a handler `(repl, args) -> None` and, optionally, a
completer for its argument `(repl, typed) -> candidates`. Extending the REPL is one call:

    registry.register(Command("compact", "Compact the conversation now", compact_handler,
                              usage="/compact [focus instructions]"))

Handlers talk to the REPL through its public methods (`repl.print`, `repl.agent`, `repl.settings`,
`repl.set_mode`, `repl.clear`, `repl.switch_model`, `repl.request_exit`, `repl.session_usage`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from swecli.permissions import MODES
from swecli.ui.meter import format_tokens

if TYPE_CHECKING:
    from swecli.messages import Usage
    from swecli.ui.repl import Repl

Handler = Callable[["Repl", str], None]
ArgCompleter = Callable[["Repl", str], Iterable[str]]

COMMAND_LINE = re.compile(r"^/([A-Za-z][\w-]*)(?:\s+(.*))?$", re.DOTALL)


@dataclass(frozen=True)
class Command:
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

    def dispatch(self, repl: Repl, line: str) -> bool:
        """Run the command on `line`; False (after saying so) when it names no known command."""
        match = COMMAND_LINE.match(line.strip())
        if not match:
            repl.print(Text(f"Not a command: {line.strip()!r}. Commands look like /help.", style="red"))
            return False
        name, args = match.group(1), (match.group(2) or "").strip()
        command = self.get(name)
        if command is None:
            hint = self.suggest(name)
            message = f"Unknown command /{name}." + (f" Did you mean /{hint}?" if hint else "") + \
                " Type /help for the list."
            repl.print(Text(message, style="red"))
            return False
        command.handler(repl, args)
        return True


def is_command(text: str) -> bool:
    """`/help` and `/mode plan` are commands; `/etc/hosts is broken` is a prompt that starts with a path."""
    return COMMAND_LINE.match(text.strip()) is not None


# -- the built-in commands ------------------------------------------------------------------------

def help_handler(repl: Repl, args: str) -> None:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for command in repl.commands.commands():
        table.add_row(Text(command.signature), Text(command.help))  # Text: `[NAME]` is not markup
    repl.print(table)
    repl.print(Text("Keys: Enter sends · Alt-Enter or Esc Enter adds a line · Shift-Tab cycles the mode · "
                    "Esc interrupts · @path attaches a file · Ctrl-R searches history · Ctrl-D exits", style="dim"))


def mode_handler(repl: Repl, args: str) -> None:
    if not args:
        repl.print(Text(f"Mode: {repl.mode} (choose with /mode {'|'.join(MODES)}; Shift-Tab cycles)"))
        return
    if args not in MODES:
        hint = difflib.get_close_matches(args, MODES, n=1)
        repl.print(Text(f"Unknown mode {args!r}; use one of: {', '.join(MODES)}."
                        + (f" Did you mean {hint[0]}?" if hint else ""), style="red"))
        return
    repl.set_mode(args)


def complete_mode(repl: Repl, typed: str) -> list[str]:
    return [m for m in MODES if m.startswith(typed)]


def clear_handler(repl: Repl, args: str) -> None:
    repl.clear()


def model_handler(repl: Repl, args: str) -> None:
    if args:
        repl.switch_model(args)
        return
    settings = repl.settings
    line = Text("Model: ")
    line.append(settings.model or "(none)", style="bold")
    line.append(f" · provider {settings.provider or '(auto)'}")
    if settings.base_url:
        line.append(f" · {settings.base_url}")
    line.append(f" · context window {format_tokens(settings.context_window)}")
    repl.print(line)
    repl.print(Text("Switch with /model NAME.", style="dim"))


def tokens_handler(repl: Repl, args: str) -> None:
    repl.print(usage_table(repl.session_usage))


def usage_table(usage: Usage) -> Text:
    """Session usage as aligned lines (plain text, so it copies cleanly)."""
    rows = [
        ("input", usage.input_tokens),
        ("output", usage.output_tokens),
        ("cache read", usage.cache_read_tokens),
        ("cache write", usage.cache_write_tokens),
    ]
    if usage.reasoning_tokens:
        rows.insert(2, ("  reasoning", usage.reasoning_tokens))
    text = Text(f"Session usage · {usage.requests} request{'s' if usage.requests != 1 else ''}\n", style="bold")
    mark = "~" if usage.estimated else ""
    for label, value in rows:
        text.append(f"  {label:<12}{mark + format_tokens(value):>8}  ({value:,})\n")
    text.append(f"  {'total':<12}{mark + format_tokens(usage.total_tokens):>8}  ({usage.total_tokens:,})")
    if usage.estimated:
        text.append(f"\n  ~ estimated: {usage.estimated_requests} of {usage.requests} requests were counted locally "
                    "(the server reported no usage)", style="dim")
    return text


def exit_handler(repl: Repl, args: str) -> None:
    repl.request_exit()


def builtin_commands() -> CommandRegistry:
    return CommandRegistry([
        Command("help", "List the commands and keys", help_handler),
        Command("mode", "Show or switch the mode: default asks before changes, auto does not, plan is read-only",
                mode_handler, usage="/mode [default|auto|plan]", complete=complete_mode),
        Command("clear", "Start a new conversation (same settings)", clear_handler),
        Command("model", "Show the model, or switch to another one", model_handler, usage="/model [NAME]"),
        Command("tokens", "Tokens used this session: input, output, cached, requests", tokens_handler),
        Command("exit", "Leave swecli (Ctrl-D does too)", exit_handler, aliases=("quit",)),
    ])
