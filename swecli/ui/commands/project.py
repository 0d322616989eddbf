"""Project commands: `/repomap [symbols|deps FILE]`, the repository map (swecli.repomap) in the REPL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from swecli.ui.commands.registry import Family

if TYPE_CHECKING:
    from swecli.ui.repl import Repl

commands = Family()


def _complete_repomap(repl: Repl, typed: str) -> list[str]:
    if typed.startswith("deps "):
        from swecli.repomap.repomap import background

        rmap = background(repl.root).wait(0.5)
        stem = typed[5:]
        paths = rmap.ranked() if rmap is not None else []
        return [f"deps {p}" for p in paths if p.startswith(stem) or f"/{stem}" in f"/{p}"][:50]
    return [option for option in ("symbols", "deps ") if option.startswith(typed)]


@commands.command("repomap", "The repository map: central files, their definitions, a file's neighbours",
                  usage="/repomap [symbols|deps FILE]", complete=_complete_repomap)
def repomap(repl: Repl, args: str) -> None:
    from swecli.repomap.repomap import background
    from swecli.repomap.views import UnknownFile, deps_text, find_file, ranked_table

    words = args.split(maxsplit=1)
    if (words and words[0] not in ("symbols", "deps")) or (words[:1] == ["deps"] and len(words) == 1):
        repl.print(Text("Usage: /repomap [symbols|deps FILE]", style="red"))
        return
    pending = background(repl.root)
    if pending.wait(1.0) is None and not pending.done.is_set():
        repl.print(Text("Mapping the project (the first time parses every source file) …", style="dim"))
    rmap = pending.wait()
    if rmap is None:
        repl.print(Text(f"The repository map could not be built: {pending.error}", style="red"))
        return
    if words[:1] == ["deps"]:
        try:
            text = deps_text(rmap, find_file(rmap, words[1], repl.root))
        except UnknownFile as exc:
            repl.print(Text(str(exc), style="red"))
            return
    else:
        text = rmap.render(2_000) if words[:1] == ["symbols"] else ranked_table(rmap, limit=25)
    repl.print(Text(text))
    repl.print(Text(rmap.summary(), style="dim"))
