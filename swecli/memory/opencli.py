"""Project memory files loaded into the stable part of the system prompt at session start.

Precedence: `OPENCLI.md` (swecli's own file, written by /init), then `AGENTS.md`, then `CLAUDE.md`
(read for interoperability with other agents). Every file present at the project root is loaded, in
that order, and the prompt says the earlier file wins where they disagree. A file identical to one
already loaded (CLAUDE.md as a symlink to AGENTS.md, say) is loaded once. The files share one token
budget, spent in order; a file that does not fit is cut at a line boundary and ends with a note
telling the model how to read the rest (and the files after it are not loaded).

A memory file must lead to a file inside the project, as the file tools' paths must: a repository that
ships `AGENTS.md -> ~/.ssh/id_rsa` does not get the user's key into the prompt (`refused_memory_files` says
so at the start of the session instead).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from swecli.records import datarecord

MEMORY_FILES = ("OPENCLI.md", "AGENTS.md", "CLAUDE.md")
"""In precedence order: earlier files win where instructions conflict."""
MAX_MEMORY_BYTES = 4 << 20
"""Read so far at most (the token budget cuts far sooner); a larger file is cut at this point first."""

CountTokens = Callable[[str], int]


@datarecord(frozen=True)
class MemoryFile:
    """A project memory file (AGENTS.md and the like) as it goes into the prompt."""

    name: str
    """The file's path relative to the project root, as the model can pass it to read_file."""
    text: str
    """What goes into the prompt (cut to the budget, with a note, when it did not fit)."""
    truncated: bool = False
    omitted_lines: int = 0


def truncation_note(omitted_lines: int, path: str) -> str:
    return f"[truncated: {omitted_lines} more lines in {path}; read_file it for the rest]"


def fit_to_budget(text: str, budget_tokens: int, count_tokens: CountTokens, path: str) -> tuple[str, int]:
    """(text, omitted line count): the longest prefix of whole lines that fits the budget together
    with the truncation note, or the text itself when it fits whole."""
    if budget_tokens <= 0:
        return "", len(text.splitlines())
    if count_tokens(text) <= budget_tokens:
        return text, 0
    lines = text.splitlines()
    # A token is rarely longer than 8 characters: lines past that bound cannot fit, so a huge file
    # costs a handful of token counts over a bounded prefix, not one count per line.
    limit, chars = 0, 0
    while limit < len(lines) and chars <= budget_tokens * 8:
        chars += len(lines[limit]) + 1
        limit += 1

    def fits(n: int) -> bool:
        kept = "\n".join(lines[:n])
        return count_tokens(f"{kept}\n{truncation_note(len(lines) - n, path)}") <= budget_tokens

    low, high = 0, limit  # invariant: fits(low) or low == 0
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    omitted = len(lines) - low
    note = truncation_note(omitted, path)
    kept = "\n".join(lines[:low])
    return (f"{kept}\n{note}" if kept else note), omitted


def load_memory(root: Path, budget_tokens: int, count_tokens: CountTokens) -> list[MemoryFile]:
    """The project's memory files, in precedence order, within `budget_tokens` in total."""
    loaded: list[MemoryFile] = []
    seen: set[str] = set()
    remaining = budget_tokens
    for name in MEMORY_FILES:
        text = _memory_text(root, name) if remaining > 0 else None
        if not text or text in seen:
            continue
        seen.add(text)
        fitted, omitted = fit_to_budget(text, remaining, count_tokens, name)
        # A cut file spends the rest of the budget: scraps of a lower-precedence file would only add noise.
        remaining = 0 if omitted else remaining - count_tokens(fitted)
        loaded.append(MemoryFile(name, fitted, truncated=omitted > 0, omitted_lines=omitted))
    return loaded


def _memory_text(root: Path, name: str) -> str | None:
    """The file's text; None when it is missing, not a regular file, or leads out of the project
    (`refused_memory_files` says why)."""
    text = project_text(root, root / name)
    return None if text is None else text.strip()


def project_text(root: Path, path: Path) -> str | None:
    """A project file swecli reads on its own for the model (a memory file; /init's template and existing
    OPENCLI.md), or None: missing, not a regular file, or leading out of the project (`OPENCLI.md ->
    ~/.ssh/id_rsa` in a cloned repository must not reach the model)."""
    from swecli.tools.base import ToolError
    from swecli.tools.paths import read_confined

    try:
        data = read_confined(root, path, MAX_MEMORY_BYTES)
    except ToolError:
        return None
    return None if data is None else data[:MAX_MEMORY_BYTES].decode("utf-8", errors="replace")


def refused_memory_files(root: Path) -> list[str]:
    """One warning per memory file at the root that is not loaded because it leads out of the project (a
    link to a file elsewhere, or into a credential location): the repository chose where it points."""
    from swecli.tools.base import ToolError
    from swecli.tools.paths import resolve_in_root

    refused = []
    for name in MEMORY_FILES:
        if not os.path.lexists(root / name):
            continue
        try:
            resolve_in_root(root, name)
        except ToolError:
            refused.append(f"{name} was not loaded into the prompt: it leads to {os.path.realpath(root / name)}, "
                           "outside the project or into the user's credentials. swecli reads memory files from "
                           "inside the project only; copy the file in, or link to one inside.")
    return refused


def memory_prompt(files: list[MemoryFile]) -> str:
    """The memory files as one block for the system prompt ("" when there are none)."""
    if not files:
        return ""
    names = ", ".join(f.name for f in files)
    header = (f"# Project memory\n\nInstructions and notes about this project, from {names} at the project "
              "root. Where they disagree, the earlier file wins (precedence: OPENCLI.md, AGENTS.md, CLAUDE.md).")
    blocks = [f'<memory file="{f.name}">\n{f.text}\n</memory>' for f in files]
    return "\n\n".join([header, *blocks])


def load_memory_prompt(root: Path, budget_tokens: int, count_tokens: CountTokens) -> str:
    """`memory_prompt(load_memory(...))`: what the lead puts in the stable system prompt."""
    return memory_prompt(load_memory(root, budget_tokens, count_tokens))
