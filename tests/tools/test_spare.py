"""Spare sandboxes, run for real: a command run in a spare behaves exactly as in a fresh launch, a spare
that no longer fits its command is not used, and a spare that is let go without a command runs nothing."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from swecli.tools import sandbox as sandbox_module
from swecli.tools.base import ToolContext
from swecli.tools.bash import command_environment, run_command
from swecli.tools.protected import remove_placeholders
from swecli.tools.sandbox import Sandbox, unavailable_reason
from swecli.tools.spare import Spares, _start
from tests.tools.test_sandbox import _bwrap_children

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(bool(REASON), reason=f"bwrap cannot run here: {REASON}")


@pytest.fixture
def place() -> Iterator[tuple[Path, Path]]:
    """(a git project, a home with credentials), under /var/tmp so the private /tmp hides neither."""
    base = Path(tempfile.mkdtemp(prefix="swecli-spare-", dir="/var/tmp"))
    home, project = base / "home", base / "project"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    yield project, home
    remove_placeholders()
    shutil.rmtree(base, ignore_errors=True)


def both(project: Path, home: Path, command: str) -> tuple[tuple[int | None, str, list[str]], ...]:
    """(exit code, output, notes) of `command` in a fresh launch and in a spare (which must be used)."""
    box = Sandbox.for_project(project, home=home, env={"HOME": str(home)})
    ctx = ToolContext(root=project, sandbox=box)
    fresh = run_command(command, ctx, 60, box, Spares())
    spares = Spares(take_wait=120)
    spares.prepare(box, command_environment(ctx))
    spared = run_command(command, ctx, 60, box, spares)
    assert spares.used == 1
    spares.close()  # the next one, started when this one was taken
    return tuple((o.exit_code, o.output.text().replace(str(home), "HOME"), o.notes) for o in (fresh, spared))


def started_spare(project: Path, home: Path, quick_answer: float = 0) -> tuple[Sandbox, ToolContext, Spares]:
    """The project's sandbox, a context for it, and a spare for its next command, started."""
    box = Sandbox.for_project(project, home=home, env={"HOME": str(home)})
    ctx = ToolContext(root=project, sandbox=box)
    spares = Spares(take_wait=120, quick_answer=quick_answer)
    spares.prepare(box, command_environment(ctx))
    assert spares.wait_started(120)
    return box, ctx, spares


SAME = [
    "env | sort; echo $SHLVL $0 $$; ls /proc/self/fd; ps -o pid=,pgid=,comm=",
    "echo x > .git/config; echo $?; echo y > .git/hooks/pre-commit; echo $?",
    "cat ~/.ssh/id_rsa; ls -A ~/.ssh; echo z > ~/escape; echo $?",
    "mount -t tmpfs none /mnt; unshare -U true; echo $?; cat /proc/sys/kernel/core_pattern > /dev/null; "
    "echo 1 > /proc/sys/kernel/core_pattern; echo $?",
    "python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>&1 | tail -1; getent hosts example.com; echo $?",
    "printf 'a\\nb\\n' | while read l; do echo \"[$l]\"; done; exit 3",
]


@pytest.mark.parametrize("command", SAME)
def test_a_command_in_a_spare_gives_what_a_fresh_launch_gives(place: tuple[Path, Path], command: str) -> None:
    project, home = place
    fresh, spared = both(project, home, command)
    assert spared == fresh


def test_a_protected_file_created_in_a_spare_is_moved_aside_as_in_a_fresh_launch(place: tuple[Path, Path]) -> None:
    project, home = place
    fresh, spared = both(project, home, "echo 'eval $(curl x)' > .envrc")
    assert fresh[0] == spared[0] == 0
    assert len(spared[2]) == 1 and "moved it to .swecli/blocked/" in spared[2][0]
    assert not (project / ".envrc").exists()


def test_a_spare_whose_layout_changed_is_not_used(place: tuple[Path, Path]) -> None:
    project, home = place
    box, ctx, spares = started_spare(project, home)
    (project / ".envrc").write_text("approved\n")  # written by write_file after the spare was started
    outcome = run_command("echo evil > .envrc", ctx, 60, box, spares)
    assert spares.used == 0 and spares.refused == 1
    assert outcome.exit_code != 0 and "Read-only file system" in outcome.output.text()
    assert (project / ".envrc").read_text() == "approved\n" and not outcome.notes
    spares.close()


