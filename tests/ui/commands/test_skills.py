"""`/skills`, `/skill-name` (in the real REPL, through a pty) and `swecli skills list` (a subprocess)."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from swecli.testing.server import Reply, ScriptedLLM
from tests.helpers import swecli_in_process
from tests.skills.test_catalog import write_skill
from tests.ui.harness import Terminal, in_process, output, spawn_swecli

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")


@pytest.fixture
def skills(project: Path) -> Path:
    write_skill(project / ".swecli" / "skills", "release", "Cut a release of this project.",
                "# Release\n1. Bump the version in pyproject.toml.\n")
    write_skill(project / ".claude" / "skills", "help", "A skill named like a built-in command.")
    broken = project / ".agents" / "skills" / "broken" / "SKILL.md"
    broken.parent.mkdir(parents=True)
    broken.write_text("no front matter here\n")
    return broken


@pytest.fixture
def terminal(project: Path, tmp_path: Path) -> Iterator[list[Terminal]]:
    made: list[Terminal] = []
    yield made
    for term in made:
        term.close()


def test_skills_listing_and_slash_skill_runs_with_the_instructions(project: Path, tmp_path: Path, skills: Path,
                                                                     terminal: list[Terminal]) -> None:
    with ScriptedLLM([Reply("Bumped to 1.2.0.")]) as llm:
        term = spawn_swecli(llm.base_url, project, tmp_path / "home")
        terminal.append(term)
        term.expect(f"skill skipped: {skills}: it has no YAML front matter")  # one warning at start
        term.prompt()
        term.line("/skills")
        term.expect("release: Cut a release of this project.")
        term.expect(".swecli/skills/release/SKILL.md (project, .swecli/skills)")
        term.expect("help: A skill named like a built-in command. (load it with the skill tool")
        term.expect("(searched: .swecli/skills, .claude/skills, .agents/skills")
        term.prompt()
        term.line("/release to 1.2.0")
        term.expect("📘 loaded skill release")
        term.expect("Bumped to 1.2.0.")
        term.expect("⏺ done in")
        term.prompt()
        term.send("\x04")
        assert term.exit_status() == 0
    messages = llm.requests[0]["messages"]
    skill, prompt = messages[-2], messages[-1]
    assert skill["role"] == "user" and skill["content"].startswith('<skill name="release"')
    assert "1. Bump the version in pyproject.toml." in skill["content"]
    assert prompt == {"role": "user", "content": "to 1.2.0"}


def test_cli_skills_list(project: Path, skills: Path) -> None:
    out = swecli_in_process(["skills", "list"], project, dict(os.environ))  # what it prints: no process needed
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "release: Cut a release of this project."
    assert lines[1].endswith(".swecli/skills/release/SKILL.md (project, .swecli/skills)")
    assert f"⚠ skill skipped: {skills}: it has no YAML front matter (the file must start with a `---` line)" in lines


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_slash_skill_works_in_print_mode_too(project: Path, skills: Path, wire: str) -> None:
    from tests.ui.test_headless import run_swecli

    with ScriptedLLM([Reply("Bumped to 1.2.0.")], wire=wire) as llm:  # type: ignore[arg-type]
        out = run_swecli(project, llm, "-p", "/release to 1.2.0", wire=wire)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Bumped to 1.2.0."
    assert "📘 loaded skill release" in out.stderr
    body = json.dumps(llm.requests[0])
    assert "1. Bump the version in pyproject.toml." in body  # the instructions went in before the request
    texts = []  # the user's side in order (Anthropic joins consecutive user messages into one of several blocks)
    for message in llm.requests[0]["messages"]:
        content = message["content"]
        texts += [content] if isinstance(content, str) else [part["text"] for part in content if "text" in part]
    assert texts[-2].startswith('<skill name="release"') and texts[-1] == "to 1.2.0"


def test_a_slash_that_names_no_skill_is_sent_as_written(project: Path, skills: Path) -> None:
    from tests.ui.test_headless import run_swecli

    with ScriptedLLM([Reply("It is the root.")]) as llm:
        out = run_swecli(project, llm, "-p", "/etc/hosts: what is this file for?")
    assert out.returncode == 0, out.stderr
    assert "loaded skill" not in out.stderr
    assert llm.requests[0]["messages"][-1]["content"] == "/etc/hosts: what is this file for?"


def test_a_skill_added_during_the_session_is_found_and_resume_replays_it(
        project: Path, tmp_path: Path, terminal: list[Terminal], monkeypatch: pytest.MonkeyPatch) -> None:
    from swecli.testing.server import Call
    from tests.ui.harness import ESC

    steps = [Reply("Reviewed: looks fine."), Reply(calls=[Call("bash", {"command": "sleep 30"})]),
             Reply("Back again.")]
    with ScriptedLLM(steps, strict=False) as llm:
        term = spawn_swecli(llm.base_url, project, tmp_path / "home")
        terminal.append(term)
        term.prompt()
        term.line("/skills")
        term.expect("No skills found. A skill is a folder holding a SKILL.md: create .swecli/skills/NAME/SKILL.md")
        term.expect("description: what it does and when to use it")
        term.prompt()
        write_skill(project / ".swecli" / "skills", "review", "Review the last change.", "# Review\nRead the diff.\n")
        term.line("/review the parser")  # not known at start: looked for again, found, run
        term.expect("📘 loaded skill review")
        term.expect("Reviewed: looks fine.")
        term.prompt()
        term.line("/skills")
        term.expect("review: Review the last change.")
        term.prompt()
        term.line("wait for it")
        term.expect("⚡ bash sleep 30")
        term.expect("Running bash…")  # the command has started and the REPL is watching the keys
        term.send(ESC)
        term.expect("⎿  interrupted by user")  # stopped, not run to its end
        term.expect("⏺ interrupted")
        term.prompt()
        term.send("\x04")
        assert term.exit_status() == 0
        # The next REPL replays it (in process: `--continue` in a terminal is test_repl.py's).
        monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # no person: the prompt ends at once
        repl = in_process(project, llm, continue_latest=True)
        assert repl.run() == 0
        shown = output(repl)
        replay = shown[shown.index("Resumed session"):shown.index("ctrl-d exits")]
        assert replay.index("❯ /review the parser") < replay.index("⏺ Reviewed: looks fine.")
        assert replay.index("❯ wait for it") < replay.index("⏹ interrupted (no answer)")
    skill = llm.requests[0]["messages"][-2]
    assert skill["content"].startswith('<skill name="review"') and "Read the diff." in skill["content"]
