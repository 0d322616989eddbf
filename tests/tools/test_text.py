"""Encodings, line endings, diffs: edits must not rewrite what they did not touch."""

from __future__ import annotations

from pathlib import Path

import pytest

from swecli.tools.base import ToolError
from swecli.tools.text import decode, diff_stat, load_text, looks_binary, unified_diff, write_atomically


def test_utf8_round_trips() -> None:
    text = decode("héllo\nwörld\n".encode())
    assert (text.encoding, text.newline) == ("utf-8", "\n")
    assert text.encode(text.text) == "héllo\nwörld\n".encode()


def test_crlf_files_are_held_with_lf_and_written_back_with_crlf() -> None:
    text = decode(b"a\r\nb\r\n")
    assert text.text == "a\nb\n"
    assert text.newline == "\r\n"
    assert text.encode("a\nb\nc\n") == b"a\r\nb\r\nc\r\n"
    assert text.encode("x\r\ny\n") == b"x\r\ny\r\n"  # already-CRLF input is not doubled


def test_mixed_line_endings_are_left_alone() -> None:
    text = decode(b"a\r\nb\n")
    assert text.newline == "\n"
    assert text.encode(text.text) == b"a\r\nb\n"


def test_bom_and_legacy_encodings_are_preserved() -> None:
    bom = decode(b"\xef\xbb\xbfx = 1\n")
    assert bom.text == "x = 1\n"
    assert bom.encode("x = 2\n") == b"\xef\xbb\xbfx = 2\n"
    legacy = decode(b"caf\xe9\n")  # latin-1, not valid UTF-8
    assert legacy.encoding == "latin-1"
    assert legacy.encode(legacy.text.replace("caf", "CAF")) == b"CAF\xe9\n"
    # A character latin-1 cannot hold upgrades the file to UTF-8 rather than failing.
    assert legacy.encode("€\n") == "€\n".encode()


def test_binary_detection() -> None:
    assert looks_binary(b"\x89PNG\r\n\x1a\n\0\0\0")
    assert not looks_binary("plain text ünïcode".encode())
    assert not looks_binary(b"x" * 9000 + b"\0")  # only the first 8KB are sniffed


def test_load_text_errors_are_actionable(project: Path) -> None:
    (project / "blob.bin").write_bytes(b"\0\1\2")
    (project / "readme.md").write_text("hi\n")
    with pytest.raises(ToolError, match="binary"):
        load_text(project / "blob.bin", "blob.bin")
    with pytest.raises(ToolError, match=r"Did you mean: readme\.md"):
        load_text(project / "readme.mdx", "readme.mdx")
    with pytest.raises(ToolError, match="is a directory"):
        load_text(project, ".")


def test_unified_diff_and_stat() -> None:
    diff = unified_diff("a\nb\nc\n", "a\nB\nc\nd\n", "f.txt")
    assert diff.startswith("--- a/f.txt\n+++ b/f.txt\n@@")
    assert "-b\n+B\n" in diff
    assert diff_stat(diff) == (2, 1)
    new = unified_diff(None, "x\ny", "new.txt")
    assert new.startswith("--- /dev/null\n+++ b/new.txt\n")
    assert new.endswith("+y\n\\ No newline at end of file\n")
    # Lines that look like diff headers inside hunks still count.
    assert diff_stat(unified_diff("--x\n", "++y\n", "f")) == (1, 1)


def test_atomic_write_keeps_the_mode_and_leaves_no_temp_files(project: Path) -> None:
    script = project / "run.sh"
    script.write_text("echo 1\n")
    script.chmod(0o755)
    write_atomically(script, b"echo 2\n", "run.sh")
    assert script.read_bytes() == b"echo 2\n"
    assert script.stat().st_mode & 0o777 == 0o755
    assert sorted(p.name for p in project.iterdir()) == ["run.sh"]


def test_atomic_write_refuses_a_file_as_parent(project: Path) -> None:
    (project / "file").write_text("x")
    with pytest.raises(ToolError, match="not a directory"):
        write_atomically(project / "file" / "child.txt", b"x", "file/child.txt")