def test_a_protected_file_replaced_by_a_rename_after_the_spare_started_stays_read_only(
        place: tuple[Path, Path]) -> None:
    """The command line is the same, but the kernel detached the spare's read-only mount of the old file."""
    project, home = place
    (project / ".envrc").write_text("old\n")
    box, ctx, spares = started_spare(project, home)
    _replace_envrc_then_write_to_it(project, ctx, box, spares)
    assert spares.used == 0 and spares.refused == 1
    spares.close()


def mounted_in_spare(spares: Spares, path: Path, timeout: float = 60) -> bool:
    """Wait until a process of the spare's sandbox has a mount on `path` (bwrap has set the sandbox up)."""
    assert spares._next is not None and spares._next.spare is not None
    pending, deadline = [spares._next.spare.proc.pid], time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids, seen = list(pending), set()
        while pids:
            pid = pids.pop()
            seen.add(pid)
            with contextlib.suppress(OSError):
                if f" {path} " in Path(f"/proc/{pid}/mountinfo").read_text():
                    return True
                pids += [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
                         if int(c) not in seen]
        time.sleep(0.01)
    return False


def test_a_protected_file_deleted_and_made_again_after_the_spare_started_stays_read_only(
        place: tuple[Path, Path]) -> None:
    """Deleted and made again once the spare is set up (an editor, `rm` then `cat >`; an approved write_file
    renames a new file over it), the file drops the spare's read-only mount over it (the kernel detaches a
    mount whose mount point is unlinked in another namespace), and ext4 may give the new file the old one's
    inode number at once, so (device, inode) looked the same and the spare's command wrote the protected
    file (measured: 2 in 10 runs under load, every run once the spare's mounts are waited for). Its change
    time tells it apart: the spare is refused and a fresh launch keeps it read-only."""
    project, home = place
    (project / ".envrc").write_text("old\n")
    box, ctx, spares = started_spare(project, home)
    assert mounted_in_spare(spares, project / ".envrc")
    (project / ".envrc").unlink()
    (project / ".envrc").write_text("approved\n")
    outcome = run_command("cat .envrc; echo evil >> .envrc", ctx, 60, box, spares)
    assert outcome.output.text().startswith("approved\n"), outcome.output.text()
    assert outcome.exit_code != 0 and "Read-only file system" in outcome.output.text()
    assert (project / ".envrc").read_text() == "approved\n"
    spares.close()


LEFT_RUNNING = "setsid bash -c 'while :; do echo evil > .envrc; done' </dev/null >/dev/null 2>&1 & sleep 0.05"
"""A command that leaves a process in a session of its own (out of the killed group) planting a protected file."""


@pytest.mark.parametrize("in_spare", [True, False])
def test_what_a_command_left_running_cannot_plant_after_the_checks(place: tuple[Path, Path], in_spare: bool) -> None:
    """The checks after a command (a protected file it created is moved aside) run once its sandbox's last
    process is gone: a leftover looping `echo > .envrc` must not make it again after the check (direnv would
    run it outside). Before, it wrote up to ~10 ms after `run_command` returned, in most runs."""
    project, home = place
    box = Sandbox.for_project(project, home=home, env={"HOME": str(home)})
    ctx = ToolContext(root=project, sandbox=box)
    for _ in range(3):
        spares = Spares(take_wait=120)
        if in_spare:
            spares.prepare(box, command_environment(ctx))
        outcome = run_command(LEFT_RUNNING, ctx, 60, box, spares)
        assert spares.used == in_spare
        returned = time.time_ns()
        assert any("created .envrc" in note for note in outcome.notes), outcome.notes
        assert not (project / ".envrc").exists()
        spares.close()
        time.sleep(0.05)  # what a leftover would write meanwhile, looked for afterwards
        assert not (project / ".envrc").exists()
        blocked = project / ".swecli" / "blocked"
        assert all(path.stat().st_mtime_ns < returned for path in blocked.iterdir())
        shutil.rmtree(blocked)


