"""Skill discovery: every `SKILL.md` in the skill folders, parsed, checked and listed once per session.

A skill is a folder holding `SKILL.md` (YAML front matter with `name` and `description`, then a
markdown body) and, optionally, `scripts/`, `references/` and `assets/`. Folders searched, in
precedence order (an earlier folder wins a name):

    <root>/.swecli/skills/*/SKILL.md      project, swecli's own
    <root>/.claude/skills/*/SKILL.md      project, shared with Claude Code
    <root>/.agents/skills/*/SKILL.md      project, the cross-tool folder
    $XDG_CONFIG_HOME/swecli/skills/...    user (~/.config/swecli/skills)
    ~/.claude/skills/..., ~/.agents/skills/...

Only the front matter is read here; a body is read when the skill is loaded (`Skill.body`), so a
skill costs its catalog line until it is used. A bad SKILL.md (no front matter, invalid YAML, a
missing name or description, a duplicate name) is skipped with one warning naming the file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

from swecli.errors import SwecliError
from swecli.lazy import regex
from swecli.records import datarecord

SKILL_FILE = "SKILL.md"
NAME_PATTERN = regex(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
"""The Agent Skills rule: lowercase letters, digits and single hyphens."""
MAX_NAME = 64
MAX_DESCRIPTION = 1024

CountTokens = Callable[[str], int]


class SkillError(SwecliError):
    """A SKILL.md that cannot be used; `str()` says why in one sentence."""


@datarecord(frozen=True)
class Skill:
    """One skill: its SKILL.md and where it was found."""

    name: str
    description: str
    path: Path
    """The SKILL.md file."""
    source: str
    """The folder it was found in, as a person writes it (`.swecli/skills`, `~/.claude/skills`)."""
    scope: str
    """`project` or `user`."""

    @property
    def directory(self) -> Path:
        return self.path.parent

    def body(self) -> str:
        """The markdown after the front matter, read now (so an edit shows up on the next load)."""
        from swecli.frontmatter import FrontMatterError, read_front_matter

        try:
            return read_front_matter(self.path)[1].strip()
        except FrontMatterError as exc:
            raise SkillError(f"{self.path}: {exc}") from None


@datarecord
class SkillCatalog:
    """The skills found for this project, and where they were looked for."""

    skills: list[Skill] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    searched: list[tuple[str, Path]] = field(default_factory=list)
    """Every folder looked in (label, path), for `/skills` and `swecli skills list`."""
    root: Path | None = None
    env: Mapping[str, str] | None = None
    """What `discover` searched, so `refresh` can search again."""

    def refresh(self) -> list[Skill]:
        """Search the folders again (a skill added, changed or removed during the session) and take what
        is there now, in place: everything holding this catalog sees it. Returns the skills that are new."""
        if self.root is None:
            return []
        found = discover(self.root, self.env)
        known = set(self.names())
        self.skills, self.warnings, self.searched = found.skills, found.warnings, found.searched
        return [s for s in self.skills if s.name not in known]

    def get(self, name: str) -> Skill | None:
        wanted = name.strip().lstrip("/")
        return next((s for s in self.skills if s.name == wanted), None)

    def names(self) -> list[str]:
        return [s.name for s in self.skills]

    def __bool__(self) -> bool:
        return bool(self.skills)


def skill_folders(root: Path, env: Mapping[str, str] | None = None) -> list[tuple[str, str, Path]]:
    """(scope, label, folder) for every place skills are looked for, in precedence order."""
    from swecli.config import user_config_path

    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    config = user_config_path(dict(env)).parent.parent
    return [
        ("project", ".swecli/skills", root / ".swecli" / "skills"),
        ("project", ".claude/skills", root / ".claude" / "skills"),
        ("project", ".agents/skills", root / ".agents" / "skills"),
        ("user", _tilde(config / "swecli" / "skills", home), config / "swecli" / "skills"),
        ("user", "~/.claude/skills", home / ".claude" / "skills"),
        ("user", "~/.agents/skills", home / ".agents" / "skills"),
    ]


def _tilde(path: Path, home: Path) -> str:
    return "~/" + path.relative_to(home).as_posix() if path.is_relative_to(home) else str(path)


def discover(root: Path, env: Mapping[str, str] | None = None) -> SkillCatalog:
    """Every usable skill, earlier folders first (then by name); problems become warnings."""
    from swecli.frontmatter import load_named

    searched = [(label, folder) for _, label, folder in skill_folders(root, env)]
    files = [(path, (label, scope)) for scope, label, folder in skill_folders(root, env)
             for path in _skill_files(folder)]
    skills, warnings = load_named(files, lambda path, where: parse_skill(path, *where), "skill")
    return SkillCatalog(skills, warnings, searched, root=root, env=env)


def _skill_files(folder: Path) -> list[Path]:
    try:
        children = sorted(folder.iterdir()) if folder.is_dir() else []
    except OSError:
        return []
    return [child / SKILL_FILE for child in children if (child / SKILL_FILE).is_file()]


def parse_skill(path: Path, source: str, scope: str) -> Skill:
    from swecli.frontmatter import read_front_matter

    meta = read_front_matter(path)[0]
    name = _required(meta, "name")
    description = " ".join(_required(meta, "description").split())
    if len(name) > MAX_NAME or not NAME_PATTERN.match(name):
        raise SkillError(f"the name {name!r} must be lowercase letters, digits and hyphens (at most {MAX_NAME} "
                         "characters)")
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1] + "…"
    return Skill(name=name, description=description, path=path, source=source, scope=scope)


def _required(meta: dict[str, Any], key: str) -> str:
    value = meta.get(key)
    if not isinstance(value, str) or not value.strip():
        raise SkillError(f"its front matter has no `{key}`" if value is None else f"`{key}` must be non-empty text")
    return value.strip()


# --- the catalog in the stable prefix ----------------------------------------------------------

CATALOG_HEADER = """# Skills

Skills are folders of instructions (some with scripts, references and assets) for particular kinds of \
task. When a task matches a skill's description, load its instructions with the `skill` tool before \
you start, then follow them; load only the skills the task needs."""


def catalog_prompt(catalog: SkillCatalog, budget_tokens: int, count: CountTokens) -> str:
    """`name: description` lines for the system prompt, within `budget_tokens` ("" without skills).

    Skills that do not fit are left out, in precedence order, and a note says how many and how to
    list them all."""
    if not catalog.skills or budget_tokens <= 0:
        return ""
    lines = [f"- {s.name}: {s.description}" for s in catalog.skills]
    used = count(CATALOG_HEADER) + 2
    kept: list[str] = []
    for line in lines:
        cost = count(line) + 1
        if used + cost > budget_tokens - 40:  # room for the note
            break
        kept.append(line)
        used += cost
    left_out = len(lines) - len(kept)
    parts = [CATALOG_HEADER, "\n".join(kept)] if kept else [CATALOG_HEADER]
    if left_out:
        parts.append(f"({left_out} more skill(s) are installed but not listed here for space: call `skill` with "
                     "an empty name to list them all.)")
    return "\n\n".join(parts)
