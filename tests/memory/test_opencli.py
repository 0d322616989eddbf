from __future__ import annotations

import os
from pathlib import Path

from swecli.memory.opencli import MEMORY_FILES, load_memory, load_memory_prompt, memory_prompt


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
