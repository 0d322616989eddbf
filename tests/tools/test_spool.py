"""The whole output of a tool: in memory while small, in a temporary file beyond, counted exactly."""

from __future__ import annotations

import gc
from pathlib import Path

from swecli.tools.spool import FullOutput, Spool


def test_a_small_output_stays_in_memory_with_exact_counts() -> None:
    spool = Spool()
    spool.write(b"alpha\nbe")
    spool.write("ta\nlast line without newline")
    full = spool.finish()
    assert full.data == b"alpha\nbeta\nlast line without newline" and full.path is None
    assert (full.size, full.lines, full.longest_line) == (36, 3, 25)
    assert full.head_lines(2) == ["alpha", "beta"] and full.tail_lines(1) == ["last line without newline"]
    assert full.text(1000) == "alpha\nbeta\nlast line without newline" and full.text(10) is None


def test_a_big_output_moves_to_a_temporary_file_that_is_moved_or_deleted(tmp_path: Path) -> None:
    spool = Spool(memory_bytes=1000)
    for i in range(1, 5001):
        spool.write(f"{i}\n".encode())
    full = spool.finish()
    assert full.data is None and full.path is not None and full.path.exists()
    assert (full.lines, full.size) == (5000, sum(len(f"{i}\n") for i in range(1, 5001)))
    assert full.head_lines(3) == ["1", "2", "3"] and full.tail_lines(2) == ["4999", "5000"]
    temporary = full.path
    target = tmp_path / "kept" / "out.txt"
    full.save_to(target)
    assert not temporary.exists() and target.read_text().splitlines()[-1] == "5000"
    del full
    gc.collect()
    assert target.exists()  # saved files belong to the project, not to the spool

    other = Spool(memory_bytes=10)
    other.write(b"x" * 100)
    dropped = other.finish()
    assert dropped.path is not None
    leftover = dropped.path
    del dropped
    gc.collect()
    assert not leftover.exists()  # nobody took it: the temporary file does not outlive it


def test_a_runaway_output_keeps_its_start_and_its_end_and_says_where_the_gap_is() -> None:
    spool = Spool(memory_bytes=100, save_limit=1000)
    for i in range(1, 20_001):
        spool.write(f"line {i}\n".encode())
    full = spool.finish()
    assert full.dropped == full.size - 1000 and full.lines == 20_000
    assert full.path is not None
    saved = full.path.read_text()
    assert saved.startswith("line 1\nline 2\n") and saved.endswith("line 20000\n")
    assert f"[swecli: {full.dropped:,} bytes of this output were not saved" in saved
    assert full.tail_lines(1) == ["line 20000"] and full.text(10**9) is None
    full.discard()


def test_huge_lines_are_previewed_from_their_start(tmp_path: Path) -> None:
    spool = Spool(memory_bytes=10)
    spool.write(b"a" * 200_000 + b"\nshort\n")
    full = spool.finish()
    head = full.head_lines(2)
    assert head[0] == "a" * 65536 and head[1] == "short" and full.longest_line == 200_000
    assert FullOutput.of_text("x\ny").lines == 2
    full.discard()
