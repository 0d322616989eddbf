"""Which files a shell command changed (memory/changes.py), and the notes' record of them."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from swecli.assembly import open_session
from swecli.config import SandboxConfig, Settings
from swecli.events import MessageAppended, ToolFinished, ToolStarted
from swecli.memory.changes import Changes, ChangeTracker, InotifyTracker, ScanTracker, track_changes
from swecli.memory.notes import NotesDocument, NotesUpdater, read_notes
from swecli.messages import ToolCall, UserMessage
from swecli.testing.server import Call, Reply, ScriptedLLM
from swecli.tools.base import ToolContext
from swecli.tools.bash import BASH
from swecli.tools.sandbox import unavailable_reason

SID = "20261122-101500-abcd"


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                   capture_output=True)


@pytest.fixture
def repo(project: Path) -> Path:
    """A project in a git work tree (a `.git` directory is what makes one; git itself is not needed)."""
    (project / ".git").mkdir()
    (project / "greet.py").write_text("print('helo')\n")
    (project / "keep.py").write_text("x = 1\n")
    (project / "src" / "pkg").mkdir(parents=True)
    (project / "src" / "pkg" / "mod.py").write_text("y = 2\n")
    (project / ".gitignore").write_text("build/\n*.pyc\n")
    return project


def trackers(root: Path) -> list[ChangeTracker]:
    return [InotifyTracker(root), ScanTracker(root)]


def shell(tracker: ChangeTracker, root: Path, command: str, key: str = "c1") -> Changes | None:
    tracker.begin(key)
    subprocess.run(["/bin/bash", "-c", command], cwd=root, check=True)
    return tracker.end(key)


@pytest.mark.parametrize("kind", ["inotify", "scan"])
def test_writes_creations_deletions_count_ignored_and_temporary_files_do_not(repo: Path, kind: str) -> None:
    tracker = InotifyTracker(repo) if kind == "inotify" else ScanTracker(repo)
    try:
        changes = shell(tracker, repo, "sed -i 's/helo/hello/' greet.py && rm keep.py && echo n > new.txt && "
                                       "mkdir -p build && touch build/x.o && touch src/pkg/mod.pyc && "
                                       "echo t > tmp.txt && rm tmp.txt && cat src/pkg/mod.py > /dev/null")
        assert changes == Changes([("greet.py", True), ("keep.py", False), ("new.txt", True)])
        assert shell(tracker, repo, "cat greet.py && ls -R > /dev/null", "c2") == Changes([])  # reads only
    finally:
        tracker.close()


def test_a_new_directory_is_followed_even_when_files_appear_before_its_watch(repo: Path) -> None:
    tracker = InotifyTracker(repo)
    try:
        # mkdir and the writes in it race the watch on the new directory: the directory is read when it appears.
        changes = shell(tracker, repo, "mkdir -p lib/deep/er && echo a > lib/a.py && echo b > lib/deep/er/b.py")
        assert changes == Changes([("lib/a.py", True), ("lib/deep/er/b.py", True)])
        changes = shell(tracker, repo, "echo c >> lib/deep/er/b.py", "c2")  # watched from now on
        assert changes == Changes([("lib/deep/er/b.py", True)])
    finally:
        tracker.close()


def test_setting_up_the_watch_runs_no_child_process(repo: Path) -> None:
    """inotify_simple looks libc up with `ctypes.util.find_library`, i.e. `ldconfig -p` on every start; the
    tracker hands it this process's libc instead, and still sees a change."""
    import sys

    code = (
        "import sys; spawned = []\n"
        "sys.addaudithook(lambda event, args: spawned.append(str(args[1])) if event == 'subprocess.Popen' else None)\n"
        "from pathlib import Path; from swecli.memory.changes import InotifyTracker\n"
        f"tracker = InotifyTracker(Path({str(repo)!r})); tracker.begin('c'); tracker._ready.wait(30)\n"
        f"Path({str(repo / 'new.txt')!r}).write_text('x')\n"
        "print(tracker.unavailable or 'watching', tracker.end('c'), spawned)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "watching Changes(paths=[('new.txt', True)], complete=True) []"


def test_a_delayed_watch_is_set_up_by_the_first_command_that_needs_it(repo: Path) -> None:
    # The session notes make the tracker as a request starts, with the walk delayed until it is out
    # (`ON_THE_WIRE`): a command that comes first sets it up at once, and its changes are still seen.
    tracker = InotifyTracker(repo, delay=600)
    try:
        assert not tracker._ready.wait(0.2)  # waiting for its time: nothing walked yet
        assert shell(tracker, repo, "echo n > new.txt") == Changes([("new.txt", True)])
    finally:
        tracker.close()


def test_a_renamed_directory_is_watched_under_its_new_name(repo: Path) -> None:
    tracker = InotifyTracker(repo)
    try:
        assert shell(tracker, repo, "mv src lib") == Changes([("lib/pkg/mod.py", True), ("src", False)])
        assert shell(tracker, repo, "echo z >> lib/pkg/mod.py", "c2") == Changes([("lib/pkg/mod.py", True)])
    finally:
        tracker.close()


def test_changes_between_commands_belong_to_no_command(repo: Path) -> None:
    tracker = InotifyTracker(repo)
    try:
        shell(tracker, repo, "true")
        (repo / "greet.py").write_text("edited by a file tool\n")  # between two bash calls
        assert shell(tracker, repo, "echo x > other.txt", "c2") == Changes([("other.txt", True)])
    finally:
        tracker.close()


def test_a_full_kernel_queue_is_reported_as_an_incomplete_record(repo: Path) -> None:
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    tracker = InotifyTracker(repo)
    try:
        # One process making and removing the files (a loop of `rm` forks took minutes on a loaded machine).
        churn = f"import os\nfor i in range({limit // 2 + 50}):\n    open(f'f{{i}}', 'w').close(); os.remove(f'f{{i}}')"
        changes = shell(tracker, repo, f"python3 -c \"{churn}\"; echo kept > kept.txt")
        assert changes is not None and not changes.complete
    finally:
        tracker.close()


def test_outside_a_git_work_tree_nothing_is_tracked(project: Path) -> None:
    assert track_changes(project) is None


def test_a_tree_too_large_to_watch_is_not_tracked_rather_than_scanned_every_call(repo: Path) -> None:
    tracker = InotifyTracker(repo, max_dirs=1)
    try:
        assert shell(tracker, repo, "echo n > new.txt") is None
        assert tracker.fallback is None and "more than 1 directories" in tracker.unavailable
    finally:
        tracker.close()


def test_the_scan_gives_up_once_past_its_limit(repo: Path) -> None:
    tracker = ScanTracker(repo, max_files=2)
    assert shell(tracker, repo, "echo n > new.txt") is None
    assert tracker.too_large


def run_shell(notes: NotesUpdater, root: Path, command: str, call_id: str) -> None:
    """What the loop does around a bash call: ToolStarted, the real bash tool, ToolFinished."""
    call = ToolCall(id=call_id, name="bash", arguments=json.dumps({"command": command}))
    notes.handle(ToolStarted(call, {"command": command}))
    result = BASH.fn(BASH.parse(call.arguments), ToolContext(root=root))
    notes.handle(ToolFinished(call, result, 0.1))


def test_sed_and_rm_reach_files_modified(repo: Path) -> None:
    notes = NotesUpdater(repo, SID, clock=lambda: datetime(2026, 11, 22, 10, 15))
    notes.handle(MessageAppended(UserMessage(content="fix the greeting")))
    try:
        run_shell(notes, repo, "sed -i 's/helo/hello/' greet.py", "c1")
        run_shell(notes, repo, "ls && cat greet.py", "c2")  # reads only: nothing recorded
        run_shell(notes, repo, "rm keep.py && mkdir -p build && touch build/x.o", "c3")
    finally:
        notes.close()
    files = NotesDocument.parse(read_notes(repo, SID)).find("files_modified")
    assert files is not None
    assert files.body.splitlines() == [
        "- `greet.py` — changed by `sed -i 's/helo/hello/' greet.py` (2026-11-22 10:15)",
        "- `keep.py` — deleted by `rm keep.py && mkdir -p build && touch build/x.o` (2026-11-22 10:15)",
    ]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_real_repository_with_git_operations(project: Path) -> None:
    git(project, "init", "-q")
    (project / "a.py").write_text("a = 1\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "start")
    tracker = InotifyTracker(project)
    try:
        (project / "a.py").write_text("a = 2\n")
        # git writes only inside .git (never watched) and the file it puts back
        assert shell(tracker, project, "git checkout -q a.py && git status --short") == Changes([("a.py", True)])
    finally:
        tracker.close()


@pytest.mark.skipif(bool(unavailable_reason()), reason="bwrap cannot run here")
def test_changes_made_inside_the_sandbox_reach_the_notes_through_the_loop(repo: Path) -> None:
    steps = [Reply(calls=[Call("bash", {"command": "sed -i 's/helo/hello/' greet.py && rm keep.py && "
                                                   "mkdir -p new/dir && echo n > new/dir/made.py"})]),
             Reply("Done.")]
    with ScriptedLLM(steps) as llm:
        settings = Settings(provider="openai-compatible", base_url=llm.base_url, model="scripted-model",
                            mode="auto", sandbox=SandboxConfig(mode="workspace-write"))
        session = open_session(repo, settings)
        session.run("fix the greeting")
        session.close()
    notes = read_notes(repo, session.recorder.session_id)
    assert "`greet.py` — changed by" in notes and "`keep.py` — deleted by" in notes
    assert "`new/dir/made.py` — changed by" in notes
