"""Skill discovery over real folders: precedence, other tools' folders, bad SKILL.md files, the catalog budget."""

from __future__ import annotations

import os
from pathlib import Path

from swecli.context.tokens import Tokenizer
from swecli.skills.catalog import CATALOG_HEADER, catalog_prompt, discover, skill_folders

COUNT = Tokenizer("o200k_base")


def write_skill(folder: Path, name: str, description: str = "Does a thing.", body: str = "# Steps\n1. Do it.\n",
                front: str | None = None) -> Path:
    path = folder / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = front if front is not None else f"name: {name}\ndescription: {description}\n"
    path.write_text(f"---\n{meta}---\n{body}")
    return path


def test_project_and_user_folders_in_precedence_order(project: Path) -> None:
    home = Path(os.environ["HOME"])
    config = Path(os.environ["XDG_CONFIG_HOME"])
    write_skill(project / ".swecli" / "skills", "deploy")
    write_skill(project / ".claude" / "skills", "review", "Review a diff.")
    write_skill(project / ".agents" / "skills", "changelog")
    write_skill(config / "swecli" / "skills", "commit-style", "How this person writes commits.")
    write_skill(home / ".claude" / "skills", "pdf", "Read PDF files.")
    catalog = discover(project)
    assert catalog.warnings == []
    assert catalog.names() == ["deploy", "review", "changelog", "commit-style", "pdf"]
    assert [s.scope for s in catalog.skills] == ["project"] * 3 + ["user"] * 2
    assert catalog.get("pdf") is not None and catalog.get("pdf").source == "~/.claude/skills"  # type: ignore[union-attr]
    assert catalog.get("review").body() == "# Steps\n1. Do it."  # type: ignore[union-attr]


def test_xdg_config_home_is_honoured(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "xdg"
    write_skill(elsewhere / "swecli" / "skills", "mine")
    env = {"HOME": os.environ["HOME"], "XDG_CONFIG_HOME": str(elsewhere)}
    assert any(folder == elsewhere / "swecli" / "skills" for _, _, folder in skill_folders(project, env))
    assert discover(project, env).names() == ["mine"]


def test_bad_skills_are_skipped_with_one_warning_each(project: Path) -> None:
    skills = project / ".swecli" / "skills"
    good = write_skill(skills, "good")
    no_front = skills / "plain" / "SKILL.md"
    no_front.parent.mkdir(parents=True)
    no_front.write_text("# Just markdown\n")
    write_skill(skills, "nameless", front="description: no name here\n")
    write_skill(skills, "broken", front="name: broken\ndescription: [unclosed\n")
    write_skill(skills, "Bad_Name", front="name: Bad_Name\ndescription: caps\n")
    dup = write_skill(project / ".claude" / "skills", "good", "Another good.")
    catalog = discover(project)
    assert catalog.names() == ["good"]
    assert catalog.get("good").path == good  # type: ignore[union-attr]
    assert len(catalog.warnings) == 5
    text = "\n".join(catalog.warnings)
    assert f"{no_front}: it has no YAML front matter" in text
    assert "nameless/SKILL.md: its front matter has no `name`" in text
    assert "broken/SKILL.md: its front matter is not valid YAML" in text
    assert "Bad_Name/SKILL.md: the name 'Bad_Name' must be lowercase" in text
    assert f"{dup}: the name 'good' is already taken by {good}" in text


def test_the_same_folder_reached_twice_is_not_a_duplicate(project: Path) -> None:
    write_skill(project / ".agents" / "skills", "shared")
    (project / ".claude").mkdir()
    (project / ".claude" / "skills").symlink_to(project / ".agents" / "skills")
    catalog = discover(project)
    assert catalog.names() == ["shared"] and catalog.warnings == []


def test_catalog_lists_names_and_descriptions_within_the_budget(project: Path) -> None:
    for i in range(40):
        write_skill(project / ".swecli" / "skills", f"skill-{i:02d}", f"Handles task number {i} in detail " * 3)
    catalog = discover(project)
    whole = catalog_prompt(catalog, 100_000, COUNT)
    assert whole.startswith(CATALOG_HEADER) and "- skill-00: Handles task number 0" in whole
    assert "not listed" not in whole and "# Steps" not in whole  # bodies stay out of the prefix
    small = catalog_prompt(catalog, 600, COUNT)
    assert COUNT(small) <= 600
    listed = small.count("\n- skill-")
    assert 0 < listed < 40
    assert f"({40 - listed} more skill(s) are installed but not listed here for space" in small
    assert catalog_prompt(discover(project / "nowhere"), 600, COUNT) == ""
