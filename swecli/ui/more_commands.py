"""Slash commands that reach beyond the REPL itself: `/init`, `/notes`, `/playbook`, `/resume`.

Each uses only the REPL's public surface (`repl.print`, `repl.confirm`, `repl.session`, `repl.reopen`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markdown import Markdown
from rich.syntax import Syntax
from rich.text import Text

from swecli.ui.commands import Command

if TYPE_CHECKING:
    from swecli.ui.repl import Repl


def init_handler(repl: Repl, args: str) -> None:
    """Scan the project and have the model fill OPENCLI.md.template; an update is shown as a diff first."""
    from swecli.llm.base import ProviderError, complete
    from swecli.memory.init import InitError, prepare_init_request, prepare_init_result

    repl.print(Text("Scanning the project and asking the model to write OPENCLI.md …", style="dim"))
    try:
        answer = complete(repl.provider, prepare_init_request(repl.root), repl.agent.cancel).message.content
        result = prepare_init_result(repl.root, answer)
    except (ProviderError, InitError) as exc:
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
    repl.print(Text(f"Wrote {result.path} ({len(result.text.splitlines())} lines); it is loaded into the system "
                    "prompt of the next session.", style="green"))


def notes_handler(repl: Repl, args: str) -> None:
    from swecli.memory.notes import notes_path, read_notes

    text = read_notes(repl.root)
    if not text.strip():
        repl.print(Text("No session notes yet.", style="dim"))
        return
    repl.print(Text(str(notes_path(repl.root)), style="dim"))
    repl.print(Markdown(text))


def playbook_handler(repl: Repl, args: str) -> None:
    from swecli.memory.playbook import format_playbook

    playbook = repl.session.playbook
    if playbook is None:
        repl.print(Text("The learned playbook is off (context.playbook = false).", style="dim"))
        return
    repl.print(Text(format_playbook(playbook) or "The playbook is empty: it learns after completed tasks."))


def resume_handler(repl: Repl, args: str) -> None:
    """`/resume` lists this project's sessions; `/resume ID` (or a unique prefix) switches to one."""
    from swecli.session.store import SessionError, format_session_line, list_sessions

    wanted = args.strip()
    if not wanted:
        sessions = list_sessions(repl.root)
        if not sessions:
            repl.print(Text("No sessions yet in this project.", style="dim"))
            return
        for info in sessions[:20]:
            repl.print(Text(format_session_line(info)))
        repl.print(Text("Resume one with /resume ID (a unique prefix is enough).", style="dim"))
        return
    try:
        repl.reopen(wanted)
    except SessionError as exc:
        repl.print(Text(str(exc), style="red"))


def _complete_sessions(repl: Repl, typed: str) -> list[str]:
    from swecli.session.store import session_ids

    return [sid for sid in session_ids(repl.root) if sid.startswith(typed)]


def more_commands() -> list[Command]:
    return [
        Command("init", "Scan the project and write or update OPENCLI.md (the project memory)", init_handler),
        Command("notes", "Show the session notes (.swecli/memory/session_notes.md)", notes_handler),
        Command("playbook", "Show what swecli has learned about working in this project", playbook_handler),
        Command("resume", "List sessions, or switch to one", resume_handler, usage="/resume [ID]",
                complete=_complete_sessions),
    ]
