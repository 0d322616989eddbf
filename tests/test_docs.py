"""The documentation stays true to the code: links resolve, every docs page is reachable from the README,
the code map names every module, the settings page lists every setting, and every `swecli` command a page
shows uses commands and flags swecli has.

The README is the page a user reads first (install, quick start, everyday use); the depth lives in
`docs/`. These checks keep the two from drifting apart as code and pages move.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import typer
from pydantic import BaseModel

from swecli.cli import app
from swecli.config import Settings

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def links(page: Path) -> list[str]:
    """Relative links of a page (outside code blocks): `other.md`, `dir/x.md#anchor`, `#anchor`."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


def anchors(page: Path) -> set[str]:
    """The anchors GitHub makes for a page's headings: lower case, punctuation dropped, spaces to hyphens."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    headings = re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_every_relative_link_points_at_a_file_and_heading_that_exist() -> None:
    broken = []
    for page in PAGES:
        for target in links(page):
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    seen, todo = {README}, [README]
    while todo:
        page = todo.pop()
        for target in links(page):
            path = target.partition("#")[0]
            file = (page.parent / path).resolve()
            if path.endswith(".md") and file.exists() and file not in seen:
                seen.add(file)
                todo.append(file)
    orphans = [str(page.relative_to(ROOT)) for page in PAGES if page.resolve() not in seen]
    assert orphans == []


def test_the_readme_stays_a_page_a_user_reads() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, "the README is the user's page: put depth in docs/ and link it"
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[:3] == ["## Install", "## Quick start", "## A session"]


def test_the_readme_install_and_test_commands_are_what_ci_runs() -> None:
    readme = README.read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").replace(" -q ", " ")  # CI installs quietly
    for command in ("pip install -e '.[dev]'", "ruff check .", "mypy", "lint-imports", "pytest"):
        assert command in readme and re.search(rf"^{re.escape(command)}$", ci, re.MULTILINE), command
    for package in ("ripgrep", "bubblewrap", "libseccomp2"):
        assert package in readme and package in ci, package


def test_architecture_names_every_package_and_top_level_module() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    code_map = text[text.index("## Code map"):].split("\n## ")[0]
    listed = {name for row in re.findall(r"^\|[^|]*\|([^|]+)\|", code_map, re.MULTILINE)
              for name in re.findall(r"`([^`]+)`", row)}
    entries = [p for p in (ROOT / "swecli").iterdir() if p.name not in ("__pycache__", "__init__.py")]
    names = sorted(f"{p.name}/" if p.is_dir() else p.name for p in entries if p.is_dir() or p.suffix == ".py")
    assert [name for name in names if name not in listed] == []


def setting_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    keys = []
    for name, field in model.model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            keys += setting_keys(kind, f"{prefix}{name}.")
        else:
            keys.append(f"{prefix}{name}")
    return keys


def test_the_configuration_page_lists_every_setting() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([a-z_.A-Z]+)` \|", text, re.MULTILINE))
    internal = {"project_trusted", "ignored_project_settings"}  # the outcome of trust, not a setting
    missing = [key for key in setting_keys(Settings) if key not in internal
               and key not in rows and not any(row.startswith(f"{key}.") for row in rows)]
    assert missing == []


def command_lines(text: str) -> list[list[str]]:
    """Each `swecli ...` command of a page's bash blocks, as words, comments and pipes cut off."""
    blocks = re.findall(r"^```bash\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    commands = []
    for line in "\n".join(blocks).splitlines():
        for part in line.split("#")[0].split("|"):
            words = shlex.split(part)
            if words and words[0] == "swecli":
                commands.append(words[1:])
    return commands


def test_the_pages_show_only_commands_and_flags_swecli_has() -> None:
    root = typer.main.get_command(app)
    checked = 0
    for page in PAGES:
        for words in command_lines(page.read_text(encoding="utf-8")):
            command, rest = root, words
            while rest and rest[0] in (subcommands := getattr(command, "commands", {})):  # a group's subcommand
                command, rest = subcommands[rest[0]], rest[1:]
            own = rest[:rest.index("--")] if "--" in rest else rest  # after `--`: the MCP server's own command
            flags = {opt for param in command.params for opt in param.opts}
            shown = [word.split("=")[0] for word in own if word.startswith("-") and word != "-"]
            assert [flag for flag in shown if flag not in flags] == [], f"{page.name}: swecli {' '.join(words)}"
            checked += 1
    assert checked >= 15


def test_every_slash_command_is_shown_in_the_readme_and_the_repl_page() -> None:
    from swecli.ui.commands import default_registry

    names = [command.name for command in default_registry().commands()]
    for page in (README, ROOT / "docs" / "repl.md"):
        text = page.read_text(encoding="utf-8")
        assert [name for name in names if f"`/{name}" not in text] == [], page.name