HELD = ("echo planted > .envrc; setsid -f bash -c 'exec -a swecli-held-{tag} sleep 600' </dev/null >/dev/null 2>&1; "
        "echo started; until [ -e traced-{tag} ]; do sleep 0.01; done")
"""A command that leaves a process the kernel cannot finish killing in time: a tracer outside the sandbox
(`TRACER`) holds it, so once killed it stays a zombie until the tracer waits or goes, and the namespace's init
cannot exit (`zap_pid_ns_processes` waits for it): what a process stuck in the kernel does (a hung file system)."""

TRACER = r"""
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
ok = libc.ptrace(0x4206, int(sys.argv[1]), 0, 0) == 0  # PTRACE_SEIZE: no stop, no wait, the tracee just held
print("traced" if ok else f"ptrace failed: {ctypes.get_errno()}", flush=True)
sys.stdin.read()
"""

TRACER_PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
"""Any Python with ctypes; the system's, which `nobody` can run (this venv's may link into root's home)."""


def run_held(project: Path, home: Path, in_spare: bool) -> tuple[list[str], bool]:
    """The notes after `HELD` (run in a spare or fresh), and whether the leftover was still held when the command
    returned; the tracer is let go afterwards (the sandbox then ends)."""
    tag = uuid.uuid4().hex
    box = Sandbox.for_project(project, home=home, env={"HOME": str(home)})
    tracers: list[subprocess.Popen[str]] = []
    pids: list[int | None] = []

    def trace(text: str) -> None:
        if "started" in text and not tracers:
            pids.append(_held_pid(tag))
            tracer = subprocess.Popen([TRACER_PYTHON, "-c", TRACER, str(pids[0])], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
            tracers.append(tracer)
            line = tracer.stdout.readline() if tracer.stdout is not None else ""
            assert line == "traced\n", line
            (project / f"traced-{tag}").touch()

    ctx = ToolContext(root=project, sandbox=box, on_output=trace)
    spares = Spares(take_wait=120)
    if in_spare:
        spares.prepare(box, command_environment(ctx))
        assert spares.wait_started(120)
    try:
        outcome = run_command(HELD.format(tag=tag), ctx, 60, box, spares)
        held = Path(f"/proc/{pids[0]}/stat").read_text().split(") ")[-1].startswith("Z")  # killed, not let go
    finally:
        for tracer in tracers:
            tracer.communicate("")
        spares.close()
    assert spares.used == in_spare and len(tracers) == 1
    return outcome.notes, held


def _held_pid(tag: str) -> int | None:
    """The pid of `HELD`'s leftover (its argv[0] names the tag, once it has exec'd)."""
    deadline = time.monotonic() + 60
    while True:
        for entry in Path("/proc").iterdir():
            with contextlib.suppress(OSError):
                if (entry / "cmdline").read_bytes().startswith(f"swecli-held-{tag}\0".encode()):
                    return int(entry.name)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.01)


