from __future__ import annotations

from pathlib import Path

import pytest

from swecli.memory.init import (
    OUTPUT_FILE,
    TEMPLATE_FILE,
    InitError,
    build_init_request,
    diff_for_update,
    load_template,
    prepare_init_request,
    prepare_init_result,
    render_result,
)
from swecli.memory.opencli import load_memory
from swecli.memory.scan import scan_project
from swecli.messages import UserMessage

REPO_TEMPLATE = Path(__file__).resolve().parents[2] / TEMPLATE_FILE
FILLED = ("# Shop\n\n## Overview\nA web shop.\n\n## Structure\n- `shop/`: the app\n\n"
          "## Key files\n- `shop/app.py:1`\n\n## Patterns\nunknown\n\n## Dependencies\n- flask\n\n"
          "## Build and test\n```bash\npytest -q\n```\n\n"
          "## Current state\nWorks (2026-11-22).\n")


def test_the_shipped_template_has_every_section_with_guidance() -> None:
    text = REPO_TEMPLATE.read_text()
    for heading in ("## Overview", "## Structure", "## Key files", "## Patterns", "## Dependencies",
                    "## Build and test", "## Current state"):
        assert heading in text
    assert text.count("<!-- swecli:") == 8 and "path:line" in text and "2,000-3,000 tokens" in text


def test_template_lookup_prefers_the_project_copy(project: Path) -> None:
    assert load_template(project) == REPO_TEMPLATE.read_text()  # swecli's own copy
    (project / TEMPLATE_FILE).write_text("# custom template")
    assert load_template(project) == "# custom template"


def test_request_for_a_new_file(project: Path) -> None:
    request = build_init_request(project, "TEMPLATE BODY", "SCAN BODY", None)
    assert request.tools == () and request.max_tokens >= 4096
    system = request.system[0].text
    assert "OPENCLI.md" in system and "2,000-3,000 tokens" in system and "path:line" in system
    [message] = request.messages
    assert isinstance(message, UserMessage)
    assert "<template>\nTEMPLATE BODY\n</template>" in message.content
    assert "<scan>\nSCAN BODY\n</scan>" in message.content
    assert "<existing" not in message.content and "project `project`" in message.content


def test_request_for_an_update_keeps_human_edits(project: Path) -> None:
    request = build_init_request(project, "T", "S", "# Mine\nHand-written note.\n")
    content = request.messages[0].content
    assert '<existing path="OPENCLI.md">\n# Mine\nHand-written note.\n</existing>' in content
    assert "keep everything a person wrote" in content


def test_prepare_init_request_scans_the_project(project: Path) -> None:
    (project / "pyproject.toml").write_text('[project]\ndependencies = ["rich"]\n')
    (project / OUTPUT_FILE).write_text("# Existing\n")
    content = prepare_init_request(project).messages[0].content
    assert "pyproject.toml [main]: rich" in content and "## Overview" in content and "# Existing" in content


@pytest.mark.parametrize("answer", [
    FILLED,
    f"```markdown\n{FILLED}```",
    f"Here is the file:\n\n```md\n{FILLED}```\n",
    f"<think>plan the sections</think>\n{FILLED}",
    f"Sure! Here it is.\n{FILLED}",
    FILLED.replace("## Overview\n", "## Overview\n<!-- swecli: 2-4 sentences.\nmore guidance -->\n"),
])
def test_render_result_recovers_the_file(answer: str) -> None:
    assert render_result(answer) == FILLED


def test_render_result_keeps_inner_code_fences_and_human_comments() -> None:
    text = "# P\n\n<!-- keep me -->\n```bash\nmake\n```\n"
    assert render_result(text) == text


def test_render_result_refuses_an_empty_answer() -> None:
    with pytest.raises(InitError, match="nothing was written"):
        render_result("```markdown\n<!-- swecli: fill me -->\n```")


def test_diff_for_update() -> None:
    diff = diff_for_update("# A\nold line\n", "# A\nnew line\n")
    assert diff.splitlines()[:2] == ["--- a/OPENCLI.md", "+++ b/OPENCLI.md"]
    assert "-old line" in diff and "+new line" in diff
    assert diff_for_update("same\n", "same\n") == ""
    assert "\\ No newline" not in diff_for_update("a", "b") and diff_for_update("a", "b").endswith("\n")


def test_init_creates_the_file_which_is_then_loaded_as_memory(project: Path) -> None:
    result = prepare_init_result(project, f"```markdown\n{FILLED}```")
    assert result.existing is None and result.changed
    result.write()
    assert (project / OUTPUT_FILE).read_text() == FILLED
    [memory] = load_memory(project, 1000, lambda s: len(s.split()))
    assert memory.name == OUTPUT_FILE and memory.text == FILLED.strip()


@pytest.mark.parametrize("answer", ["OK.", "# Shop\n\n## Overview\nA web shop.\n"])
def test_an_answer_without_the_templates_sections_never_replaces_the_file(project: Path, answer: str) -> None:
    (project / OUTPUT_FILE).write_text(FILLED)
    with pytest.raises(InitError, match=r"does not look like OPENCLI\.md.*Structure.*kept the existing OPENCLI\.md"):
        prepare_init_result(project, answer)
    (project / OUTPUT_FILE).unlink()
    with pytest.raises(InitError, match="nothing was written"):
        prepare_init_result(project, answer)


def test_one_section_in_four_may_be_missing_and_a_hand_shaped_file_sets_what_is_required(project: Path) -> None:
    without_patterns = FILLED.replace("## Patterns\nunknown\n\n", "")
    assert prepare_init_result(project, without_patterns).text == without_patterns
    (project / OUTPUT_FILE).write_text("# Shop\n\n## Overview\nOld.\n\n## Deployment\nFridays.\n")
    update = "# Shop\n\n## Overview\nA web shop.\n\n## Deployment\nFridays.\n"
    assert prepare_init_result(project, update).changed  # only Overview was required of this file


def test_init_on_an_existing_file_only_proposes_a_diff(project: Path) -> None:
    (project / OUTPUT_FILE).write_text("# Shop\n\n## Overview\nOld.\n")
    result = prepare_init_result(project, FILLED)
    assert result.existing == "# Shop\n\n## Overview\nOld.\n" and result.changed
    assert "-Old." in result.diff and "+A web shop." in result.diff
    assert (project / OUTPUT_FILE).read_text() == "# Shop\n\n## Overview\nOld.\n"  # untouched until approved
    result.write()
    assert (project / OUTPUT_FILE).read_text() == FILLED
    assert not prepare_init_result(project, FILLED).changed


def test_init_sends_no_file_that_leads_out_of_the_project(project: Path, tmp_path: Path) -> None:
    # a cloned repository's `OPENCLI.md`, template or README linked to the home's key went into /init's request
    key = tmp_path / "home" / ".ssh" / "id_rsa"
    key.parent.mkdir(parents=True)
    key.write_text("PRIVATE-KEY-MATERIAL\n")
    for name in (OUTPUT_FILE, TEMPLATE_FILE, "README.md", "pyproject.toml"):
        (project / name).symlink_to(key)
    (project / "app.py").write_text("print('hi')\n")
    request = prepare_init_request(project)
    assert "PRIVATE-KEY-MATERIAL" not in repr(request) and "app.py" in repr(request)
    assert scan_project(project).files == ["app.py"]  # links are not read (nor listed) by the scan
    assert load_template(project).startswith("# ")  # swecli's own template, not the link's target
