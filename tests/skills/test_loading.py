"""Loading skills through the real loop over HTTP (both wires): the catalog in the prefix, the `skill`
tool, resources read with read_file (also from a user-level skill outside the project), and a loaded
skill surviving compaction."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from swecli.assembly import AgentSession, open_session
from swecli.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage
from swecli.skills.loading import pin_skills
from swecli.testing.server import Call, Reply, ScriptedLLM, Step
from tests.helpers import scripted_settings, texts
from tests.skills.test_catalog import write_skill

BODY = "# Release\n1. Run scripts/bump.sh with the new version.\n2. See references/policy.md for the rules.\n"


def session(root: Path, llm: ScriptedLLM) -> AgentSession:
    return open_session(root, scripted_settings(llm))


def system_text(body: dict[str, Any]) -> str:
    if isinstance(body.get("system"), list):
        return "\n".join(block["text"] for block in body["system"])
    return str(body["messages"][0]["content"])


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_the_model_loads_a_skill_and_reads_its_resources(project: Path, wire: str) -> None:
    skill = write_skill(project / ".swecli" / "skills", "release", "Cut a release of this project.", BODY)
    (skill.parent / "references").mkdir()
    (skill.parent / "references" / "policy.md").write_text("Never release on Fridays.\n")
    steps: list[Step] = [
        Reply(calls=[Call("skill", {"name": "release"})]),
        Reply(calls=[Call("read_file", {"path": ".swecli/skills/release/references/policy.md"})]),
        Reply("Not today: it is Friday."),
    ]
    with ScriptedLLM(steps, wire=wire) as llm:  # type: ignore[arg-type]
        s = session(project, llm)
        turn = s.run("cut a release")
        s.close()
    assert turn.answer == "Not today: it is Friday."
    first = llm.requests[0]
    assert "- release: Cut a release of this project." in system_text(first)
    assert "Run scripts/bump.sh" not in json.dumps(first)  # only the catalog line until it is loaded
    tool_names = [t.get("name") or t["function"]["name"] for t in first["tools"]]
    assert "skill" in tool_names
    loaded = texts(llm.requests[1])[-1]
    assert loaded.startswith('<skill name="release" path=".swecli/skills/release/SKILL.md">')
    assert "This skill's folder is .swecli/skills/release" in loaded and "Run scripts/bump.sh" in loaded
    assert "Never release on Fridays." in texts(llm.requests[2])[-1]


def test_a_user_level_skill_resource_outside_the_project_is_readable(project: Path) -> None:
    user_skills = Path(os.environ["XDG_CONFIG_HOME"]) / "swecli" / "skills"
    skill = write_skill(user_skills, "style", "House style for prose.", "Read references/rules.md first.\n")
    (skill.parent / "references").mkdir()
    rules = skill.parent / "references" / "rules.md"
    rules.write_text("Use the serial comma.\n")
    steps: list[Step] = [
        Reply(calls=[Call("skill", {"name": "style"})]),
        Reply(calls=[Call("read_file", {"path": str(rules)}), Call("read_file", {"path": "/etc/hostname"})]),
        Reply("done"),
    ]
    with ScriptedLLM(steps) as llm:
        s = session(project, llm)
        s.run("edit the docs in house style")
        s.close()
    assert f"This skill's folder is {skill.parent}" in texts(llm.requests[1])[-1]
    rules_result, outside = texts(llm.requests[2])[-2:]
    assert "Use the serial comma." in rules_result
    assert "outside the project root" in outside  # only the skill folders are opened up, read-only


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_loaded_skill_survives_compaction(project: Path, wire: str) -> None:
    write_skill(project / ".swecli" / "skills", "release", "Cut a release.", BODY)
    (project / "big.txt").write_text("filler line\n" * 400)
    steps: list[Step] = [
        Reply(calls=[Call("skill", {"name": "release"})]),
        Reply(calls=[Call("read_file", {"path": "big.txt"})]),
        Reply("Read it."),
        Reply("### Current task and state\nPreparing the release."),  # the summary request
        Reply("Still following the release steps."),
    ]
    with ScriptedLLM(steps, wire=wire) as llm:  # type: ignore[arg-type]
        s = session(project, llm)
        s.run("cut a release")
        s.agent.replace_history(s.agent.context.compact(s.agent.history, s.provider, "manual"), "compaction")
        s.run("go on")
        s.close()
    after = texts(llm.requests[-1])
    assert not any("filler line" in t for t in after)  # the read was compacted away
    skill_at = next(i for i, t in enumerate(after) if t.startswith('<skill name="release"'))
    summary_at = next(i for i, t in enumerate(after) if "[swecli: compacted context]" in t)
    assert skill_at < summary_at and "Run scripts/bump.sh" in after[skill_at]
    assert sum(t.startswith('<skill name="release"') for t in after) == 1


def test_pin_keeps_the_newest_load_of_each_skill_not_loaded_again_later() -> None:
    def load(name: str, n: int) -> list[Any]:
        call = ToolCall(id=f"c{n}", name="skill", arguments=json.dumps({"name": name}))
        content = f'<skill name="{name}" path="x">\nv{n}\n</skill>'
        return [AssistantMessage(tool_calls=(call,)), ToolMessage(tool_call_id=f"c{n}", name="skill", content=content)]

    by_hand = UserMessage(content='<skill name="b" path="y">\nmine\n</skill>', kind="skill")
    span = [UserMessage(content="task"), *load("a", 1), *load("b", 2), *load("a", 3), by_hand, *load("c", 4)]
    later = [*load("c", 5)]
    pinned = pin_skills(span, later)
    assert sorted(pinned) == [6, 7]  # newest "a" (call 3) and the hand-loaded "b"; "c" is loaded again later
    assert pinned[6] == UserMessage(content='<skill name="a" path="x">\nv3\n</skill>', kind="skill")
    assert pinned[7] is by_hand
    failed = ToolMessage(tool_call_id="c9", name="skill", content='<skill name="z"', is_error=True)
    assert pin_skills([failed], []) == {}