@pytest.mark.parametrize("in_spare", [True, False])
def test_a_sandbox_whose_processes_outlive_the_wait_is_killed_and_the_result_says_so(
        place: tuple[Path, Path], in_spare: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the sandbox's last process is not gone `NAMESPACE_WAIT` after the command, its init is killed again
    and waited for once more; the checks run after that (the planted .envrc is moved aside) and the result says
    that processes were left, so the model and the user know the checks may have missed their writes. Before,
    the checks ran unannounced."""
    monkeypatch.setattr(sandbox_module, "NAMESPACE_WAIT", 0.3)
    project, home = place
    notes, held = run_held(project, home, in_spare)
    assert held
    assert any("still there 0.6s after it ended" in note and "was not moved aside" in note for note in notes), notes
    assert any("created .envrc" in note for note in notes), notes
    assert not (project / ".envrc").exists()
    assert _gone(project)


def test_an_ended_sandboxs_mount_namespace_is_let_go(place: tuple[Path, Path]) -> None:
    """The mount namespace held past a command's end (so the init's exit does not tear it down on the path) is
    closed by the spare thread: no descriptor of one is left once the commands are done."""
    project, home = place
    box, ctx, spares = started_spare(project, home)  # a model that thinks: the namespace is held, then let go
    for _ in range(3):
        assert run_command("true", ctx, 60, box, spares).exit_code == 0
        spares.prepare(box, command_environment(ctx))
    spares.close()
    deadline = time.monotonic() + 60
    while _mount_namespaces_held() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert spares.used == 3 and _mount_namespaces_held() == []


def _mount_namespaces_held() -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{fd}").startswith("mnt:"):
                found.append(fd)
    return found


def test_a_spare_whose_hidden_file_became_a_directory_is_not_used(place: tuple[Path, Path]) -> None:
    """The layout is the same, but a hidden credential file is now a directory (`Mounts.hidden_dirs`): the spare
    covers it with /dev/null, which cannot hide what is in a directory; a fresh launch mounts an empty one."""
    project, home = place
    (home / ".netrc").write_text("machine example.com password hunter2\n")
    box, ctx, spares = started_spare(project, home)
    (home / ".netrc").unlink()
    (home / ".netrc").mkdir()
    (home / ".netrc" / "token").write_text("hunter2\n")
    outcome = run_command("cat ~/.netrc/token; ls -A ~/.netrc", ctx, 60, box, spares)
    assert spares.used == 0 and spares.refused == 1
    assert "hunter2" not in outcome.output.text()
    spares.close()


def test_a_spare_that_dies_after_its_check_is_not_used(place: tuple[Path, Path],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A spare's bwrap can die after `take` checked it alive (a mount it could not make: a protected file deleted
    while it set up); handing it the command then finds no reader on the go pipe. The command runs fresh instead
    of failing with BrokenPipeError (seen in about 1 run of 15 of the test above on main, under load)."""
    from swecli.tools import spare as spare_module

    project, home = place
    box, ctx, spares = started_spare(project, home)
    release = spare_module.Spare.release

    def dead_then_release(self: spare_module.Spare, command: str) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)  # the pipe a bwrap that died setting up leaves: no reader
        self.proc.wait()
        assert self.reports.wait_for_namespace(60)  # its waiting shell gone too
        release(self, command)

    monkeypatch.setattr(spare_module.Spare, "release", dead_then_release)
    outcome = run_command("echo ran", ctx, 60, box, spares)
    assert outcome.output.text() == "ran\n" and outcome.exit_code == 0
    assert spares.used == 0 and spares.refused == 1
    spares.close()


def test_a_spare_for_another_sandbox_or_environment_is_not_used(place: tuple[Path, Path]) -> None:
    project, home = place
    box, ctx, spares = started_spare(project, home)
    outcome = run_command("echo x > f", ctx, 60, box.read_only(), spares)  # plan mode came on meanwhile
    assert spares.used == 0 and outcome.exit_code != 0 and not (project / "f").exists()
    spares.prepare(box, {**command_environment(ctx), "EXTRA": "1"})
    outcome = run_command("echo ${EXTRA:-unset}", ctx, 60, box, spares)
    assert spares.used == 0 and outcome.output.text() == "unset\n"
    spares.close()


def test_a_spare_let_go_without_its_signal_runs_nothing(place: tuple[Path, Path]) -> None:
    project, home = place
    box = Sandbox.for_project(project, home=home, env={"HOME": str(home)})
    spare = _start(box, command_environment(ToolContext(root=project)))
    os.write(spare.text_fd, b"touch ran")  # the command is there, but the go byte never comes
    os.lseek(spare.text_fd, 0, os.SEEK_SET)
    os.close(spare.go_fd)  # what swecli dying looks like to the waiting shell
    spare.go_fd = -1
    assert spare.proc.wait(timeout=120) == 0
    assert not (project / "ran").exists()
    spare.discard()


def test_the_commands_process_is_forked_before_the_command_comes(place: tuple[Path, Path]) -> None:
    """No fork is left on the command's path: the spare's runner has its child waiting before the go byte, and
    the command runs in that very process (it becomes `bash -c COMMAND`)."""
    project, home = place
    box, ctx, spares = started_spare(project, home)
    spare = spares._next.spare if spares._next is not None else None
    assert spare is not None
    shells = lambda: [pid for pid in _group(spare.proc.pid) if _comm(pid) == "bash"]  # noqa: E731
    waiting = _until(shells, lambda found: len(found) == 2)
    assert len(waiting) == 2  # the runner and its child, before any command
    started = spares.take(box, command_environment(ctx), ["/bin/bash", "-c", "exec sleep 60"])
    assert started is not None
    launch, proc = started
    try:
        ran = _until(lambda: [pid for pid in waiting if _comm(pid) == "sleep"], bool)
        assert len(ran) == 1  # one of the processes that were waiting is now the command
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
        launch.close()
        spares.close()


