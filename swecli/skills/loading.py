"""Loading a skill into the conversation: the `skill` tool (the model), `skill_message` (the person's
`/skill-name`), and `pin_skills`, which keeps loaded skills through compaction.

A loaded skill enters the history as one block of text, appended like any tool result or message,
so the cached prefix stays as it was:

    <skill name="pdf" path=".swecli/skills/pdf/SKILL.md">
    This skill's folder is .swecli/skills/pdf: ...
    (the SKILL.md body)
    </skill>

Compaction keeps the newest load of each skill verbatim (a tool result becomes a
`UserMessage(kind="skill")`), unless the kept recent turns hold it already; decay never folds one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from swecli.lazy import regex
from swecli.messages import Message, ToolMessage, UserMessage
from swecli.skills.catalog import Skill, SkillCatalog, SkillError
from swecli.tools.base import Tool, ToolContext, ToolError, ToolResult
from swecli.tools.facts import ToolFacts, declare

TOOL_NAME = "skill"
FACTS = ToolFacts(kind="skill", icon="📘", verb="skill", describe=lambda args: str(args.get("name") or "(list)"),
                  key_args=("name",), fold_after=None)
"""A loaded skill's instructions stay in force: never folded (compaction keeps the newest load too)."""
declare(TOOL_NAME, FACTS)
_HEADER = regex(r'^<skill name="([a-z0-9-]+)"')
LIST_LIMIT = 200


def shown_path(path: Path, root: Path) -> str:
    """Root-relative inside the project (what read_file takes), absolute elsewhere."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def skill_content(skill: Skill, body: str, root: Path) -> str:
    """The text a loaded skill adds to the conversation."""
    folder = shown_path(skill.directory, root)
    lines = [f'<skill name="{skill.name}" path="{shown_path(skill.path, root)}">']
    if _has_resources(skill.directory):
        lines.append(f"This skill's folder is {folder}: paths in these instructions (scripts/, references/, "
                     "assets/) are relative to it. Read those files with read_file when the instructions point "
                     "at them; run its scripts with bash.\n")
    lines += [body or "(this skill has no instructions beyond its description)", "</skill>"]
    return "\n".join(lines)


def _has_resources(folder: Path) -> bool:
    try:
        return any(child.name != "SKILL.md" for child in folder.iterdir())
    except OSError:
        return False


def skill_message(skill: Skill, root: Path) -> UserMessage:
    """What `/skill-name` appends before the person's request. Raises SkillError if it cannot be read."""
    return UserMessage(content=skill_content(skill, skill.body(), root), kind="skill")


def skill_command(skill: Skill, root: Path, request: str) -> tuple[UserMessage, str]:
    """`/skill-name [request]` (REPL or -p): the skill's message, and the task that follows it. Raises
    SkillError if the skill cannot be read."""
    return skill_message(skill, root), request.strip() or f"Use the {skill.name} skill."


class SkillArgs(BaseModel):
    name: str = Field("", description="The skill to load, as listed under # Skills in the system prompt. "
                                      "Leave empty to list every installed skill.")


def skill_tool(catalog: SkillCatalog) -> Tool[SkillArgs]:
    """The `skill` tool over one session's catalog."""

    def load(args: SkillArgs, ctx: ToolContext) -> ToolResult:
        if not args.name.strip():
            return _listing(catalog)
        skill = catalog.get(args.name)
        if skill is None and catalog.refresh():  # installed during the session?
            skill = catalog.get(args.name)
        if skill is None:
            names = ", ".join(catalog.names()[:LIST_LIMIT]) or "none"
            raise ToolError(f"There is no skill named {args.name.strip()!r}. Installed skills: {names}.")
        try:
            body = skill.body()
        except SkillError as exc:
            raise ToolError(f"Skill {skill.name} could not be loaded: {exc}.") from None
        content = skill_content(skill, body, ctx.root)
        lines = body.count("\n") + 1 if body else 0
        return ToolResult(content, summary=f"loaded skill {skill.name} ({lines} lines)",
                          meta={"skill": skill.name, "path": shown_path(skill.path, ctx.root)})

    return Tool(
        name=TOOL_NAME,
        description=("Load the full instructions of one of the skills listed under # Skills in the system "
                     "prompt. Call it when the task matches the skill's description, before starting the work, "
                     "then follow the instructions it returns."),
        args=SkillArgs,
        fn=load,
        facts=FACTS,
    )


def _listing(catalog: SkillCatalog) -> ToolResult:
    if not catalog.skills:
        return ToolResult("No skills are installed.", summary="no skills")
    lines = [f"- {s.name}: {s.description} ({s.source})" for s in catalog.skills[:LIST_LIMIT]]
    if len(catalog.skills) > LIST_LIMIT:
        lines.append(f"... {len(catalog.skills) - LIST_LIMIT} more not shown.")
    return ToolResult("\n".join(lines), summary=f"{len(catalog.skills)} skills")


def loaded_skill(message: Message) -> str | None:
    """The name of the skill `message` loaded, or None."""
    by_person = isinstance(message, UserMessage) and message.kind == "skill"
    by_model = isinstance(message, ToolMessage) and message.name == TOOL_NAME and not message.is_error
    if not (by_person or by_model):
        return None
    match = _HEADER.match(message.content)
    return match.group(1) if match else None


def pin_skills(span: Sequence[Message], later: Sequence[Message]) -> dict[int, Message]:
    """A `compaction.Pin`: the newest load of each skill in `span` that `later` does not load again,
    as a `UserMessage(kind="skill")` (re-attached after compaction, like the user's prompts)."""
    again = {name for m in later if (name := loaded_skill(m)) is not None}
    newest: dict[str, int] = {}
    for index, message in enumerate(span):
        name = loaded_skill(message)
        if name is not None and name not in again:
            newest[name] = index
    pinned: dict[int, Message] = {}
    for index in sorted(newest.values()):
        message = span[index]
        pinned[index] = message if isinstance(message, UserMessage) else UserMessage(content=message.content,
                                                                                     kind="skill")
    return pinned
