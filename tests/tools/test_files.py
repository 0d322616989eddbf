"""list_files, read_file, write_file and edit_file on real files, called as the agent calls them."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from swecli.tools.base import ToolContext, ToolError
from swecli.tools.files import (
    EDIT_FILE,
    LIST_LIMIT,
    MAX_EDIT_BYTES,
    READ_CHAR_BUDGET,
    WRITE_FILE,
    EditFileArgs,
    WriteFileArgs,
    preview_write,
)
from swecli.tools.grep import GrepArgs, search
from tests.tools.conftest import RunTool


def make(root: Path, *files: str) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{name}\n")


# ------------------------------------------------------------------------------------------------ list_files


def test_list_files_shows_a_tree_and_respects_gitignore(project: Path, run_tool: RunTool) -> None:
    make(project, "README.md", "src/app.py", "src/util/helpers.py", "node_modules/x/index.js", ".git/HEAD",
         "debug.log")
    (project / ".gitignore").write_text("node_modules/\n*.log\n")
    result = run_tool("list_files")
    assert not result.is_error
    assert result.content.splitlines()[:7] == [
        "./", "  .gitignore", "  README.md", "  src/", "    app.py", "    util/", "      helpers.py"]
    assert "node_modules" not in result.content
    assert "debug.log" not in result.content
    assert ".git/" not in result.content
    assert "(2 gitignored entries not shown.)" in result.content
    assert result.summary == "6 entries"
    assert result.meta["entries"] == 6


def test_list_files_shows_whole_levels_within_the_limit(project: Path, run_tool: RunTool) -> None:
    for pkg in range(5):
        for mod in range(120):
            make(project, f"pkg{pkg}/sub/m{mod}.py")
    make(project, "setup.py")
    result = run_tool("list_files")
    lines = result.content.splitlines()
    # Levels 1-2 fit (6 + 5 entries); level 3 (600 files) would pass the limit, so sub/ shows a count.
    assert "    sub/ (120 entries)" in lines
    assert not any(line.strip().startswith("m0.py") for line in lines)
    assert "would pass the 500-entry limit" in result.content
    assert result.meta["levels"] == 2
    assert result.meta["truncated"] is True
    # Listing one of them shows its files.
    sub = run_tool("list_files", path="pkg0/sub")
    assert sub.summary == "120 entries"
    assert "  m119.py" in sub.content.splitlines()


def test_list_files_caps_a_huge_directory_and_counts_the_rest(project: Path, run_tool: RunTool) -> None:
    for i in range(LIST_LIMIT + 37):
        (project / f"f{i:04}.txt").write_text("")
    result = run_tool("list_files")
    assert result.summary == f"{LIST_LIMIT} entries"
    assert "... 37 more entries not shown (limit 500)" in result.content
    assert "  f0499.txt" in result.content
    assert "f0500.txt" not in result.content


def test_list_files_max_depth(project: Path, run_tool: RunTool) -> None:
    make(project, "a/b/c/d.txt")
    result = run_tool("list_files", max_depth=1)
    assert result.content.splitlines()[:2] == ["./", "  a/ (1 entry)"]
    assert "max_depth=1" in result.content
    assert "d.txt" in run_tool("list_files", max_depth=4).content


def test_list_files_glob_lists_matching_paths(project: Path, run_tool: RunTool) -> None:
    make(project, "a.py", "src/b.py", "src/c.txt", "tests/test_b.py", "venv/lib/x.py")
    (project / ".gitignore").write_text("venv/\n")
    result = run_tool("list_files", glob="**/*.py")
    assert result.content.splitlines() == ["a.py", "src/b.py", "tests/test_b.py"]
    assert result.summary == "3 files"
    scoped = run_tool("list_files", path="src", glob="*.py")
    assert scoped.content == "src/b.py"  # paths stay relative to the project root
    none = run_tool("list_files", glob="*.rs")
    assert not none.is_error
    assert "No files match" in none.content


def test_list_files_glob_is_capped_with_a_count(project: Path, run_tool: RunTool) -> None:
    for i in range(LIST_LIMIT + 5):
        (project / f"m{i:04}.py").write_text("")
    result = run_tool("list_files", glob="*.py")
    assert len(result.content.splitlines()) == LIST_LIMIT + 1
    assert "5 more matching files not shown" in result.content
    assert result.full is not None and result.full.lines == LIST_LIMIT + 5  # the whole list, for the saved file
    assert (result.full.text(10**6) or "").endswith(f"m{LIST_LIMIT + 4:04}.py\n")
    assert run_tool("list_files", glob="m000*.py").full is None
    assert result.meta["total"] == LIST_LIMIT + 5


def test_list_files_marks_symlinks_and_does_not_follow_them(project: Path, tmp_path: Path,
                                                            run_tool: RunTool) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("x")
    (project / "ext").symlink_to(outside)
    result = run_tool("list_files")
    assert "  ext@" in result.content.splitlines()
    assert "secret.txt" not in result.content


def test_list_files_errors(project: Path, run_tool: RunTool) -> None:
    make(project, "src/a.py")
    assert "outside the project root" in run_tool("list_files", path="..").content
    missing = run_tool("list_files", path="scr")
    assert missing.is_error
    assert "Did you mean: src" in missing.content
    assert run_tool("list_files", path="src/a.py").content == "src/a.py"
    (project / "empty").mkdir()
    assert "(empty directory)" in run_tool("list_files", path="empty").content


# ------------------------------------------------------------------------------------------------ read_file


def test_read_file_numbers_lines_like_cat_n(project: Path, run_tool: RunTool) -> None:
    (project / "a.py").write_text("import os\n\nprint(os.getcwd())\n")
    result = run_tool("read_file", path="a.py")
    assert result.content == "     1\timport os\n     2\t\n     3\tprint(os.getcwd())"
    assert result.summary == "3 lines"
    assert result.meta == {"path": "a.py", "lines": 3, "total_lines": 3, "offset": 1, "end": 3}


def test_read_file_offset_and_limit(project: Path, run_tool: RunTool) -> None:
    (project / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = run_tool("read_file", path="n.txt", offset=4, limit=3)
    assert result.content.splitlines()[:3] == ["     4\tline 4", "     5\tline 5", "     6\tline 6"]
    assert "... 4 more lines; call read_file with offset=7 to continue." in result.content
    assert result.summary == "lines 4-6 of 10"


def test_read_file_pages_through_a_huge_file(project: Path, run_tool: RunTool) -> None:
    (project / "big.log").write_text("".join(f"entry {i}\n" for i in range(1, 5121)))
    first = run_tool("read_file", path="big.log")
    assert first.meta["lines"] == 2000
    assert first.meta["total_lines"] == 5120
    assert first.content.endswith("... 3,120 more lines; call read_file with offset=2001 to continue.")
    second = run_tool("read_file", path="big.log", offset=2001)
    assert second.content.startswith("  2001\tentry 2001\n")
    assert "offset=4001" in second.content
    last = run_tool("read_file", path="big.log", offset=4001)
    assert last.content.splitlines()[-1] == "  5120\tentry 5120"
    assert "more lines" not in last.content
    assert last.summary == "lines 4001-5120 of 5,120"


def test_read_file_counts_a_last_line_without_newline(project: Path, run_tool: RunTool) -> None:
    (project / "f.txt").write_text("a\nb\nc")
    assert run_tool("read_file", path="f.txt").meta["total_lines"] == 3
    assert "1 more lines" in run_tool("read_file", path="f.txt", limit=2).content


def test_read_file_cuts_very_long_lines(project: Path, run_tool: RunTool) -> None:
    (project / "min.js").write_text("x" * 5000 + "\nshort\n")
    result = run_tool("read_file", path="min.js")
    first = result.content.splitlines()[0]
    assert first.startswith("     1\t" + "x" * 2000 + "…")
    assert "3,000 more characters on this line" in first
    assert "longer than 2,000 characters were cut" in result.content


def test_read_file_stops_early_on_a_page_of_long_lines(project: Path, run_tool: RunTool) -> None:
    (project / "wide.txt").write_text(("y" * 1500 + "\n") * 300)
    result = run_tool("read_file", path="wide.txt")
    shown = result.meta["lines"]
    assert shown < 300
    assert shown * 1500 >= READ_CHAR_BUDGET
    assert f"call read_file with offset={shown + 1}" in result.content


def test_read_file_shows_a_file_in_its_own_encoding(project: Path, run_tool: RunTool) -> None:
    (project / "latin.txt").write_bytes("café crème\r\nthé\r\n".encode("latin-1"))
    assert run_tool("read_file", path="latin.txt").content == "     1\tcafé crème\n     2\tthé"
    (project / "wide.txt").write_bytes("déjà vu\nline two\n".encode("utf-16"))  # NUL bytes, but a BOM
    wide = run_tool("read_file", path="wide.txt", offset=2)
    assert wide.content == "     2\tline two" and wide.meta["total_lines"] == 2
    # A legacy line far past the part sniffed for the encoding is still read in the legacy encoding.
    (project / "late.txt").write_bytes(b"ascii\n" * 200_000 + "fin: crème\n".encode("latin-1"))
    assert run_tool("read_file", path="late.txt", offset=200_001).content == "200001\tfin: crème"


def test_read_file_refuses_binary_files(project: Path, run_tool: RunTool) -> None:
    (project / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)))
    result = run_tool("read_file", path="logo.png")
    assert result.is_error
    assert "logo.png is a binary file" in result.content


def test_read_file_errors(project: Path, run_tool: RunTool) -> None:
    (project / "main.py").write_text("x\n")
    (project / "empty.txt").write_text("")
    missing = run_tool("read_file", path="mian.py")
    assert missing.is_error
    assert "File not found: mian.py" in missing.content
    assert "Did you mean: main.py" in missing.content
    assert "is a directory" in run_tool("read_file", path=".").content
    past = run_tool("read_file", path="main.py", offset=5)
    assert past.is_error
    assert "past the end of main.py, which has 1 lines" in past.content
    assert run_tool("read_file", path="empty.txt").content == "(empty file)"


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "link/secret.txt"])
def test_read_file_is_confined_to_the_root(project: Path, tmp_path: Path, run_tool: RunTool, path: str) -> None:
    (tmp_path / "outside.txt").write_text("nope\n")
    secret_dir = tmp_path / "secrets"
    secret_dir.mkdir()
    (secret_dir / "secret.txt").write_text("s3cret\n")
    (project / "link").symlink_to(secret_dir)
    result = run_tool("read_file", path=path)
    assert result.is_error
    assert "outside the project root" in result.content
    assert "s3cret" not in result.content


@pytest.mark.parametrize(("raw", "expected"), [
    ('{"path": "a.py"', "arguments for read_file end before the JSON object is complete"),
    ('{"path" "a.py"}', "Invalid JSON arguments for read_file"),
    ('["a.py"]', "must be a JSON object"),
    ("{}", "path: Field required"),
    ('{"path": "a.py", "offset": 0}', "offset"),
    ('{"path": "a.py", "limit": 100000}', "limit"),
    ('{"path": 3}', "path"),
])
def test_malformed_arguments_become_error_results(project: Path, run_tool: RunTool, raw: str, expected: str) -> None:
    (project / "a.py").write_text("x\n")
    result = run_tool("read_file", raw)
    assert result.is_error
    assert expected in result.content


# ------------------------------------------------------------------------------------------------ write_file


def test_write_file_creates_parents_and_reports_a_new_file_diff(project: Path, run_tool: RunTool) -> None:
    result = run_tool("write_file", path="pkg/sub/mod.py", content="a = 1\nb = 2\n")
    assert not result.is_error
    assert (project / "pkg" / "sub" / "mod.py").read_text() == "a = 1\nb = 2\n"
    assert result.summary == "wrote 2 lines"
    assert result.diff.startswith("--- /dev/null\n+++ b/pkg/sub/mod.py\n")
    assert "+a = 1\n+b = 2\n" in result.diff
    assert result.meta["created"] is True
    assert "new file" in result.content


def test_write_file_overwrite_diffs_against_the_old_content(project: Path, run_tool: RunTool) -> None:
    (project / "c.txt").write_text("one\ntwo\n")
    result = run_tool("write_file", path="c.txt", content="one\nTWO\nthree\n")
    assert "-two\n+TWO\n+three\n" in result.diff
    assert result.meta == {"path": "c.txt", "lines": 3, "created": False, "added": 2, "removed": 1}
    assert (project / "c.txt").read_text() == "one\nTWO\nthree\n"


def test_write_file_keeps_crlf_line_endings(project: Path, run_tool: RunTool) -> None:
    (project / "win.bat").write_bytes(b"@echo off\r\necho 1\r\n")
    run_tool("write_file", path="win.bat", content="@echo off\necho 2\n")
    assert (project / "win.bat").read_bytes() == b"@echo off\r\necho 2\r\n"


def test_write_file_preview_shows_the_diff_without_writing(project: Path, ctx: ToolContext) -> None:
    (project / "c.txt").write_text("old\n")
    assert WRITE_FILE.preview is not None
    preview = WRITE_FILE.preview(WriteFileArgs(path="c.txt", content="new\n"), ctx)
    assert "-old\n+new\n" in preview
    assert (project / "c.txt").read_text() == "old\n"
    same = WRITE_FILE.preview(WriteFileArgs(path="c.txt", content="old\n"), ctx)
    assert "no changes" in same


def test_write_file_is_confined(project: Path, tmp_path: Path, run_tool: RunTool) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (project / "link").symlink_to(outside)
    for path in ["../evil.txt", str(tmp_path / "evil.txt"), "link/evil.txt"]:
        result = run_tool("write_file", path=path, content="x")
        assert result.is_error
        assert "outside the project root" in result.content
    assert not (tmp_path / "evil.txt").exists()
    assert not (outside / "evil.txt").exists()


def test_write_file_to_a_directory_is_an_error(project: Path, run_tool: RunTool) -> None:
    (project / "src").mkdir()
    result = run_tool("write_file", path="src", content="x")
    assert result.is_error
    assert "is a directory" in result.content


# ------------------------------------------------------------------------------------------------ edit_file

SOURCE = "def greet(name):\n    return 'hi ' + name\n\n\ndef bye(name):\n    return 'bye ' + name\n"


def test_edit_file_replaces_exactly_one_match(project: Path, run_tool: RunTool) -> None:
    (project / "g.py").write_text(SOURCE)
    result = run_tool("edit_file", path="g.py", old_string="return 'hi ' + name",
                      new_string="return f'hello {name}'")
    assert not result.is_error, result.content
    assert (project / "g.py").read_text() == SOURCE.replace("return 'hi ' + name", "return f'hello {name}'")
    assert "-    return 'hi ' + name\n+    return f'hello {name}'\n" in result.diff
    assert result.summary == "replaced 1 occurrence · +1 -1"
    assert result.content.startswith("Edited g.py: replaced 1 occurrence.")
    assert "+    return f'hello {name}'" in result.content


def test_edit_file_ambiguous_match_is_refused_with_line_numbers(project: Path, run_tool: RunTool) -> None:
    (project / "g.py").write_text(SOURCE)
    result = run_tool("edit_file", path="g.py", old_string="(name):", new_string="(who):")
    assert result.is_error
    assert "matches 2 times in g.py (at lines 1, 5)" in result.content
    assert "replace_all" in result.content
    assert (project / "g.py").read_text() == SOURCE


def test_edit_file_replace_all(project: Path, run_tool: RunTool) -> None:
    (project / "g.py").write_text(SOURCE)
    result = run_tool("edit_file", path="g.py", old_string="name", new_string="who", replace_all=True)
    assert not result.is_error
    assert "name" not in (project / "g.py").read_text()
    assert result.meta["replacements"] == 4


def test_edit_file_missing_text_suggests_reading_the_file(project: Path, run_tool: RunTool) -> None:
    (project / "g.py").write_text(SOURCE)
    result = run_tool("edit_file", path="g.py", old_string="return 'howdy'", new_string="x")
    assert result.is_error
    assert "old_string was not found in g.py" in result.content
    assert "read_file" in result.content


def test_edit_file_points_out_a_whitespace_only_mismatch(project: Path, run_tool: RunTool) -> None:
    (project / "g.py").write_text(SOURCE)
    result = run_tool("edit_file", path="g.py", old_string="def bye(name):\n  return 'bye '  +  name",
                      new_string="x")
    assert result.is_error
    assert "A match exists when whitespace is ignored (at line 5)" in result.content


def test_edit_file_spots_copied_line_numbers(project: Path, run_tool: RunTool) -> None:
    (project / "g.py").write_text(SOURCE)
    result = run_tool("edit_file", path="g.py", old_string="     1\tdef greet(name):", new_string="x")
    assert result.is_error
    assert "line-number prefixes" in result.content


def test_edit_file_keeps_crlf_and_legacy_encodings(project: Path, run_tool: RunTool) -> None:
    (project / "w.txt").write_bytes(b"alpha\r\nbeta\r\ngamma\r\n")
    assert not run_tool("edit_file", path="w.txt", old_string="beta\ngamma", new_string="BETA\ngamma").is_error
    assert (project / "w.txt").read_bytes() == b"alpha\r\nBETA\r\ngamma\r\n"
    (project / "l.txt").write_bytes(b"caf\xe9 = 1\nx = 2\n")
    assert not run_tool("edit_file", path="l.txt", old_string="x = 2", new_string="x = 3").is_error
    assert (project / "l.txt").read_bytes() == b"caf\xe9 = 1\nx = 3\n"


def test_edit_file_preview_does_not_write(project: Path, ctx: ToolContext) -> None:
    (project / "g.py").write_text(SOURCE)
    assert EDIT_FILE.preview is not None
    preview = EDIT_FILE.preview(EditFileArgs(path="g.py", old_string="def bye", new_string="def ciao"), ctx)
    assert preview.startswith("--- a/g.py\n+++ b/g.py\n")
    assert "+def ciao(name):" in preview
    assert (project / "g.py").read_text() == SOURCE


def test_edit_file_errors(project: Path, run_tool: RunTool) -> None:
    (project / "g.py").write_text(SOURCE)
    (project / "img.bin").write_bytes(b"\0\1")
    missing = run_tool("edit_file", path="h.py", old_string="a", new_string="b")
    assert missing.is_error
    assert "write_file" in missing.content
    assert "binary" in run_tool("edit_file", path="img.bin", old_string="a", new_string="b").content
    assert "identical" in run_tool("edit_file", path="g.py", old_string="bye", new_string="bye").content
    empty = run_tool("edit_file", path="g.py", old_string="", new_string="x")
    assert empty.is_error
    assert "old_string" in empty.content
    outside = run_tool("edit_file", path="/etc/hosts", old_string="a", new_string="b")
    assert "outside the project root" in outside.content


def test_special_files_are_refused_instead_of_blocking(project: Path, ctx: ToolContext, run_tool: RunTool) -> None:
    os.mkfifo(project / "pipe")
    (project / "a.txt").write_text("x\n")
    result = run_tool("read_file", path="pipe")
    assert result.is_error
    assert "not a regular file" in result.content
    # Walks skip it rather than blocking on it.
    assert search(GrepArgs(pattern="x"), ctx, engine="python").total == 1
    assert "not a regular file" in run_tool("grep", pattern="x", path="pipe").content
    assert "  pipe" in run_tool("list_files").content


# ------------------------------------------------------------- what a hostile repository can ship (issue 22)


def test_write_and_edit_refuse_a_fifo_instead_of_waiting_on_it(project: Path, run_tool: RunTool) -> None:
    os.mkfifo(project / "pipe")  # a repository can ship one; opening it to read blocks until a writer comes
    for result in (run_tool("write_file", path="pipe", content="x"),
                   run_tool("edit_file", path="pipe", old_string="a", new_string="b"),
                   run_tool("read_file", path="pipe")):
        assert result.is_error and "is not a regular file" in result.content, result.content
    with pytest.raises(ToolError, match="not a regular file"):  # the preview, shown before approval, too
        preview_write(WriteFileArgs(path="pipe", content="x"), ToolContext(root=project))


def test_a_symlink_loop_is_one_sentence(project: Path, run_tool: RunTool) -> None:
    (project / "loop").symlink_to("loop2")
    (project / "loop2").symlink_to("loop")
    for name, args in (("read_file", {"path": "loop"}), ("write_file", {"path": "loop", "content": "x"}),
                       ("edit_file", {"path": "loop/x", "old_string": "a", "new_string": "b"})):
        result = run_tool(name, **args)
        assert result.is_error and "cannot be followed" in result.content and "RuntimeError" not in result.content


def test_a_one_line_file_of_hundreds_of_megabytes_is_read_in_bounded_memory(project: Path) -> None:
    """read_file kept a whole line in memory: 889 MB for a 300 MB line before the independent check."""
    with (project / "big.txt").open("wb") as handle:
        handle.write(b"x" * 200_000_000)
    # VmHWM, not ru_maxrss: after fork and exec, ru_maxrss still counts the forking test process
    probe = ("import re; from pathlib import Path; from swecli.tools.base import ToolContext; "
             "from swecli.tools.files import ReadFileArgs, read_file; "
             f"r = read_file(ReadFileArgs(path='big.txt'), ToolContext(root=Path({str(project)!r}))); "
             "print(int(re.search(r'VmHWM:\\s+(\\d+)', Path('/proc/self/status').read_text())[1]) // 1024); "
             "print(r.content)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    peak_mb, content = out.split("\n", 1)
    assert int(peak_mb) < 150, peak_mb  # about the interpreter's own size, not the line's
    assert "199,998,000 more characters on this line" in content


def test_edit_file_refuses_a_file_too_big_to_edit_and_write_file_replaces_it_unread(
        project: Path, run_tool: RunTool) -> None:
    with (project / "huge.json").open("wb") as handle:
        handle.write(b"a" * (MAX_EDIT_BYTES + 1))
    edit = run_tool("edit_file", path="huge.json", old_string="a", new_string="b")
    assert edit.is_error and "more than edit_file handles" in edit.content
    write = run_tool("write_file", path="huge.json", content="{}\n")
    assert not write.is_error and (project / "huge.json").read_text() == "{}\n"
    assert "too big to show what changes" in write.diff


def test_writes_never_keep_a_setuid_or_setgid_bit(project: Path, run_tool: RunTool) -> None:
    script = project / "tool.sh"
    script.write_text("echo hi\n")
    script.chmod(0o6755)
    assert not run_tool("write_file", path="tool.sh", content="echo changed\n").is_error
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
