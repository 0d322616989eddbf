"""Skill commands: `/skills` (what was found, and from where) and one `/skill-name` per skill.

`/skill-name [request]` loads that skill's instructions into the conversation and runs the request
with them (`Use the <name> skill.` when no request is given). A skill whose name is taken by a
built-in command is loaded with the `skill` tool only (`/skills` says so).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from swecli.ui.commands.registry import Command, CommandContext, CommandRegistry, Family

if TYPE_CHECKING:
    from swecli.skills.catalog import Skill, SkillCatalog

commands = Family()


@commands.command("skills", "List the skills found (name, description, folder) and any skipped SKILL.md")
def skills(ctx: CommandContext, args: str) -> None:
    catalog = ctx.session.skills
    if catalog is None:
        ctx.print(Text("Skills are off (skills.enabled = false).", style="dim"))
        return
    added = rescan(ctx)  # one added since the session began is found here
    if added:
        ctx.print(Text("New since the session began: " + ", ".join(f"/{s.name}" for s in added), style="green"))
    for line in describe_catalog(catalog, shadowed=_shadowed(ctx.commands, catalog)):
        ctx.print(Text(line, style="dim" if line.startswith(("  ", "(")) else ""))


def describe_catalog(catalog: SkillCatalog, shadowed: set[str] | None = None) -> list[str]:
    """The listing shared by `/skills` and `swecli skills list`."""
    lines: list[str] = []
    if not catalog.skills:
        lines += [
            "No skills found. A skill is a folder holding a SKILL.md: create .swecli/skills/NAME/SKILL.md in this "
            "project (or ~/.config/swecli/skills/NAME/SKILL.md for all your projects), starting with",
            "  ---", "  name: NAME", "  description: what it does and when to use it", "  ---",
            "  and then the instructions. It is found at once: /NAME runs it, and /skills lists it.",
        ]
    for skill in catalog.skills:
        note = " (load it with the skill tool: a built-in command has this name)" if skill.name in (shadowed or ()) \
            else ""
        lines.append(f"{skill.name}: {skill.description}{note}")
        lines.append(f"  {skill.path} ({skill.scope}, {skill.source})")
    lines += [f"⚠ {warning}" for warning in catalog.warnings]
    lines.append("(searched: " + ", ".join(label for label, _ in catalog.searched) + ")")
    return lines


def _shadowed(registry: CommandRegistry, catalog: SkillCatalog) -> set[str]:
    return {s.name for s in catalog.skills if (c := registry.get(s.name)) is not None and not _is_skill(c)}


def _is_skill(command: Command) -> bool:
    return command.help.startswith("Skill: ")


def rescan(ctx: CommandContext) -> list[Skill]:
    """Look for skills again and give each new one its `/name`; returns the new ones."""
    added = ctx.session.rescan_skills()
    if added:
        register_skill_commands(ctx.commands, ctx.session.skills)
    return added


def register_skill_commands(registry: CommandRegistry, catalog: SkillCatalog | None) -> None:
    """One `/name` per skill, replacing those of an earlier catalog; built-in commands keep their names."""
    for command in registry.commands():
        if _is_skill(command):
            registry.unregister(command.name)
    for skill in catalog.skills if catalog is not None else ():
        if skill.name not in registry:
            registry.register(skill_command(skill))


def skill_command(skill: Skill) -> Command:
    def run(ctx: CommandContext, args: str) -> None:
        ctx.run_skill(skill, args)

    return Command(skill.name, f"Skill: {skill.description}", run, usage=f"/{skill.name} [request]")
