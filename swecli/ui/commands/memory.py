"""Memory commands: `/init` (write or update OPENCLI.md), `/notes`, `/playbook`."""

from __future__ import annotations

import time

from rich.text import Text

from swecli.errors import SwecliError
from swecli.events import ModelCallFinished
from swecli.messages import Usage
from swecli.ui.commands.registry import CommandContext, Family

commands = Family()


@commands.command("init", "Scan the project and write or update OPENCLI.md (the project memory)")
def init(ctx: CommandContext, args: str) -> None:
    """Scan the project and have the model fill OPENCLI.md.template; an update is shown as a diff first.
    The model call counts in /tokens and the log like any other; the new file is loaded at once."""
    from swecli.llm.base import complete
    from swecli.memory.init import prepare_init_request, prepare_init_result

    ctx.print(Text("Scanning the project and asking the model to write OPENCLI.md …", style="dim"))
    try:
        started = time.monotonic()
        done = complete(ctx.session.provider, prepare_init_request(ctx.root), ctx.session.agent.cancel)
        ctx.session.bus(ModelCallFinished(done.usage or Usage(requests=1), time.monotonic() - started,
                                   done.model or ctx.session.provider.model, done.finish_reason,
                                   reported=done.usage is not None))
        result = prepare_init_result(ctx.root, done.message.content)
    except SwecliError as exc:
        ctx.print(Text(f"/init failed: {exc}", style="red"))
        return
    if result.existing is not None and not result.changed:
        ctx.print(Text(f"{result.path.name} is already up to date.", style="dim"))
        return
    if result.existing is not None:
        from rich.syntax import Syntax  # pygments, not on the REPL's start

        ctx.print(Syntax(result.diff, "diff", theme="ansi_dark", background_color="default"))
        if not ctx.confirm(f"Update {result.path.name} with these changes?"):
            ctx.print(Text(f"Left {result.path.name} unchanged.", style="dim"))
            return
    result.write()
    ctx.session.reload_memory()
    lines = len(result.text.splitlines())
    ctx.print(Text(f"Wrote {result.path} ({lines} line{'s' if lines != 1 else ''}); this session uses it from now "
                    "on.", style="green"))


@commands.command("notes", "Show this session's notes (goal, decisions, files modified, open issues)")
def notes(ctx: CommandContext, args: str) -> None:
    from swecli.memory.notes import notes_path, previous_notes, read_notes

    sid = ctx.session.session_id
    text = read_notes(ctx.root, sid)
    previous = previous_notes(ctx.root, sid)
    if not text.strip():
        ctx.print(Text("No notes in this session yet.", style="dim"))
    else:
        ctx.print(Text(str(notes_path(ctx.root, sid)), style="dim"))
        from rich.markdown import Markdown  # markdown-it and pygments: ~0.1 s, not on the REPL's start

        ctx.print(Markdown(text))
    if previous is not None:
        ctx.print(Text(f"The previous session's notes: {previous}", style="dim"))


@commands.command("playbook", "Show what swecli has learned about working in this project")
def playbook(ctx: CommandContext, args: str) -> None:
    from swecli.memory.playbook import format_playbook

    playbook = ctx.session.playbook
    if playbook is None:
        ctx.print(Text("The learned playbook is off (context.playbook = false).", style="dim"))
        return
    ctx.print(Text(format_playbook(playbook) or "The playbook is empty: it learns after completed tasks."))
    changes = ctx.session.playbook_changes
    if changes:
        ctx.print(Text("Learned this session:\n" + "\n".join(f"  {line}" for line in changes[-20:]), style="dim"))
