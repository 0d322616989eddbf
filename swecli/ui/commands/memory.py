"""Memory commands: `/init` (write or update OPENCLI.md), `/notes`, `/playbook`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markdown import Markdown
from rich.syntax import Syntax
from rich.text import Text

from swecli.ui.commands.registry import Family

if TYPE_CHECKING:
    from swecli.ui.repl import Repl

commands = Family()


@commands.command("init", "Scan the project and write or update OPENCLI.md (the project memory)")
def init(repl: Repl, args: str) -> None:
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


@commands.command("notes", "Show the session notes (.swecli/memory/session_notes.md)")
def notes(repl: Repl, args: str) -> None:
    from swecli.memory.notes import notes_path, read_notes

    text = read_notes(repl.root)
    if not text.strip():
        repl.print(Text("No session notes yet.", style="dim"))
        return
    repl.print(Text(str(notes_path(repl.root)), style="dim"))
    repl.print(Markdown(text))


@commands.command("playbook", "Show what swecli has learned about working in this project")
def playbook(repl: Repl, args: str) -> None:
    from swecli.memory.playbook import format_playbook

    playbook = repl.session.playbook
    if playbook is None:
        repl.print(Text("The learned playbook is off (context.playbook = false).", style="dim"))
        return
    repl.print(Text(format_playbook(playbook) or "The playbook is empty: it learns after completed tasks."))
