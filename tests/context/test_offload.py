from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest

from swecli.context.offload import (
    EXACT_COUNT_BYTES,
    MAX_LINES,
    OFFLOAD_DIR,
    OFFLOAD_MARKER,
    OffloadError,
    offload,
    offload_full,
    offload_path_in,
    safe_name,
    save_full,
    save_output,
    split_lines,
)
from swecli.context.tokens import Tokenizer
from swecli.messages import ToolCall
from swecli.session.secrets import Redactor
from swecli.tools.base import ToolContext
from swecli.tools.builtin import default_registry
from swecli.tools.grep import Engine, GrepArgs, search
from swecli.tools.spool import MEMORY_BYTES, FullOutput, Spool

count = Tokenizer("o200k_base")


def numbered_output(n: int, width: int = 12) -> str:
    """A log-like output whose every line says which line it is."""
    return "\n".join(f"line {i:05d}: " + "value " * width for i in range(1, n + 1))


def run_tool(root: Path, name: str, **args: object) -> str:
    result = default_registry().run(ToolCall(id="t", name=name, arguments=json.dumps(args)), ToolContext(root=root))
    assert not result.is_error, result.content
    return result.content


def omitted_range(preview: str) -> tuple[int, int, int]:
    match = re.search(r"lines ([\d,]+)-([\d,]+) omitted .*offset=(\d+), limit=(\d+)", preview)
    assert match, preview
    first, last = (int(match.group(i).replace(",", "")) for i in (1, 2))
    assert int(match.group(3)) == first
    return first, last, int(match.group(4))


def test_small_output_stays_in_the_context(project: Path) -> None:
    assert offload(project, "c1", "bash", "ok\nexit code 0", count, 1000, 40) is None
    assert offload(project, "c1", "bash", numbered_output(MAX_LINES), count, 100_000, 40) is None
    assert not (project / OFFLOAD_DIR).exists()


def test_large_output_is_saved_in_full_with_a_head_and_tail_preview(project: Path) -> None:
    content = numbered_output(3000)
    result = offload(project, "call_7", "bash", content, count, 8000, 40)
    assert result is not None
    assert result.path == f"{OFFLOAD_DIR}/call_7.txt"
    assert (project / result.path).read_text(encoding="utf-8") == content
    assert (result.lines, result.chars, result.tokens) == (3000, len(content), count(content))
    preview = result.content
    assert preview.startswith(OFFLOAD_MARKER)
    assert "3,000 lines" in preview and f"{len(content):,} characters" in preview
    assert f"{result.tokens:,} tokens" in preview
    assert "line 00001:" in preview and "line 00020:" in preview and "line 00021:" not in preview
    assert "line 03000:" in preview and "line 02981:" in preview and "line 02980:" not in preview
    assert omitted_range(preview)[:2] == (21, 2980)
    assert f'grep(pattern=..., path="{result.path}")' in preview
    assert count(preview) < 2000
    assert offload_path_in(preview) == result.path


def test_many_short_lines_are_offloaded_below_the_token_threshold(project: Path) -> None:
    content = "\n".join(f"f{i}.py" for i in range(MAX_LINES + 1))
    result = offload(project, "c", "list_files", content, count, 100_000, 10)
    assert result is not None and result.lines == MAX_LINES + 1


def test_read_file_pages_go_by_tokens_only(project: Path) -> None:
    (project / "mid.py").write_text("\n".join(f"x{i} = {i}" for i in range(600)))
    page = run_tool(project, "read_file", path="mid.py")
    assert offload(project, "c", "read_file", page, count, 8000, 40, arguments='{"path": "mid.py"}') is None
    assert offload(project, "c", "bash", page, count, 8000, 40) is not None


def test_read_file_on_the_offload_file_returns_the_omitted_lines(project: Path) -> None:
    content = numbered_output(1000)
    result = offload(project, "call_1", "grep", content, count, 2000, 10)
    assert result is not None
    first, last, limit = omitted_range(result.content)
    page = run_tool(project, "read_file", path=result.path, offset=first, limit=limit)
    lines = [line.split("\t", 1) for line in page.splitlines() if "\t" in line]
    assert [int(n) for n, _ in lines] == list(range(first, first + limit))
    assert [text for _, text in lines] == split_lines(content)[first - 1:first - 1 + limit]
    # and the whole omitted region, by offset
    rest = run_tool(project, "read_file", path=result.path, offset=first, limit=last - first + 1)
    assert f"line {last:05d}:" in rest and f"line {last + 1:05d}:" not in rest


