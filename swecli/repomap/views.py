"""Plain-text views of a map shared by `swecli repomap`, `/repomap` and the `repo_map` tool."""

from __future__ import annotations

import posixpath
from pathlib import Path

from swecli.errors import SwecliError
from swecli.repomap.repomap import Counter, RepoMap, estimate_tokens


class UnknownFile(SwecliError):
    """A file argument that is not in the map; `str()` is one sentence saying why and what to do."""


def find_file(rmap: RepoMap, raw: str, cwd: Path | None = None) -> str:
    """The map's path for what a person typed: root-relative, cwd-relative, absolute, or a unique file name."""
    text = raw.strip().removeprefix("@").removeprefix("./")
    candidates = [text]
    if cwd is not None:
        absolute = (cwd / text).resolve()
        if absolute.is_relative_to(rmap.root):
            candidates.insert(0, absolute.relative_to(rmap.root).as_posix())
    for candidate in candidates:
        if candidate in rmap.graph.ranks:
            return candidate
        if candidate in rmap.index.files:
            raise UnknownFile(f"{candidate} exists but is not a source file the map parses "
                              f"(no grammar for its type), so it has no dependencies to show.")
    named = [rel for rel in rmap.graph.ranks if rel == text or rel.endswith("/" + text)]
    if len(named) == 1:
        return named[0]
    if named:
        raise UnknownFile(f"{text} matches {len(named)} files ({', '.join(named[:4])}…); give more of the path.")
    raise UnknownFile(f"{text} is not a file of this project's map ({len(rmap.graph.ranks):,} files mapped); "
                      f"give a path relative to the project root.")


def ranked_table(rmap: RepoMap, limit: int = 40, under: str = "") -> str:
    """`rank  used-by  path  [role]` for the top files."""
    rows = [f"{'rank':>8}  {'used by':>7}  path"]
    for rel in rmap.ranked(under)[:limit]:
        role = rmap.role(rel)
        rows.append(f"{rmap.rank(rel):8.4f}  {len(rmap.imported_by(rel)):>7}  {rel}"
                    + (f"  [{role}]" if role != "source" else ""))
    more = len(rmap.ranked(under)) - limit
    if more > 0:
        rows.append(f"… {more:,} more files (--json lists them all)")
    return "\n".join(rows)


def deps_text(rmap: RepoMap, rel: str, limit: int = 30) -> str:
    """What a file defines, imports and is imported by."""
    imports, users = rmap.neighbours(rel)
    lines = [f"{rel}  [{rmap.role(rel)}, rank {rmap.rank(rel):.4f}]"]
    outline = rmap.outline(rel)
    lines += ["defines:", *(f"  {line}" for line in outline)] if outline else ["defines: nothing the map lists"]
    lines += _listed("imports", imports, limit) + _listed("imported by", users, limit)
    return "\n".join(lines)


def _listed(title: str, paths: list[str], limit: int) -> list[str]:
    if not paths:
        return [f"{title}: no project files"]
    more = [f"  … {len(paths) - limit} more"] if len(paths) > limit else []
    return [f"{title} ({len(paths)}):", *(f"  {p}" for p in paths[:limit]), *more]


def directory_map(rmap: RepoMap, directory: str, budget: int, count: Counter = estimate_tokens) -> str:
    """The map of one directory (or the whole project for "" or "."), fitted to `budget` tokens."""
    under = posixpath.normpath(directory.strip().strip("/")) if directory.strip() not in ("", ".", "/") else ""
    under = "" if under == "." else under
    text = rmap.render(budget, count, under=under)
    if not text:
        where = f"under {under}/" if under else "in this project"
        return f"No mapped source files {where}."
    total = len(rmap.ranked(under))
    shown = sum(1 for line in text.splitlines() if not line.startswith("  "))
    head = f"Repository map{' of ' + under + '/' if under else ''}: {shown} of {total} files, most central first"
    return head + (" (the rest did not fit the budget)" if shown < total else "") + "\n" + text


def memory_section(rmap: RepoMap, budget: int, count: Counter = estimate_tokens) -> str:
    """The ranked map for the memory block (`context.repo_map_tokens`): the same text for the same files."""
    head = ("## Repository map\nThe project's most central source files (PageRank over imports and references), "
            "with their definitions as `name:line`. Use the repo_map tool for a directory or a file's neighbours.")
    body = rmap.render(max(budget - count(head) - 2, 0), count)
    return f"{head}\n{body}" if body else ""


def init_section(rmap: RepoMap, budget: int = 1_200, count: Counter = estimate_tokens) -> str:
    """For /init: entry points and the most central files with their definitions, from the map."""
    entries = [rel for rel in rmap.ranked() if rmap.role(rel) == "entry"][:8]
    lines = ["## Repository map (files by PageRank over imports and references)"]
    if entries:
        lines.append("Entry points: " + ", ".join(entries))
    tests = [rel for rel in rmap.ranked() if rmap.role(rel) == "test"]
    if tests:
        lines.append(f"Test files: {len(tests)} (e.g. {', '.join(tests[:3])})")
    lines.append(rmap.render(budget, count))
    return "\n".join(lines)
