"""Walking the project like git: .gitignore rules, skipped internals, no symlink following."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swecli.tools.base import ToolError
from swecli.tools.walk import GlobFilter, IgnoreRules, expand_braces, walk


def make(root: Path, *files: str) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{name}\n")


def walked(root: Path, start: Path | None = None, glob: str | None = None) -> list[str]:
    start = start or root
    matcher = GlobFilter(glob, start) if glob else None
    return [e.path.relative_to(root).as_posix() + ("/" if e.is_dir else "")
            for e in walk(start, IgnoreRules(root), matcher)]


def test_gitignore_rules_apply_with_git_semantics(project: Path) -> None:
    make(project, "a.py", "secret.env", "build/out.o", "logs/x.log", "logs/keep.log", "src/gen/g.py", "src/m.py")
    (project / ".gitignore").write_text("*.env\nbuild/\n*.log\n!keep.log\n")
    (project / "src" / ".gitignore").write_text("gen/\n")
    assert walked(project) == [".gitignore", "a.py", "logs/", "logs/keep.log", "src/", "src/.gitignore", "src/m.py"]


def test_deeper_gitignore_can_reinclude(project: Path) -> None:
    make(project, "a.txt", "sub/b.txt")
    (project / ".gitignore").write_text("*.txt\n")
    (project / "sub" / ".gitignore").write_text("!b.txt\n")
    assert "sub/b.txt" in walked(project)
    assert "a.txt" not in walked(project)


def test_anchored_patterns_only_match_at_their_level(project: Path) -> None:
    make(project, "top.txt", "sub/top.txt")
    (project / ".gitignore").write_text("/top.txt\n")
    assert walked(project) == [".gitignore", "sub/", "sub/top.txt"]


def test_git_info_exclude_applies_in_a_work_tree(project: Path) -> None:
    make(project, "a.py", "scratch.tmp", ".git/info/exclude", ".git/HEAD")
    (project / ".git" / "info" / "exclude").write_text("*.tmp\n")
    assert walked(project) == ["a.py"]


def test_rules_from_the_work_tree_top_apply_to_a_subdirectory_root(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make(repo, ".git/HEAD", "pkg/a.py", "pkg/a.pyc")
    (repo / ".gitignore").write_text("*.pyc\n")
    assert walked(repo / "pkg") == ["a.py"]


def test_internals_are_skipped_but_hidden_files_are_not(project: Path) -> None:
    make(project, ".git/config", ".swecli/sessions/x.jsonl", ".github/workflows/ci.yml", ".env.example", "a")
    assert walked(project) == [".env.example", ".github/", ".github/workflows/", ".github/workflows/ci.yml", "a"]


def test_symlinks_are_listed_but_not_followed(project: Path, tmp_path: Path) -> None:
    make(project, "real/f.txt")
    (project / "loop").symlink_to(project)
    (project / "out").symlink_to(tmp_path)
    entries = list(walk(project, IgnoreRules(project)))
    names = [e.path.name for e in entries]
    assert names == ["loop", "out", "real", "f.txt"]
    assert all(not e.is_dir for e in entries if e.is_symlink)


def test_order_is_by_name_depth_first(project: Path) -> None:
    make(project, "b", "a/z", "a.txt", "B", "a-b")
    assert walked(project) == ["B", "a/", "a/z", "a-b", "a.txt", "b"]


def test_a_malformed_gitignore_line_is_skipped(project: Path) -> None:
    make(project, "a.log", "b.py")
    (project / ".gitignore").write_text("*.log\n!\n")  # a bare "!" is not a valid pattern
    assert walked(project) == [".gitignore", "b.py"]


def test_glob_semantics(project: Path) -> None:
    make(project, "a.py", "src/b.py", "src/deep/c.py", "src/d.ts", "src/e.tsx", "docs/x.md")
    assert [p for p in walked(project, glob="*.py") if not p.endswith("/")] == ["a.py", "src/b.py", "src/deep/c.py"]
    assert [p for p in walked(project, glob="src/*.py") if not p.endswith("/")] == ["src/b.py"]
    assert [p for p in walked(project, glob="*.{ts,tsx}") if not p.endswith("/")] == ["src/d.ts", "src/e.tsx"]
    assert "docs/x.md" not in walked(project, glob="!*.md")
    assert "a.py" in walked(project, glob="!*.md")
    # Relative to the directory being walked.
    assert [p for p in walked(project, project / "src", glob="deep/*.py") if not p.endswith("/")] == [
        "src/deep/c.py"]


def test_brace_expansion() -> None:
    assert expand_braces("*.{ts,tsx}") == ["*.ts", "*.tsx"]
    assert expand_braces("{a,b{c,d}}.x") == ["a.x", "bc.x", "bd.x"]
    assert expand_braces("plain") == ["plain"]
    assert expand_braces("open{brace") == ["open{brace"]


def test_an_invalid_glob_is_a_tool_error(project: Path) -> None:
    with pytest.raises(ToolError, match="Invalid glob"):
        GlobFilter("!", project)
    with pytest.raises(ToolError, match="Invalid glob"):
        GlobFilter("dir\\", project)


@pytest.mark.parametrize("kind", ["fifo", "device link"])
def test_an_ignore_file_that_never_ends_is_skipped(tmp_path: Path, kind: str) -> None:
    """`mkfifo sub/.gitignore` (the model) made every listing and the Python grep wait forever; a cloned
    `.gitignore -> /dev/zero` read until memory ran out (found by the independent check)."""
    make(tmp_path, ".git/HEAD", "a.py", "sub/b.py")
    ignore = tmp_path / "sub" / ".gitignore"
    os.mkfifo(ignore) if kind == "fifo" else ignore.symlink_to("/dev/zero")
    assert "sub/b.py" in walked(tmp_path)
    assert not IgnoreRules(tmp_path).ignored(tmp_path / "sub" / "b.py", is_dir=False)