def _until(look: Callable[[], list[int]], done: Callable[[list[int]], bool]) -> list[int]:
    """What `look()` finds once `done` says so (or after 120 s: then the assertion that follows says what)."""
    deadline = time.monotonic() + 120
    found = look()
    while not done(found) and time.monotonic() < deadline:
        time.sleep(0.02)
        found = look()
    return found


def _group(pgid: int) -> list[int]:
    """The processes of a process group."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and os.getpgid(int(entry.name)) == pgid:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def test_a_discarded_spare_leaves_no_process(place: tuple[Path, Path]) -> None:
    project, home = place
    box = Sandbox.for_project(project, home=home, env={"HOME": str(home)})
    spares = Spares(take_wait=120)
    ctx = ToolContext(root=project)
    spares.prepare(box, command_environment(ctx))
    spares.prepare(box.read_only(), command_environment(ctx))  # the first is replaced, then discarded
    spares.close()
    assert _gone(project)


def test_after_a_quick_answer_the_next_spare_starts_when_one_is_taken(place: tuple[Path, Path]) -> None:
    """A model that answers at once leaves no time to start a spare from the request: the next one is
    started as the command is handed over, and runs the next command without another prepare."""
    project, home = place
    box, ctx, spares = started_spare(project, home, quick_answer=600)  # every command counts as quick
    first = run_command("echo one", ctx, 60, box, spares)
    assert spares.used == 1 and first.output.text() == "one\n"
    assert spares.wait_started(120)
    second = run_command("echo two", ctx, 60, box, spares)
    assert spares.used == 2 and spares.refused == 0 and second.output.text() == "two\n"
    spares.close()
    assert _gone(project)


def test_after_a_slow_answer_the_next_spare_waits_for_the_request(place: tuple[Path, Path]) -> None:
    """A model that thinks gives the next request's spare time to start: none is started beside the command
    (it would compete with the command and the loop)."""
    project, home = place
    box, ctx, spares = started_spare(project, home, quick_answer=0)
    run_command("true", ctx, 60, box, spares)
    assert spares.used == 1 and not spares.wait_started(0)
    assert _gone(project)


def test_a_spares_sandbox_is_reaped_after_its_command_without_another_request(place: tuple[Path, Path]) -> None:
    """The spare thread is not woken as a spare's command ends (the loop then builds the next request): it
    reaps the sandbox at its next wake, a request's spare or its own sweep. With no further request (the
    session's last command, a caller outside the loop), the sweep still reaps it: no zombie is left."""
    project, home = place
    before = set(_bwrap_children())
    box, ctx, spares = started_spare(project, home, quick_answer=0)
    spare = set(_bwrap_children()) - before
    assert len(spare) == 1
    outcome = run_command("echo ran", ctx, 60, box, spares)
    assert spares.used == 1 and outcome.output.text() == "ran\n" and outcome.exit_code == 0
    deadline = time.monotonic() + 60
    while spare & set(_bwrap_children()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not spare & set(_bwrap_children())


def test_a_spare_prepared_with_a_settle_time_starts_after_it(place: tuple[Path, Path]) -> None:
    """The loop's ready hook lets the request go out before the spare's start takes the GIL from it."""
    project, home = place
    box = Sandbox.for_project(project, home=home, env={"HOME": str(home)})
    ctx = ToolContext(root=project, sandbox=box)
    spares = Spares(take_wait=120, quick_answer=0)
    spares.prepare(box, command_environment(ctx), settle=1.0)  # no command yet: taken as a quick model
    assert spares.wait_started(120)
    run_command("true", ctx, 60, box, spares)  # slower than quick_answer: the model is one that thinks
    spares.prepare(box, command_environment(ctx), settle=1.0)
    assert not spares.wait_started(0.5)  # the worker sleeps a whole second first: this cannot be done yet
    assert spares.wait_started(120)
    outcome = run_command("echo ran", ctx, 60, box, spares)
    assert spares.used == 2 and outcome.output.text() == "ran\n"
    spares.close()
    assert _gone(project)


def test_a_spare_started_as_the_last_was_taken_is_checked_like_any(place: tuple[Path, Path]) -> None:
    """The next spare starts while a command runs: a protected file replaced after that still stays read-only."""
    project, home = place
    (project / ".envrc").write_text("old\n")
    box, ctx, spares = started_spare(project, home, quick_answer=600)
    run_command("true", ctx, 60, box, spares)  # the next spare starts as this one is taken
    assert spares.wait_started(120)
    _replace_envrc_then_write_to_it(project, ctx, box, spares)
    assert spares.used == 1 and spares.refused == 1
    spares.close()
    assert _gone(project)


def _replace_envrc_then_write_to_it(project: Path, ctx: ToolContext, box: Sandbox, spares: Spares) -> None:
    """Replace the protected `.envrc` as write_file does (a new file renamed over it) after the spare started,
    then try to append to it through the spare: the write must fail and the approved text stay."""
    (project / ".envrc.new").write_text("approved\n")
    os.replace(project / ".envrc.new", project / ".envrc")
    outcome = run_command("echo evil >> .envrc", ctx, 60, box, spares)
    assert outcome.exit_code != 0 and "Read-only file system" in outcome.output.text()
    assert (project / ".envrc").read_text() == "approved\n"


def _gone(project: Path) -> bool:
    """Whether every spare of this test's project has exited (waiting for a discarded one to be reaped)."""
    deadline = time.monotonic() + 120
    while _waiting_spares(project) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _waiting_spares(project) == []


def _waiting_spares(project: Path) -> list[int]:
    """Processes of this test's spares (their bwrap command line names the project)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"bwrap") and os.fsencode(str(project)) in argv:
            found.append(int(entry.name))
    return found


AS_USER = r"""
import json, sys
from pathlib import Path
from tests.tools.test_spare import SAME, both
project, home = Path(sys.argv[1]), Path(sys.argv[2])
print(json.dumps([command for command in SAME if len(set(map(str, both(project, home, command)))) != 1]))
"""


def test_a_spare_gives_what_a_fresh_launch_gives_to_an_unprivileged_user() -> None:
    # bwrap without privileges maps a user namespace of its own: the spare must be the same there too.
    from tests.unprivileged import hand_over, user_prefix, workspace

    prefix = user_prefix("nobody")
    with workspace("swecli-spare-nobody-") as base:
        home, project = base / "home", base / "project"
        (home / ".ssh").mkdir(parents=True)
        (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        hand_over(base, "nobody")
        repo = Path(__file__).resolve().parents[2]
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": str(repo), "LANG": "C.UTF-8"}
        out = subprocess.run([*prefix, sys.executable, "-c", AS_USER, str(project), str(home)], env=env, cwd=base,
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        assert json.loads(out.stdout) == []


LEFT_AS_USER = r"""
import json, sys, time
from pathlib import Path
from tests.tools.test_spare import LEFT_RUNNING
from swecli.tools import sandbox as sandbox_module
from swecli.tools.base import ToolContext
from swecli.tools.bash import command_environment, run_command
from swecli.tools.sandbox import Sandbox
from swecli.tools.spare import Spares
project, home = Path(sys.argv[1]), Path(sys.argv[2])
box = Sandbox.for_project(project, home=home, env={"HOME": str(home)})
ctx = ToolContext(root=project, sandbox=box)
found = []
for in_spare in (True, False, True, False):
    spares = Spares(take_wait=120)
    if in_spare:
        spares.prepare(box, command_environment(ctx))
    outcome = run_command(LEFT_RUNNING, ctx, 60, box, spares)
    spares.close()
    time.sleep(0.05)
    found.append([spares.used, any("created .envrc" in n for n in outcome.notes), (project / ".envrc").exists()])
    (project / ".envrc").unlink(missing_ok=True)
print(json.dumps(found))
"""


def test_what_a_command_left_running_cannot_plant_after_the_checks_as_an_unprivileged_user() -> None:
    assert _as_nobody(LEFT_AS_USER, "swecli-spare-left-") == [[1, True, False], [0, True, False]] * 2


def _as_nobody(script: str, prefix: str) -> Any:
    """What `script` prints (JSON), run as `nobody` with a git project and an empty home of its own."""
    from tests.unprivileged import hand_over, user_prefix, workspace

    with workspace(prefix) as base:
        home, project = base / "home", base / "project"
        home.mkdir()
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        hand_over(base, "nobody")
        repo = Path(__file__).resolve().parents[2]
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": str(repo), "LANG": "C.UTF-8"}
        out = subprocess.run([*user_prefix("nobody"), sys.executable, "-c", script, str(project), str(home)],
                             env=env, cwd=base, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        return json.loads(out.stdout)


HELD_AS_USER = r"""
import json, sys
from pathlib import Path
from swecli.tools import sandbox
from tests.tools.test_spare import _gone, run_held
sandbox.NAMESPACE_WAIT = 0.3
project, home = Path(sys.argv[1]), Path(sys.argv[2])
found = []
for in_spare in (True, False):
    notes, held = run_held(project, home, in_spare)
    found.append([held, any("were still there 0.6s after it ended" in n for n in notes),
                  any("created .envrc" in n for n in notes), (project / ".envrc").exists(), _gone(project)])
print(json.dumps(found))
"""


def test_a_sandbox_whose_processes_outlive_the_wait_is_killed_and_said_as_an_unprivileged_user() -> None:
    assert _as_nobody(HELD_AS_USER, "swecli-spare-held-") == [[True, True, True, False, True]] * 2


def test_a_spare_that_cannot_start_leaves_the_pool_working(place: tuple[Path, Path]) -> None:
    """Whatever a spare's start raises, the thread that starts and discards spares lives on (were it to die,
    every spare handed to it afterwards would be left waiting)."""
    project, home = place
    box = Sandbox.for_project(project, home=home, env={"HOME": str(home)})
    ctx = ToolContext(root=project, sandbox=box)
    spares = Spares(take_wait=120)
    spares.prepare(replace(box, bwrap="bw\0rap"), command_environment(ctx))  # Popen raises ValueError
    assert not spares.wait_started(120)
    spares.prepare(box, command_environment(ctx))
    assert spares.wait_started(120)
    assert run_command("echo fine", ctx, 60, box, spares).output.text() == "fine\n" and spares.used == 1
    spares.close()
    assert _gone(project)


def test_a_replaced_spare_is_discarded_before_its_successor_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """An order replacing a started spare while the thread sweeps (a spare's command is running) is queued after
    the replaced one's discard, not left for the next sweep ahead of it: two sandboxes are never kept at once."""
    from swecli.tools import spare as spare_module

    events: list[str] = []

    class Started:
        def __init__(self, name: str) -> None:
            self.name = name

        def discard(self) -> None:
            events.append(f"discard {self.name}")

    def start(sandbox: object, env: dict[str, str], **_: object) -> Started:
        events.append(f"start {env['N']}")
        return Started(env["N"])

    class Running:
        returncode: int | None = None

    monkeypatch.setattr(spare_module, "_start", start)
    spares = Spares()
    box = object()
    spares.prepare(box, {"N": "1"})  # type: ignore[arg-type]
    assert spares.wait_started(60)
    running = Running()
    sweep, sweeping, go_on = spares._sweep, threading.Event(), threading.Event()

    def held_sweep() -> None:  # the thread caught between two jobs (a sweep), as the order comes
        if spares._sweeping:
            sweeping.set()
            go_on.wait(60)
        sweep()

    monkeypatch.setattr(spares, "_sweep", held_sweep)
    spares._handed_over(running)  # type: ignore[arg-type]
    assert sweeping.wait(60)
    spares._quick = False  # a slow answer came: the ready hook's order waits its settle time
    spares.prepare(box, {"N": "2"}, settle=0.05)  # type: ignore[arg-type]
    go_on.set()
    deadline = time.monotonic() + 60
    while len(events) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    running.returncode = 0
    spares.close()
    assert events[:3] == ["start 1", "discard 1", "start 2"]
