"""`@path` mentions attach files as one context message before the prompt."""

from __future__ import annotations

from pathlib import Path

from swecli.ui.mentions import MAX_FILE_CHARS, collect, mentioned_paths


def test_mentions_are_found_at_word_starts_only() -> None:
    assert mentioned_paths("look at @src/app.py, and @README.md. mail me@example.com @src/app.py") == \
        ["src/app.py", "README.md"]
    assert mentioned_paths("@a.py\n@b.py") == ["a.py", "b.py"]
    assert mentioned_paths("no mentions here") == []


def test_a_mentioned_file_becomes_a_context_message(project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("def main():\n    return 42\n")
    found = collect(project, "what does @src/app.py return?")
    assert found.problems == []
    (attachment,) = found.attachments
    assert (attachment.path, attachment.lines, attachment.truncated) == ("src/app.py", 2, False)
    assert attachment.tokens == found.tokens > 0
    message = found.message()
    assert message is not None and message.kind == "context"
    assert '<file path="src/app.py" lines="2">\ndef main():\n    return 42\n\n</file>' in message.content


def test_unreadable_mentions_are_reported_not_attached(project: Path) -> None:
    (project / "pkg").mkdir()
    (project / "blob.bin").write_bytes(b"\x00\x01\x02")
    found = collect(project, "see @missing.py @pkg @blob.bin @../outside.txt")
    assert found.attachments == [] and found.message() is None
    assert len(found.problems) == 4
    assert "no such file" in found.problems[0]
    assert "directory" in found.problems[1]
    assert "binary" in found.problems[2]
    assert "outside the project" in found.problems[3]


def test_huge_files_are_truncated_with_a_note(project: Path) -> None:
    (project / "big.txt").write_text("x" * (MAX_FILE_CHARS + 500))
    found = collect(project, "@big.txt")
    assert found.attachments[0].truncated
    message = found.message()
    assert message is not None and "read_file for the rest" in message.content
