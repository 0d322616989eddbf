"""Memory commands: `/init` (write or update OPENCLI.md), `/notes`, `/playbook`."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.markdown import Markdown
from rich.syntax import Syntax
from rich.text import Text

from swecli.errors import SwecliError
from swecli.events import ModelCallFinished
from swecli.messages import Usage
from swecli.ui.commands.registry import Family

if TYPE_CHECKING:
    from swecli.ui.repl import Repl

commands = Family()


@commands.command("init", "Scan the project and write or update OPENCLI.md (the project memory)")
def init(repl: Repl, args: str) -> None:
    """Scan the project and have the model fill OPENCLI.md.template; an update is shown as a diff first.
    The model call counts in /tokens and the log like any other; the new file is loaded at once."""
    from swecli.llm.base import complete
    from swecli.memory.init import prepare_init_request, prepare_init_result

    repl.print(Text("Scanning the project and asking the model to write OPENCLI.md …", style="dim"))
    try:
        started = time.monotonic()
        done = complete(repl.provider, prepare_init_request(repl.root), repl.agent.cancel)
        repl.bus(ModelCallFinished(done.usage or Usage(requests=1), time.monotonic() - started,
                                   done.model or repl.provider.model, done.finish_reason,
                                   reported=done.usage is not None))
        result = prepare_init_result(repl.root, done.message.content)
    except SwecliError as exc:
        repl.print(Text(f"/init failed: {exc}", style="red"))
        return
    if result.existing is not None and not result.changed:
        repl.print(Text(f"{result.path.name} is already up to date.", style="dim"))
        return
    if result.existing is not None:
        repl.print(Syntax(result.diff, "diff", theme="ansi_dark", background_color="default"))
        if not repl.confirm(f"Update {result.path.name} with these changes?"):
            repl.print(Text(f"Left {result.path.name} unchanged.", style="dim"))
            return
    result.write()
    repl.session.reload_memory()
    lines = len(result.text.splitlines())
    repl.print(Text(f"Wrote {result.path} ({lines} line{'s' if lines != 1 else ''}); this session uses it from now "
                    "on.", style="green"))


@commands.command("notes", "Show this session's notes (goal, decisions, files modified, open issues)")
def notes(repl: Repl, args: str) -> None:
    from swecli.memory.notes import notes_path, previous_notes, read_notes

    sid = repl.session.session_id
    text = read_notes(repl.root, sid)
    previous = previous_notes(repl.root, sid)
    if not text.strip():
        repl.print(Text("No notes in this session yet.", style="dim"))
    else:
        repl.print(Text(str(notes_path(repl.root, sid)), style="dim"))
        repl.print(Markdown(text))
    if previous is not None:
        repl.print(Text(f"The previous session's notes: {previous}", style="dim"))


@commands.command("playbook", "Show what swecli has learned about working in this project")
def playbook(repl: Repl, args: str) -> None:
    from swecli.memory.playbook import format_playbook

    playbook = repl.session.playbook
    if playbook is None:
        repl.print(Text("The learned playbook is off (context.playbook = false).", style="dim"))
        return
    repl.print(Text(format_playbook(playbook) or "The playbook is empty: it learns after completed tasks."))
    changes = repl.session.playbook_changes
    if changes:
        repl.print(Text("Learned this session:\n" + "\n".join(f"  {line}" for line in changes[-20:]), style="dim"))
