from __future__ import annotations

import os
from pathlib import Path

from swecli.memory.opencli import (
    MAX_MEMORY_BYTES,
    MEMORY_FILES,
    load_memory,
    load_memory_prompt,
    memory_prompt,
    refused_memory_files,
)


def words(text: str) -> int:
    """A deterministic stand-in tokenizer: one token per whitespace-separated word."""
    return len(text.split())


def test_all_present_files_load_in_precedence_order(project: Path) -> None:
    (project / "CLAUDE.md").write_text("claude rules")
    (project / "OPENCLI.md").write_text("opencli rules")
    (project / "AGENTS.md").write_text("agents rules")
    files = load_memory(project, 1000, words)
    assert [f.name for f in files] == list(MEMORY_FILES)
    assert [f.text for f in files] == ["opencli rules", "agents rules", "claude rules"]
    assert not any(f.truncated for f in files)


def test_missing_files_are_skipped(project: Path) -> None:
    (project / "CLAUDE.md").write_text("only claude")
    assert [f.name for f in load_memory(project, 1000, words)] == ["CLAUDE.md"]
    assert load_memory(project / "nowhere", 1000, words) == []


def test_identical_files_load_once(project: Path) -> None:
    (project / "AGENTS.md").write_text("shared rules\n")
    os.symlink(project / "AGENTS.md", project / "CLAUDE.md")
    (project / "OPENCLI.md").write_text("  \n")  # empty: nothing to load
    assert [f.name for f in load_memory(project, 1000, words)] == ["AGENTS.md"]


def test_a_huge_file_is_cut_at_a_line_with_a_note(project: Path) -> None:
    (project / "OPENCLI.md").write_text("\n".join(f"line {i} with five words" for i in range(1000)))
    [memory] = load_memory(project, 100, words)
    assert memory.truncated and words(memory.text) <= 100
    lines = memory.text.splitlines()
    kept = len(lines) - 1
    assert lines[:kept] == [f"line {i} with five words" for i in range(kept)] and kept >= 15
    assert lines[-1] == f"[truncated: {1000 - kept} more lines in OPENCLI.md; read_file it for the rest]"
    assert memory.omitted_lines == 1000 - kept


def test_the_budget_is_shared_in_precedence_order(project: Path) -> None:
    (project / "OPENCLI.md").write_text("\n".join(["a b c d e"] * 10))  # 50 tokens
    (project / "AGENTS.md").write_text("\n".join(["f g h i j"] * 10))
    (project / "CLAUDE.md").write_text("k l m")
    files = load_memory(project, 70, words)
    assert files[0].text.count("a b c d e") == 10 and not files[0].truncated
    assert files[1].truncated and "more lines in AGENTS.md" in files[1].text
    assert sum(words(f.text) for f in files) <= 70
    assert [f.name for f in files] == ["OPENCLI.md", "AGENTS.md"]  # nothing left for CLAUDE.md


def test_zero_budget_loads_nothing(project: Path) -> None:
    (project / "OPENCLI.md").write_text("rules")
    assert load_memory(project, 0, words) == []


def test_memory_prompt_names_files_and_precedence(project: Path) -> None:
    (project / "OPENCLI.md").write_text("Use tabs.")
    (project / "CLAUDE.md").write_text("Use spaces.")
    prompt = load_memory_prompt(project, 1000, words)
    assert prompt.index('<memory file="OPENCLI.md">\nUse tabs.\n</memory>') < prompt.index(
        '<memory file="CLAUDE.md">\nUse spaces.\n</memory>')
    assert "earlier file wins" in prompt
    assert memory_prompt([]) == ""


def test_a_memory_file_leading_out_of_the_project_is_not_read_and_is_named(project: Path, tmp_path: Path) -> None:
    # a repository shipped `AGENTS.md -> ~/.ssh/id_rsa`: the key went into every request's system prompt
    outside = tmp_path / "outside" / "id_rsa"
    outside.parent.mkdir()
    outside.write_text("PRIVATE KEY")
    (project / "AGENTS.md").symlink_to(outside)
    (project / "OPENCLI.md").write_text("inside rules")
    (project / "CLAUDE.md").symlink_to("OPENCLI.md")  # inside the project: read (and loaded once, as before)
    assert [(f.name, f.text) for f in load_memory(project, 1000, words)] == [("OPENCLI.md", "inside rules")]
    [refused] = refused_memory_files(project)
    assert refused.startswith("AGENTS.md was not loaded into the prompt") and str(outside) in refused


def test_a_memory_file_that_is_a_fifo_or_a_device_neither_hangs_nor_fills_memory(project: Path) -> None:
    os.mkfifo(project / "OPENCLI.md")  # reading one waited for a writer forever
    (project / "AGENTS.md").symlink_to("/dev/zero")  # outside the project, and endless
    (project / "CLAUDE.md").write_text("x " * (MAX_MEMORY_BYTES // 2 + 10))
    files = load_memory(project, 10, words)
    assert [f.name for f in files] == ["CLAUDE.md"] and files[0].truncated
    assert refused_memory_files(project) == [
        "AGENTS.md was not loaded into the prompt: it leads to /dev/zero, outside the project or into the "
        "user's credentials. swecli reads memory files from inside the project only; copy the file in, or link "
        "to one inside."]
