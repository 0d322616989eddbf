"""The one reader for named files (`@path` mentions and retrieval)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swecli.retrieval.attach import MAX_WHOLE_CHARS, AttachError, merge, read, render_ranges, render_whole, resolve


def test_a_file_renders_whole_with_its_line_count(project: Path) -> None:
    (project / "app.py").write_text("def main():\n    return 42\n")
    element, tokens, truncated = render_whole(read(project, resolve(project, "app.py")), len)
    assert element == '<file path="app.py" lines="2">\ndef main():\n    return 42\n\n</file>'
    assert tokens == len(element) and not truncated


def test_what_cannot_be_attached_is_one_sentence(project: Path, tmp_path: Path) -> None:
    (project / "pkg").mkdir()
    (project / "blob.bin").write_bytes(b"\x00\x01\x02")
    (project / ".gitignore").write_text("secret.txt\n")
    (project / "secret.txt").write_text("hunter2\n")
    (tmp_path / "outside.txt").write_text("x\n")
    os.symlink(tmp_path / "outside.txt", project / "link.txt")
    expected = {"missing.py": "no such file", "pkg": "is a directory", "../outside.txt": "outside the project",
                "link.txt": "outside the project", "secret.txt": "ignored by .gitignore"}
    for raw, words in expected.items():
        with pytest.raises(AttachError, match=words):
            resolve(project, raw)
    with pytest.raises(AttachError, match="binary"):
        read(project, resolve(project, "blob.bin"))


def test_huge_files_are_cut_with_a_note(project: Path) -> None:
    (project / "big.txt").write_text("x" * (MAX_WHOLE_CHARS + 500))
    element, _, truncated = render_whole(read(project, resolve(project, "big.txt")), len)
    assert truncated and "read_file for the rest" in element


def test_excerpts_are_numbered_merged_and_clamped(project: Path) -> None:
    (project / "m.py").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    text = render_ranges(read(project, project / "m.py"), [(10, 12), (13, 14), (95, 120)], 'defines "x"')
    assert text.splitlines()[0] == '<file path="m.py" lines="100" shown="10-14, 95-100" why="defines &quot;x&quot;">'
    assert "   10  line 10" in text and "    …" in text and "  100  line 100" in text and "line 15" not in text
    assert merge([(5, 1)], 10) == []


def test_a_credential_is_never_attached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = x\n")
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(AttachError, match=r"^\.aws/credentials is in ~/\.aws, which holds credentials; it was not"):
        resolve(home, ".aws/credentials")
