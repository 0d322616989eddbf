"""User-defined sub-agents from markdown files: Claude Code's format, precedence, bad files."""

from __future__ import annotations

import os
from pathlib import Path

from swecli.delegation.definitions import DEFAULT_AGENT, load_agents


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_definitions_from_project_and_user_folders(project: Path) -> None:
    write(project / ".swecli" / "agents" / "reviewer.md",
          "---\ndescription: Reviews diffs.\ntools: [read_file, grep]\nmodel: inherit\n---\nReview carefully.\n")
    write(project / ".claude" / "agents" / "tester.md",
          "---\nname: tester\ndescription: Runs tests.\ntools: Read, Bash\nmodel: small-model\n---\nRun them.\n")
    write(Path(os.environ["XDG_CONFIG_HOME"]) / "swecli" / "agents" / "mine.md", "---\ndescription: Mine.\n---\n")
    catalog = load_agents(project, trusted=True)
    assert catalog.warnings == []
    assert catalog.names() == [DEFAULT_AGENT, "reviewer", "tester", "mine"]
    reviewer, tester = catalog.get("reviewer"), catalog.get("tester")
    assert reviewer is not None and reviewer.tools == ("read_file", "grep") and reviewer.model == ""
    assert reviewer.prompt == "Review carefully."
    assert tester is not None and tester.tools == ("Read", "Bash") and tester.model == "small-model"
    assert catalog.get("mine").tools is None  # type: ignore[union-attr]


def test_bad_definitions_are_skipped_with_one_warning_each(project: Path) -> None:
    agents = project / ".swecli" / "agents"
    plain = write(agents / "plain.md", "You are an agent without front matter.\n")
    nodesc = write(agents / "nodesc.md", "---\ntools: grep\n---\nbody\n")
    builtin = write(agents / "explore.md", "---\ndescription: Shadows the built-in.\n---\n")
    catalog = load_agents(project)
    assert catalog.names() == [DEFAULT_AGENT]
    assert catalog.warnings == [
        f"agent skipped: {builtin}: the name 'explore' is already taken by the built-in agent",
        f"agent skipped: {nodesc}: its front matter has no `description` (say when the agent should be used)",
        f"agent skipped: {plain}: it has no YAML front matter (the file must start with a `---` line)",
    ]


def test_an_untrusted_projects_agents_that_bring_tools_or_a_model_wait_for_trust(project: Path) -> None:
    write(project / ".swecli" / "agents" / "reader.md", "---\ndescription: Reads.\ntools: Read, Grep, Glob, LS\n---\n")
    write(project / ".swecli" / "agents" / "scribe.md", "---\ndescription: Writes.\ntools: read_file, Write\n---\n")
    write(project / ".claude" / "agents" / "pricey.md", "---\ndescription: Thinks.\nmodel: big-model\n---\n")
    write(project / ".claude" / "agents" / "helper.md", "---\ndescription: Helps.\ntools: mcp__x__y\n---\n")
    write(Path(os.environ["XDG_CONFIG_HOME"]) / "swecli" / "agents" / "mine.md",
          "---\ndescription: Mine.\ntools: Bash\nmodel: my-model\n---\n")
    catalog = load_agents(project)
    assert catalog.names() == [DEFAULT_AGENT, "reader", "mine"]  # read-only tools, and the user's own
    assert {a.name: a.brings() for a in catalog.untrusted} == {
        "scribe": ["tools Write"], "helper": ["tools mcp__x__y"], "pricey": ["model big-model"]}
    assert load_agents(project, trusted=True).names() == [DEFAULT_AGENT, "reader", "scribe", "helper", "pricey",
                                                          "mine"]


def test_a_yaml_alias_bomb_is_a_warning_not_a_hang(project: Path) -> None:
    """Nine levels of ten aliases: str() of `tools` or `name` would render 10^9 items (found by the
    independent check: swecli never started)."""
    folder = project / ".claude" / "agents"
    folder.mkdir(parents=True)
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    for key in ("tools", "name", "model"):
        (folder / f"{key}.md").write_text("---\ndescription: d\n" + "\n".join(levels) + f"\n{key}: [*a8]\n---\nhi\n")
    catalog = load_agents(project, {"HOME": str(project / "home")}, trusted=True)
    assert catalog.names() == [DEFAULT_AGENT]
    assert sorted(w.split(": ")[-1] for w in catalog.warnings) == [
        "`model` must be text", "`name` must be text", "`tools` must be a comma-separated list of tool names"]
