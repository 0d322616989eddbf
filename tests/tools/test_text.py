"""Encodings, line endings, diffs: edits must not rewrite what they did not touch."""

from __future__ import annotations

from pathlib import Path

import pytest

from swecli.tools.base import ToolError
from swecli.tools.text import (
    decode,
    decode_line,
    decode_text,
    detect_encoding,
    diff_stat,
    load_text,
    looks_binary,
    umask,
    unified_diff,
    write_atomically,
)


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
    legacy = decode(b"caf\xe9 cr\xe8me\n")  # Latin-1 (or cp1252), not valid UTF-8
    assert (legacy.text, legacy.encoding) == ("café crème\n", "cp1252")
    assert legacy.encode(legacy.text.replace("crème", "noir")) == b"caf\xe9 noir\n"
    assert legacy.encode("12 €\n") == b"12 \x80\n"  # cp1252 has the euro sign
    # A character the file's encoding cannot hold is refused (with the reason), never written as UTF-8.
    with pytest.raises(ToolError, match=r"encoded in cp1252, which cannot hold '→' \(U\+2192\)"):
        legacy.encode("a → b\n")


def test_cp1252_bytes_latin1_leaves_undefined_and_back() -> None:
    quotes = decode("\u201cquoted\u201d \u2013 it\u2019s\r\n".encode("cp1252"))
    assert (quotes.text, quotes.encoding, quotes.newline) == ("\u201cquoted\u201d \u2013 it\u2019s\n", "cp1252", "\r\n")
    odd = decode(b"\x81 byte cp1252 leaves undefined \xe9\n")
    assert odd.encoding == "latin-1" and odd.encode(odd.text) == b"\x81 byte cp1252 leaves undefined \xe9\n"


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be", "utf-32"])
def test_utf16_and_utf32_with_a_byte_order_mark_round_trip(codec: str) -> None:
    data = ("\ufeff" if codec.endswith("be") else "") + "déjà vu\r\nline two\r\n"
    raw = data.encode(codec)
    assert not looks_binary(raw)
    text = decode(raw)
    assert (text.text, text.newline) == ("déjà vu\nline two\n", "\r\n")
    assert text.encode(text.text) == raw
    assert decode_text(raw) == "déjà vu\r\nline two\r\n"


def test_the_first_part_of_a_file_cut_inside_a_character_is_still_utf8() -> None:
    data = "é" * 10
    assert detect_encoding(data.encode()[:5], complete=False) == ("utf-8", b"")
    assert decode_text(data.encode()[:5], complete=False) == "éé"
    assert detect_encoding(data.encode()[:5]) == ("cp1252", b"")  # the whole file: a cut char is no UTF-8
    assert decode_line("crème".encode("latin-1")) == "crème" and decode_line("crème".encode()) == "crème"


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


def test_a_new_file_follows_the_umask_and_an_edited_one_keeps_its_mode(project: Path) -> None:
    import subprocess

    assert umask() == int(subprocess.check_output(["sh", "-c", "umask"]).strip(), 8)  # a child inherits it
    write_atomically(project / "new.txt", b"x\n", "new.txt")
    assert (project / "new.txt").stat().st_mode & 0o777 == 0o666 & ~umask()
    private = project / "private.txt"
    private.write_text("a\n")
    private.chmod(0o640)
    write_atomically(private, b"b\n", "private.txt")
    assert private.stat().st_mode & 0o777 == 0o640
    write_atomically(project / "secret.txt", b"s\n", "secret.txt", new_mode=0o600)
    assert (project / "secret.txt").stat().st_mode & 0o777 == 0o600


def test_atomic_write_refuses_a_file_as_parent(project: Path) -> None:
    (project / "file").write_text("x")
    with pytest.raises(ToolError, match="not a directory"):
        write_atomically(project / "file" / "child.txt", b"x", "file/child.txt")
