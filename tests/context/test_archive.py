from __future__ import annotations

import json
from pathlib import Path

import pytest

from swecli.context.archive import ArchiveError, DiskArchive
from swecli.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage


def test_history_is_written_as_jsonl_under_the_project(project: Path) -> None:
    history: list[Message] = [UserMessage(content="hi"), AssistantMessage(tool_calls=(ToolCall(id="1", name="bash"),)),
               ToolMessage(tool_call_id="1", name="bash", content="out")]
    archive = DiskArchive(project, stamp="20250101-000000")
    rel = archive.save_history(history)
    assert rel.startswith(".swecli/compactions/20250101-000000-") and rel.endswith(".jsonl")
    lines = (project / rel).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["role"] for line in lines] == ["user", "assistant", "tool"]
    text = archive.save_text("tool-bash/1", "full output")
    assert (project / text).read_text(encoding="utf-8") == "full output"
    assert "/" not in Path(text).name.replace(".swecli/compactions/", "")


def test_an_unwritable_archive_location_raises_a_clear_archive_error(project: Path) -> None:
    (project / ".swecli").write_text("a file where the folder should be", encoding="utf-8")
    with pytest.raises(ArchiveError, match=r"cannot create .*compactions"):
        DiskArchive(project).save_history([UserMessage(content="hi")])


def test_archives_mask_secrets_and_are_private(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEPLOY_TOKEN", "tok-0123456789abcdef")
    archive = DiskArchive(project)
    history: list[Message] = [UserMessage(content="deploy"),
                              ToolMessage(tool_call_id="c1", name="bash", content="TOKEN=tok-0123456789abcdef")]
    for rel in (archive.save_history(history), archive.save_text("big output", "x tok-0123456789abcdef y")):
        path = project / rel
        assert "tok-0123456789abcdef" not in path.read_text() and "[REDACTED]" in path.read_text()
        assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
