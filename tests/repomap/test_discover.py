from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from swecli.repomap.discover import project_files
from tests.repomap.conftest import write


def test_files_honour_gitignore_and_skip_internals(pyproject: Path) -> None:
    write(pyproject, ".swecli/repomap/index.json", "{}")
    write(pyproject, ".git/config", "")
    os.symlink(pyproject / "src/shop/money.py", pyproject / "alias.py")
    files = project_files(pyproject, engine="python")
    assert "src/shop/money.py" in files and ".gitignore" in files
    assert not any(f.startswith(("build/", ".swecli/", ".git/")) for f in files)
    assert "alias.py" not in files
    assert files == sorted(files)


@pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep is not installed")
def test_ripgrep_and_walk_agree(pyproject: Path) -> None:
    write(pyproject, "src/shop/.gitignore", "*.tmp\n!keep.tmp\n")
    write(pyproject, "src/shop/x.tmp", "")
    write(pyproject, "src/shop/keep.tmp", "")
    write(pyproject, ".hidden/conf.py", "")
    write(pyproject, ".swecli/x", "")
    assert project_files(pyproject, engine="auto") == project_files(pyproject, engine="python")
