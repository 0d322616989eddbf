"""git's view of the working tree, and the notes' record of files a shell command changed."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from swecli.events import ToolFinished, ToolStarted
from swecli.memory.notes import NotesDocument, NotesUpdater, read_notes
from swecli.memory.worktree import Worktree, changed_paths
from swecli.messages import ToolCall
from swecli.tools.base import ToolContext
from swecli.tools.bash import BASH

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
SID = "20261122-101500-abcd"


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                   capture_output=True)


@pytest.fixture
def repo(project: Path) -> Path:
    git(project, "init", "-q")
    (project / "greet.py").write_text("print('helo')\n")
    (project / "keep.py").write_text("x = 1\n")
    (project / ".gitignore").write_text("build/\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "start")
    return project


def run_shell(notes: NotesUpdater, root: Path, command: str, call_id: str) -> None:
    """What the loop does around a bash call: ToolStarted, the real bash tool, ToolFinished."""
    call = ToolCall(id=call_id, name="bash", arguments=json.dumps({"command": command}))
    notes.handle(ToolStarted(call, {"command": command}))
    result = BASH.fn(BASH.parse(call.arguments), ToolContext(root=root))
    notes.handle(ToolFinished(call, result, 0.1))


def test_snapshots_see_changes_including_to_an_already_modified_file(repo: Path) -> None:
    tree = Worktree.find(repo)
    assert tree is not None
    (repo / "greet.py").write_text("print('hello')\n")
    before = tree.snapshot()
    assert before is not None and set(before) == {"greet.py"}
    (repo / "greet.py").write_text("print('hello, world')\n")  # modified again: status unchanged
    (repo / "new.txt").write_text("n\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("ignored\n")
    (repo / "keep.py").unlink()
    after = tree.snapshot()
    assert after is not None
    assert changed_paths(before, after) == [("greet.py", True), ("keep.py", False), ("new.txt", True)]


def test_outside_git_there_is_no_worktree(project: Path) -> None:
    assert Worktree.find(project) is None


def test_sed_and_rm_reach_files_modified(repo: Path) -> None:
    notes = NotesUpdater(repo, SID, clock=lambda: datetime(2026, 11, 22, 10, 15))
    run_shell(notes, repo, "sed -i 's/helo/hello/' greet.py", "c1")
    run_shell(notes, repo, "ls && git status --short", "c2")  # reads only: nothing recorded
    run_shell(notes, repo, "rm keep.py && mkdir -p build && touch build/x.o", "c3")
    files = NotesDocument.parse(read_notes(repo, SID)).find("files_modified")
    assert files is not None
    assert files.body.splitlines() == [
        "- `greet.py` — changed by `sed -i 's/helo/hello/' greet.py` (2026-11-22 10:15)",
        "- `keep.py` — deleted by `rm keep.py && mkdir -p build && touch build/x.o` (2026-11-22 10:15)",
    ]