@pytest.mark.parametrize("engine", ["rg", "python"])
def test_grep_finds_omitted_lines_in_the_offload_file(project: Path, engine: Engine) -> None:
    import shutil

    if engine == "rg" and shutil.which("rg") is None:
        pytest.skip("ripgrep not installed")
    result = offload(project, "call_2", "bash", numbered_output(1000), count, 2000, 10)
    assert result is not None
    matches = search(GrepArgs(pattern="line 00500:", path=result.path), ToolContext(root=project), engine=engine)
    assert [(h.line, h.text.startswith("line 00500:")) for h in matches.hits] == [(500, True)]
    assert "line 00500:" in run_tool(project, "grep", pattern="line 00500:", path=result.path)


def test_call_ids_become_safe_unique_file_names(project: Path) -> None:
    assert safe_name("call_1") == "call_1"
    odd = safe_name("../../etc/passwd")
    assert "/" not in odd and not odd.startswith(".")
    assert safe_name("a/b") != safe_name("a_b")
    path = save_output(project, "../../x", "data")
    assert (project / path).resolve().parent == (project / OFFLOAD_DIR).resolve()


def test_an_existing_file_is_never_overwritten(project: Path) -> None:
    first = save_output(project, "call_1", "first session")
    again = save_output(project, "call_1", "first session")
    other = save_output(project, "call_1", "second session, same id")
    assert first == again != other
    assert (project / first).read_text() == "first session"
    assert (project / other).read_text() == "second session, same id"


def test_reading_an_offload_file_never_offloads_again(project: Path) -> None:
    big = offload(project, "call_3", "bash", numbered_output(3000), count, 2000, 10)
    assert big is not None
    before = sorted((project / OFFLOAD_DIR).iterdir())
    page = run_tool(project, "read_file", path=big.path)  # default limit: 2000 lines, far over the threshold
    args = json.dumps({"path": "./" + big.path})
    clipped = offload(project, "call_4", "read_file", page, count, 2000, 10, arguments=args)
    assert clipped is not None and not clipped.saved and clipped.path == big.path
    assert sorted((project / OFFLOAD_DIR).iterdir()) == before
    assert count(clipped.content) <= 2000
    match = re.search(r"offset=(\d+), limit=(\d+)", clipped.content)
    assert match
    offset = int(match.group(1))
    shown = [int(line.split("\t")[0]) for line in clipped.content.splitlines() if "\t" in line]
    assert shown == list(range(1, offset))
    follow = run_tool(project, "read_file", path=big.path, offset=offset, limit=int(match.group(2)))
    assert follow.splitlines()[0].split("\t")[0].strip() == str(offset)
    # a page within the threshold enters the context as is
    small = run_tool(project, "read_file", path=big.path, offset=5, limit=10)
    assert offload(project, "c5", "read_file", small, count, 2000, 10, arguments=json.dumps({"path": big.path})) is None


def test_read_file_of_a_project_file_is_offloaded_normally(project: Path) -> None:
    (project / "big.py").write_text(numbered_output(3000))
    page = run_tool(project, "read_file", path="big.py")
    result = offload(project, "c6", "read_file", page, count, 2000, 10, arguments=json.dumps({"path": "big.py"}))
    assert result is not None and result.saved and result.path.startswith(OFFLOAD_DIR)


def test_long_lines_are_cut_in_the_preview_and_the_footer_says_where_they_are(project: Path) -> None:
    content = "\n".join(["x" * 5000, "short", "y" * 5000])
    result = offload(project, "c7", "bash", content, count, 1000, 10)
    assert result is not None
    assert "[+4,700 chars]" in result.content
    assert "fold -w 2000" in result.content
    assert (project / result.path).read_text() == content


def test_nul_bytes_keep_the_file_readable(project: Path) -> None:
    content = "a\0b\n" * 600
    result = offload(project, "c8", "bash", content, count, 100_000, 10)
    assert result is not None
    assert "a\u2400b" in run_tool(project, "read_file", path=result.path, offset=300, limit=1)


def test_unwritable_folder_raises_a_clear_error(project: Path) -> None:
    (project / ".swecli").write_text("not a directory")
    with pytest.raises(OffloadError, match="stays in the context"):
        offload(project, "c9", "bash", numbered_output(3000), count, 2000, 10)


