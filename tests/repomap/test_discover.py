from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from swecli.repomap.discover import Listing, project_files, snapshot, unchanged
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


@pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep is not installed")
@pytest.mark.parametrize("hostile", ["fifo", "zero"])
def test_a_hostile_ignore_file_is_listed_without_ripgrep(pyproject: Path, hostile: str) -> None:
    # ripgrep reads ignore files with no check of what they are: a FIFO held the listing for RG_TIMEOUT (60 s),
    # a link to /dev/zero made it read until memory ran out. It is not started on such a tree.
    target = pyproject / "src/shop/.gitignore"
    if hostile == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    listing = Listing(pyproject, engine="auto")
    process = listing._process
    if process is not None:
        process.kill()  # the code before the fix: stop it before it fills the memory
    assert process is None
    assert listing.files() == project_files(pyproject, engine="python")
    assert "src/shop/money.py" in listing.files() and "build/lib/shop/money.py" not in listing.files()


@pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep is not installed")
def test_ripgrep_never_enters_a_directory_walk_skips(pyproject: Path) -> None:
    write(pyproject, "vendor/.gitignore", "")
    write(pyproject, "vendor/lib.py", "")
    write(pyproject, ".gitignore", "build/\nvendor/\n")
    listing = Listing(pyproject, engine="auto")
    assert listing._process is not None and "!/vendor/" in listing._process.args
    assert listing.files() == project_files(pyproject, engine="python")


def test_a_linked_worktrees_common_exclude_is_part_of_the_listings_snapshot(tmp_path: Path) -> None:
    # git reads a linked worktree's info/exclude from the main repository's git directory; a warm run that did
    # not watch it kept listing files the user had just excluded there
    main, linked = tmp_path / "main", tmp_path / "linked"
    main.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.hooksPath=/dev/null"]
    subprocess.run([*git, "init", "-q", str(main)], check=True)
    write(main, "seed.py", "x = 1\n")
    subprocess.run([*git, "-C", str(main), "add", "seed.py"], check=True)
    subprocess.run([*git, "-C", str(main), "commit", "-qm", "seed"], check=True)
    subprocess.run([*git, "-C", str(main), "worktree", "add", "-q", str(linked)], check=True)
    write(linked, "generated.py", "y = 2\n")
    an_hour_ago = time.time() - 3600  # a snapshot refuses what changed a moment ago (it could change unseen)
    for path in (tmp_path, *tmp_path.rglob("*")):
        os.utime(path, (an_hour_ago, an_hour_ago), follow_symlinks=False)
    taken = snapshot(linked)
    assert taken is not None and unchanged(linked, taken)
    # (its `.git` file is listed by both engines, as `rg --files --hidden` lists it)
    assert sorted(project_files(linked, engine="python")) == [".git", "generated.py", "seed.py"]
    write(main, ".git/info/exclude", "generated.py\n")
    assert not unchanged(linked, taken)
    for engine in ("python", "auto"):
        assert sorted(project_files(linked, engine=engine)) == [".git", "seed.py"]
