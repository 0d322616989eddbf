"""The bubblewrap sandbox, run for real: what a command inside can write, see and reach.

Skipped (with the reason swecli itself would give) only where bwrap cannot run. The fake home lives
under /var/tmp, not /tmp, so that hiding it is the sandbox's doing and not a side effect of the
private /tmp.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from swecli.config import SandboxConfig
from swecli.tools.base import ToolContext, ToolResult
from swecli.tools.bash import BASH, BashArgs
from swecli.tools.sandbox import CANNOT_START, MISSING, Sandbox, from_settings, unavailable_reason

REASON = unavailable_reason()
needs_bwrap = pytest.mark.skipif(bool(REASON), reason=f"bwrap cannot run here: {REASON}")


@pytest.fixture
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="swecli-home-", dir="/var/tmp"))
    (path / ".ssh").mkdir()
    (path / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    (path / ".aws").mkdir()
    (path / ".aws" / "credentials").write_text("aws_secret_access_key = abc\n")
    (path / ".netrc").write_text("machine example.com password hunter2\n")
    (path / ".bashrc").write_text("alias ll='ls -l'\n")
    (path / ".gitconfig").write_text("[user]\n\tname = Ada\n")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def sandbox_for(project: Path, home: Path, **options: object) -> Sandbox:
    return Sandbox.for_project(project, home=home, env={"HOME": str(home)}, **options)  # type: ignore[arg-type]


def run(project: Path, sandbox: Sandbox | None, command: str, **ctx: object) -> ToolResult:
    context = ToolContext(root=project, bash_timeout=60, sandbox=sandbox, **ctx)  # type: ignore[arg-type]
    return BASH.fn(BashArgs(command=command), context)


@needs_bwrap
def test_project_writes_succeed_and_writes_elsewhere_fail(project: Path, home: Path) -> None:
    box = sandbox_for(project, home)
    ok = run(project, box, "echo made > inside.txt && mkdir -p sub/dir && echo deep > sub/dir/f && cat inside.txt")
    assert ok.meta["exit_code"] == 0 and ok.content.startswith("made")
    assert (project / "inside.txt").read_text() == "made\n" and (project / "sub/dir/f").exists()
    outside = run(project, box, f"echo escaped > {home}/escape.txt")
    assert outside.is_error and "Read-only file system" in outside.content
    assert not (home / "escape.txt").exists()
    assert outside.meta["sandbox"] == "workspace-write" and outside.meta["sandbox_denied"] == "read-only file system"
    assert "[sandbox] This command ran in swecli's sandbox" in outside.content
    assert outside.summary.endswith("blocked by the sandbox")
    etc = run(project, box, "touch /etc/swecli-was-here")
    assert etc.is_error and not Path("/etc/swecli-was-here").exists()


@needs_bwrap
def test_secrets_are_invisible_and_the_rest_of_home_is_readable(project: Path, home: Path) -> None:
    box = sandbox_for(project, home)
    result = run(project, box, f"ls -A {home}/.ssh {home}/.aws; cat {home}/.netrc; cat {home}/.ssh/id_rsa; "
                               f"cat {home}/.gitconfig; echo end")
    assert "PRIVATE KEY" not in result.content and "hunter2" not in result.content
    assert "aws_secret_access_key" not in result.content and "credentials" not in result.content
    assert "name = Ada" in result.content  # not a secret: readable
    assert f"{home}/.ssh/id_rsa: No such file or directory" in result.content
    hidden = run(project, box, f"touch {home}/.ssh/authorized_keys")
    assert hidden.is_error and not (home / ".ssh" / "authorized_keys").exists()
    assert (home / ".ssh" / "id_rsa").read_text() == "PRIVATE KEY\n"  # untouched outside


@needs_bwrap
def test_secret_environment_variables_are_not_passed_in(project: Path, home: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-123")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_456")
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    result = run(project, sandbox_for(project, home), "env")
    assert "sk-live-123" not in result.content and "ghp_456" not in result.content
    assert "PLAIN_SETTING=visible" in result.content and "TMPDIR=/tmp" in result.content
    assert "sk-live-123" in run(project, None, "env").content  # unsandboxed runs keep the user's environment


@needs_bwrap
def test_tmp_is_private_to_each_command(project: Path, home: Path) -> None:
    box = sandbox_for(project, home)
    marker = f"swecli-private-{os.getpid()}-{time.monotonic_ns()}"
    first = run(project, box, f"echo x > /tmp/{marker} && ls /tmp")
    assert first.meta["exit_code"] == 0 and marker in first.content
    assert not Path("/tmp", marker).exists()
    second = run(project, box, f"ls /tmp/{marker}")
    assert second.is_error and "No such file" in second.content


@needs_bwrap
def test_network_is_refused_unless_allowed(project: Path, home: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    threading.Thread(target=lambda: server.accept()[0].close(), daemon=True).start()
    probe = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5); print('connected')\""
    try:
        denied = run(project, sandbox_for(project, home), probe)
        assert denied.is_error and "Connection refused" in denied.content
        assert denied.meta["sandbox_denied"] == "network" and "sandbox.network = true" in denied.content
        allowed = run(project, sandbox_for(project, home, network=True), probe)
        assert allowed.meta["exit_code"] == 0 and "connected" in allowed.content
    finally:
        server.close()


@needs_bwrap
def test_read_only_mode_writes_nowhere_but_reads_the_project(project: Path, home: Path) -> None:
    (project / "notes.txt").write_text("hello\n")
    box = sandbox_for(project, home).read_only()
    assert run(project, box, "cat notes.txt").content.startswith("hello")
    denied = run(project, box, "echo x > notes.txt")
    assert denied.is_error and "Read-only file system" in denied.content
    assert (project / "notes.txt").read_text() == "hello\n"


@needs_bwrap
def test_writable_paths_and_a_worktree_git_directory_are_writable(project: Path, home: Path,
                                                                  tmp_path: Path) -> None:
    cache = home / ".cache"
    cache.mkdir()
    repo = tmp_path / "repo"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@e", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "init"], check=True)
    worktree = tmp_path / "wt"
    subprocess.run([*git, "-C", str(repo), "worktree", "add", "-q", str(worktree)], check=True)
    box = sandbox_for(worktree, home, writable_paths=["~/.cache"])
    assert run(worktree, box, f"echo c > {cache}/entry").meta["exit_code"] == 0
    assert (cache / "entry").read_text() == "c\n"
    committed = run(worktree, box, "echo a > a.txt && git add a.txt && git -c user.name=t -c user.email=t@e "
                                   "commit -q -m 'from the sandbox' && git log --oneline -1")
    assert committed.meta["exit_code"] == 0, committed.content
    assert "from the sandbox" in committed.content


@needs_bwrap
def test_interrupt_kills_everything_inside_the_sandbox(project: Path, home: Path) -> None:
    ctx = ToolContext(root=project, bash_timeout=60, sandbox=sandbox_for(project, home))
    threading.Timer(1.0, ctx.cancel.cancel).start()
    result = BASH.fn(BashArgs(command="sleep 31.7 & sleep 31.7 | cat"), ctx)
    assert "interrupted by user" in result.content and result.meta["interrupted"] is True
    deadline = time.monotonic() + 10
    while (left := _processes("sleep 31.7")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == []


def _processes(needle: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


@needs_bwrap
def test_a_blocked_command_may_run_again_outside_when_the_user_allows(project: Path, home: Path) -> None:
    asked: list[str] = []

    def escalate(why: str) -> bool:
        asked.append(why)
        return True

    result = run(project, sandbox_for(project, home), f"echo out > {home}/allowed.txt", escalate=escalate)
    assert asked and "Read-only file system" in asked[0]
    assert (home / "allowed.txt").read_text() == "out\n"
    assert result.meta["exit_code"] == 0 and result.meta["sandbox"] == "off"
    assert result.content.startswith("[sandbox] it failed in the sandbox")
    refused = run(project, sandbox_for(project, home), f"echo out > {home}/refused.txt", escalate=lambda why: False)
    assert refused.is_error and not (home / "refused.txt").exists() and "[sandbox]" in refused.content


def test_missing_bwrap_is_one_sentence_with_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH without bwrap
    assert unavailable_reason() == MISSING
    assert "apt-get install bubblewrap" in MISSING and 'sandbox.mode = "off"' in MISSING
    sandbox, problem, warnings = from_settings(SandboxConfig(), tmp_path)
    assert sandbox is not None and problem == MISSING and warnings == []
    assert from_settings(SandboxConfig(mode="off"), tmp_path) == (None, "", [])


def test_bwrap_that_cannot_start_is_reported_with_its_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # What bwrap prints in a container without unprivileged user namespaces.
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel "
                    "does not allow non-privileged user namespaces.' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    reason = unavailable_reason()
    assert reason == CANNOT_START.format(error="bwrap: No permissions to creating new namespace, likely because "
                                               "the kernel does not allow non-privileged user namespaces.")
    assert "kernel.unprivileged_userns_clone=1" in reason


def test_missing_writable_paths_are_named(project: Path) -> None:
    config = SandboxConfig(writable_paths=["no-such-dir"])
    sandbox, _, warnings = from_settings(config, project)
    assert sandbox is not None and sandbox.writable == ()
    assert warnings == ["sandbox.writable_paths: no-such-dir does not exist, so it is not writable in the sandbox; "
                        "create it or remove it from the setting."]


def test_the_bwrap_command_line(project: Path, home: Path) -> None:
    box = sandbox_for(project, home)
    argv = box.wrap(["/bin/bash", "-c", "true"])
    root = str(project.resolve())
    assert argv[:4] == ["bwrap", "--die-with-parent", "--unshare-pid", "--unshare-ipc"]
    assert "--unshare-net" in argv
    # the project is bound after the private /tmp (a project under /tmp stays visible), secrets last
    assert argv.index("--tmpfs") < argv.index(root)
    assert argv.index(str(home / ".ssh")) > argv.index(root)
    assert argv[argv.index(str(home / ".netrc")) - 2:argv.index(str(home / ".netrc"))] == ["--ro-bind", "/dev/null"]
    assert argv[-6:] == ["--chdir", root, "--", "/bin/bash", "-c", "true"]
    assert "--unshare-net" not in sandbox_for(project, home, network=True).wrap(["true"])
    assert box.describe() == ("workspace-write: writes to the project directory and a private /tmp; no network; "
                              "credentials hidden")