def test_offload_path_in_ignores_ordinary_text() -> None:
    assert offload_path_in("full text: `x`") is None
    assert offload_path_in("") is None


# --- outputs a tool cut: the whole of them is saved ------------------------------------------------

def cut_bash_output(root: Path, command: str, cap: int = 30_000) -> tuple[str, FullOutput]:
    from swecli.tools.bash import BASH

    result = BASH.fn(BASH.parse(json.dumps({"command": command})), ToolContext(root=root, max_output_chars=cap))
    assert result.full is not None
    return result.content, result.full


def test_a_cut_output_is_saved_whole_and_previewed_from_the_whole(project: Path) -> None:
    # 4.8 MB: past the spool's memory (1 MB: spooled to a temporary file) and past the size that is tokenized
    content, full = cut_bash_output(project, "seq 1 700000")
    spooled = full.path
    saved = offload_full(project, "call_9", "bash", content, full, count, 8000, 40)
    assert spooled is not None and not spooled.exists()  # moved, not copied and left behind
    whole = (project / saved.path).read_bytes()
    assert whole == b"".join(b"%d\n" % i for i in range(1, 700_001))
    assert len(whole) > max(EXACT_COUNT_BYTES, MEMORY_BYTES)
    assert (saved.lines, saved.chars) == (700_000, len(whole))
    header = saved.content.splitlines()[0]
    assert header == (f"{OFFLOAD_MARKER}: bash returned 700,000 lines, {len(whole):,} bytes, "
                      f"~{len(whole) // 4:,} tokens; full text: `{saved.path}`]")  # too big to tokenize: estimated
    lines = saved.content.splitlines()
    assert lines[1:21] == [str(i) for i in range(1, 21)]
    assert lines[-21:-1] == [str(i) for i in range(699_981, 700_001)]
    assert lines[-1] == "exit code 0"  # the tool's status ends every view of its output
    first, last, _ = omitted_range(saved.content)
    assert (first, last) == (21, 699_980)
    assert "699980" in run_tool(project, "read_file", path=saved.path, offset=last, limit=1)


def test_a_cut_output_under_the_threshold_keeps_the_tools_cut_and_says_where_the_rest_is(project: Path) -> None:
    content, full = cut_bash_output(project, "seq 1 300", cap=1000)
    saved = offload_full(project, "call_10", "bash", content, full, count, 8000, 40)
    assert saved.content.startswith(content)  # the tool's own head and tail
    assert saved.content.endswith(f"the whole of it (300 lines, 1,092 bytes, {saved.tokens:,} tokens) is saved in "
                                  f"`{saved.path}`: read_file or grep it there]")
    assert (project / saved.path).read_text() == "".join(f"{i}\n" for i in range(1, 301))


def test_a_second_output_of_the_same_call_id_gets_its_own_file(project: Path) -> None:
    first = offload_full(project, "same", "bash", "x", FullOutput.of_text("one\n"), count, 8000, 40)
    second = offload_full(project, "same", "bash", "y", FullOutput.of_text("two\n"), count, 8000, 40)
    assert first.path != second.path
    assert (project / first.path).read_text() == "one\n" and (project / second.path).read_text() == "two\n"


def test_saved_outputs_mask_secrets_and_are_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_API_KEY", "sk-env-0123456789")
    spool = Spool(memory_bytes=64)  # spooled to a file, read back in pieces
    for number in range(3000):
        spool.write(f"{number} sk-env-0123456789 sk-config-ABCDEFGH\n")
    whole = save_full(tmp_path, "call_1", spool.finish(), Redactor(["sk-config-ABCDEFGH", "sk-env-0123456789"]))
    small = save_output(tmp_path, "call_2", "printed sk-env-0123456789\n")  # default: the environment's secrets
    for rel in (whole, small):
        text = (tmp_path / rel).read_text()
        assert "sk-env" not in text and "sk-config" not in text and "[REDACTED]" in text
        assert stat.S_IMODE((tmp_path / rel).stat().st_mode) == 0o600
    assert (tmp_path / whole).read_text().count("[REDACTED] [REDACTED]") == 3000
    assert stat.S_IMODE((tmp_path / OFFLOAD_DIR).stat().st_mode) == 0o700
