"""Session commands: `/help`, `/clear`, `/tokens`, `/resume [ID]`, `/exit`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from swecli.ui.commands.registry import CommandContext, Family
from swecli.ui.meter import format_tokens

if TYPE_CHECKING:
    from swecli.messages import Usage

commands = Family()


@commands.command("help", "List the commands and keys")
def help_(ctx: CommandContext, args: str) -> None:
    from rich.table import Table  # when the command runs, not when the REPL builds its commands

    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for command in ctx.commands.commands():
        table.add_row(Text(command.signature), Text(command.help))  # Text: `[NAME]` is not markup
    ctx.print(table)
    ctx.print(Text("Keys: Enter sends · Alt-Enter or Esc Enter adds a line · Shift-Tab cycles the mode · "
                    "Esc interrupts · @path attaches a file · Ctrl-R searches history · Ctrl-D exits", style="dim"))


@commands.command("clear", "Start a new conversation (same settings)")
def clear(ctx: CommandContext, args: str) -> None:
    ctx.clear()


@commands.command("tokens", "Tokens used this session: input, output, cached, requests")
def tokens(ctx: CommandContext, args: str) -> None:
    ctx.print(usage_table(ctx.session_usage))


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


def _complete_sessions(ctx: CommandContext, typed: str) -> list[str]:
    from swecli.session.store import session_ids

    return [sid for sid in session_ids(ctx.root) if sid.startswith(typed)]


@commands.command("resume", "List sessions, or switch to one", usage="/resume [ID]", complete=_complete_sessions)
def resume(ctx: CommandContext, args: str) -> None:
    """`/resume` lists this project's sessions; `/resume ID` (or a unique prefix) switches to one."""
    from swecli.session.store import SessionError, format_session_line, list_sessions

    wanted = args.strip()
    if not wanted:
        sessions = list_sessions(ctx.root)
        if not sessions:
            ctx.print(Text("No sessions yet in this project.", style="dim"))
            return
        for info in sessions[:20]:
            ctx.print(Text(format_session_line(info)))
        ctx.print(Text("Resume one with /resume ID (a unique prefix is enough).", style="dim"))
        return
    try:
        ctx.reopen(wanted)
    except SessionError as exc:
        ctx.print(Text(str(exc), style="red"))


@commands.command("exit", "Leave swecli (Ctrl-D does too)", aliases=("quit",))
def exit_(ctx: CommandContext, args: str) -> None:
    ctx.request_exit()
