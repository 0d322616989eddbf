"""Project commands: `/repomap [symbols|deps FILE]`, the repository map (swecli.repomap) in the REPL."""

from __future__ import annotations

from rich.text import Text

from swecli.ui.commands.registry import CommandContext, Family

commands = Family()


def _complete_repomap(ctx: CommandContext, typed: str) -> list[str]:
    if typed.startswith("deps "):
        from swecli.repomap.repomap import background

        rmap = background(ctx.root).wait(0.5)
        stem = typed[5:]
        paths = rmap.ranked() if rmap is not None else []
        return [f"deps {p}" for p in paths if p.startswith(stem) or f"/{stem}" in f"/{p}"][:50]
    return [option for option in ("symbols", "deps ") if option.startswith(typed)]


@commands.command("repomap", "The repository map: central files, their definitions, a file's neighbours",
                  usage="/repomap [symbols|deps FILE]", complete=_complete_repomap)
def repomap(ctx: CommandContext, args: str) -> None:
    from swecli.repomap.repomap import background
    from swecli.repomap.views import UnknownFile, deps_text, find_file, ranked_table

    words = args.split(maxsplit=1)
    if (words and words[0] not in ("symbols", "deps")) or (words[:1] == ["deps"] and len(words) == 1):
        ctx.print(Text("Usage: /repomap [symbols|deps FILE]", style="red"))
        return
    pending = background(ctx.root)
    if pending.wait(1.0) is None and not pending.done.is_set():
        ctx.print(Text("Mapping the project (the first time parses every source file) …", style="dim"))
    rmap = pending.wait()
    if rmap is None:
        ctx.print(Text(f"The repository map could not be built: {pending.error}", style="red"))
        return
    if words[:1] == ["deps"]:
        try:
            text = deps_text(rmap, find_file(rmap, words[1], ctx.root))
        except UnknownFile as exc:
            ctx.print(Text(str(exc), style="red"))
            return
    else:
        text = rmap.render(2_000) if words[:1] == ["symbols"] else ranked_table(rmap, limit=25)
    ctx.print(Text(text))
    ctx.print(Text(rmap.summary(), style="dim"))
