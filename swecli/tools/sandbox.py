"""The OS sandbox for bash: bubblewrap (`bwrap`) on Linux.

A sandboxed command sees the whole file system read-only, except:
- the project directory: read-write in `workspace-write`, read-only in `read-only` (plan mode); when
  the project is a git worktree, its git directory is writable too, so `git commit` works;
- `sandbox.writable_paths` (e.g. `~/.cache` for build caches);
- a private, empty `/tmp` (and `/dev/shm`) that disappears with the command; toolchains that live
  under /tmp and are on the command's PATH (a virtualenv) are mounted into it read-only.

Inside the writable project, what runs later outside the sandbox stays read-only (`PROTECTED_DIRS`
and `PROTECTED_FILES` of `swecli/tools/protected.py`: `.git/config`, `.git/hooks`, `.swecli`,
`.envrc`, `.vscode`, ...), while the rest of `.git` stays writable for add, commit, branch and stash.
A protected directory that does not exist yet is covered by an empty placeholder directory (created
once, removed at exit if still empty); a protected file that does not exist yet and that a command
creates is moved to `.swecli/blocked/` when the command ends, and the model is told.

The user's credentials are not visible at all: each existing entry of `SECRET_PATHS` under the home
directory (plus `sandbox.hidden_paths`), `$XDG_RUNTIME_DIR` (agent sockets, the D-Bus session bus)
and the Docker socket is covered, an empty read-only directory over a directory, `/dev/null` over a
file. The environment is an allowlist (`swecli/tools/environment.py`). There is no network (a
namespace with only an unconnected loopback, and a seccomp filter against unix and vsock sockets,
`swecli/tools/syscalls.py`) unless `sandbox.network = true`, and a private PID namespace with a
fresh /proc, so a command cannot signal, trace or read the environment of the user's other
processes (swecli's included); background jobs end with the command.

No capabilities inside, for root too: bwrap runs with `--cap-drop ALL` in its own user namespace
(`--unshare-user`, uid mapped to itself) where nested user namespaces are disabled
(`--disable-userns`), so `mount`, `umount`, `nsenter` and `unshare` fail. A setuid bwrap run by a user
cannot do that: there `--cap-drop ALL` alone (see `isolation_flags`).

The command stays in the process group swecli starts, so Esc and timeouts still kill everything it
started; `--die-with-parent` covers swecli itself dying.

`unavailable_reason()` says, once per process, why bwrap cannot be used (not installed, or cannot
create namespaces in this container), in one sentence with the fix. `Sandbox.explain_failure()`
recognizes a failure the sandbox caused (read-only file system, permission denied outside the
writable paths, no network) so the model is told, not left guessing.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field, replace
from pathlib import Path
from typing import Literal

from swecli.config import SandboxConfig
from swecli.lazy import regex
from swecli.records import datarecord
from swecli.tools import gitlinks, syscalls
from swecli.tools.own_process import command_writable, find_outside, setting_path, trusted_program
from swecli.tools.protected import (
    HOME_PROFILES,
    PROTECTED_DIRS,
    PROTECTED_FILES,
    SYSTEM_DIRS,
    add_placeholder,
    credential_locations,
    remove_placeholders,
    system_secrets,
)

SandboxMode = Literal["workspace-write", "read-only", "off"]

_BASE_FLAGS = ("--die-with-parent", "--unshare-pid", "--unshare-ipc")
_FILESYSTEM_ROOT = Path("/")
"""Made once: a `Path` built to compare with (~20,000 instructions) cost more than the rest of a comparison."""
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
"""Parts of the fresh /proc bound read-only (Docker's list): writing a sysctl needs no capability, only uid 0
(kernel/sysctl.c test_perm), and root inside is uid 0 outside, so /proc/sys/kernel/core_pattern or
/proc/sys/kernel/modprobe would name a program the kernel then runs as root outside the sandbox."""
_ISOLATION_CHOICES = (("--unshare-user", "--disable-userns", "--cap-drop", "ALL"), ("--cap-drop", "ALL"))
"""Tried in order by `isolation_flags`: the first bwrap accepts here is used."""
_CHILD_PID = regex(rb'"child-pid"\s*:\s*(\d+)')
INFO_WAIT = 5.0
"""Seconds to wait for bwrap's info (it writes it right after its first clone; a failed start closes it)."""
NAMESPACE_WAIT = 5.0
"""Seconds to wait, after a command, for its sandbox's last process (killed with SIGKILL: milliseconds); once
more after a second SIGKILL when that was not enough (`Reports.end_namespace`). Read when waiting."""
_TOOLCHAIN_VARIABLES = ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "GOROOT", "GOPATH")
_EROFS = regex(r"[^\n]*Read-only file system[^\n]*")
_EBUSY = regex(r"[^\n]*Device or resource busy[^\n]*")  # a rename over a protected file (git config)
_PROTECTED_MENTION = regex(
    "|".join(re.escape(p) for p in (*PROTECTED_DIRS, *PROTECTED_FILES, *HOME_PROFILES, ".git/modules")))
_EACCES = regex(r"[^\n]*Permission denied[^\n]*")
_PATH = regex(r"(/[^\s'\"`:,)]+)")
_NETWORK = regex(
    r"[^\n]*(?:Network is unreachable|Temporary failure in name resolution|Could not resolve host|"
    r"Name or service not known|nodename nor servname|getaddrinfo|Failed to establish a new connection|"
    r"Couldn't connect to server|Failed to connect to|Connection refused|No route to host|EAI_AGAIN|ENOTFOUND|"
    r"ENETUNREACH|ECONNREFUSED|unable to access 'https?://)[^\n]*", re.IGNORECASE)


@datarecord(frozen=True)
class Denial:
    """A failure the sandbox caused."""

    kind: Literal["read-only file system", "protected path", "permission denied", "network"]
    evidence: str
    """The output line that shows it."""


@datarecord(frozen=True)
class Layout:
    """What one command's mounts protect beyond the fixed ones (computed per command: files come and go)."""

    read_only: tuple[Path, ...] = ()
    """Existing protected paths (and placeholder directories) mounted read-only over the writable project."""
    toolchains: tuple[Path, ...] = ()
    """Directories under /tmp that hold the command's PATH entries, mounted read-only into the private /tmp."""
    watched: tuple[Path, ...] = ()
    """Protected files that do not exist yet: one the command creates is moved aside when it ends."""
    pinned: tuple[Path, ...] = ()
    """Directories inside the project that hold protected paths (`.git`), bound onto themselves: a mount
    point cannot be renamed, so a command cannot move `.git` aside and put a copy with its own config there."""
    checks: tuple[Callable[[], list[str]], ...] = ()
    """Run when the command has ended: each moves aside what the command planted (a protected file it
    created, a new dot entry of the home, a submodule set to run something) and says so in a sentence."""


@datarecord(frozen=True)
class Mounts:
    """Everything a command's bwrap line is made of besides the sandbox's own settings (`Sandbox.command_line`):
    the bwrap found, the isolation flags it takes, the layout's mounts, and which hidden paths are directories now."""

    program: str
    """The bwrap started (`bwrap_program`: found on PATH outside the project)."""
    isolation: tuple[str, ...]
    toolchains: tuple[Path, ...]
    pinned: tuple[Path, ...]
    read_only: tuple[Path, ...]
    hidden_dirs: tuple[bool, ...]
    """`Path.is_dir()` of each of `Sandbox.hidden`, in order: an empty directory over a directory, /dev/null over
    anything else."""


@datarecord
class Reports:
    """How a sandboxed command's end is learned without waiting for bubblewrap to exit.

    Inside the sandbox the command is started by a runner shell (`runner`) that waits for it and writes its
    exit status on a pipe of its own. The command's output goes to a pipe only the command (and the runner,
    until the command exits) holds: bwrap passes extra descriptors on, and both of its processes (the one
    outside and the namespace's init) close every one but 0-2 (`close_extra_fds`), so the output ends when
    the command and whatever it left running close it, not when bwrap's exit chain has run (the command's exit
    wakes the init, which signals the outer bwrap, which exits: ~3 ms a call at load 5.6, ~0.4 ms on a quiet
    machine, where the runner's own fork costs ~1 ms more: docs/latency.md, percall3). bwrap's
    own messages (and the runner's) go to a memfd, read when the command has ended.
    """

    output: int
    """Read end of the command's output pipe."""
    status: int
    """Read end of the runner's status pipe: the command's exit status as a decimal line, then end-of-file."""
    messages: int
    """A memfd: bwrap's and the runner's own stdout and stderr."""
    passed: tuple[int, ...]
    """The write ends for bwrap (`pass_fds`: output, status, info), closed here once it is started."""
    info: int = -1
    """Read end of bwrap's `--info-fd`: its JSON names the namespace's init (`child-pid`)."""
    init: int = -1
    """A pidfd of the PID namespace's init (`learn_init`), -1 when there is none (see `init_unknown`)."""
    init_unknown: bool = False
    """The init's pid did not come in time or no pidfd could be opened on it: its end cannot be waited for."""
    mount_ns: int = -1
    """The sandbox's mount namespace (`/proc/INIT/ns/mnt`), held so that the init's exit does not tear it down:
    the last holder of a mount namespace unmounts its whole tree and waits for an RCU grace period
    (`namespace_unlock`), ~0.35 ms of the command's path here. `release_mounts` hands it over to be closed off
    the path (by the spare thread); nothing can run in a namespace without processes. Held only for a spare
    started while the model thinks (`learn_init`'s `hold_mounts`): with a model that answers at once the next
    spare starts beside the command, and the teardown's moving measured worse (docs/latency.md)."""

    @classmethod
    def open(cls) -> Reports:
        output, output_write = os.pipe()
        status, status_write = os.pipe()
        info, info_write = os.pipe()
        messages = os.memfd_create("swecli-sandbox-messages")
        return cls(output, status, messages, (output_write, status_write, info_write), info)

    @property
    def info_fd(self) -> int:
        """The write end bwrap is told to write its info to (`--info-fd`)."""
        return self.passed[2]

    def runner(self, command: str) -> str:
        """The script that runs `command` (`"$@"`, or a spare's waiting subshell, `spare._WAITER`) with its output on
        the output pipe and its exit status written after it. SHLVL is given back the level the runner shell
        counted (as bash's own `exec` does), so the command's environment is what `bwrap -- argv` gives it.
        The runner then exits with the command's status, so bwrap's own exit status says the same as the report
        (bwrap exits with its child's): whichever of the two swecli sees first, the exit code is the command's."""
        out, status = self.passed[:2]
        return (f'SHLVL=$((SHLVL-1)); {command} >&{out} 2>&1 {out}>&- {status}>&-; code=$?; exec {out}>&-; '
                f'echo "$code" >&{status}; exit "$code"')

    def started(self) -> None:
        """bwrap has its copies of the write ends: drop swecli's (the output's end-of-file depends on it)."""
        for fd in self.passed:
            os.close(fd)
        self.passed = ()

    def learn_init(self, timeout: float = INFO_WAIT, hold_mounts: bool = False) -> None:
        """Open a pidfd on the namespace's init, whose pid bwrap writes as soon as it has cloned it (before the
        sandbox is set up). The init exits only once every process of the namespace is gone (the kernel kills
        and waits for them: `zap_pid_ns_processes`), which `wait_for_namespace` waits for. Info closed without a
        pid means bwrap made no namespace (it writes the pid right after the clone, before anything can fail);
        info not come in time, or a pidfd that could not be opened, leaves the init unknown (`init_unknown`)."""
        text = b""
        closed = False
        deadline = time.monotonic() + timeout
        while self.info >= 0 and b"}" not in text and (left := deadline - time.monotonic()) > 0:
            if not select.select([self.info], [], [], left)[0]:
                break
            chunk = os.read(self.info, 4096)
            closed = not chunk
            if closed:
                break
            text += chunk
        found = _CHILD_PID.search(text)
        if found is None:
            self.init_unknown = self.info >= 0 and not closed
        else:
            try:
                self.init = os.pidfd_open(int(found[1]))
            except ProcessLookupError:
                pass  # gone already: its namespace is empty
            except OSError:
                self.init_unknown = True
            else:
                if hold_mounts:
                    self._hold_mounts(int(found[1]))
        self._close_info()

    def _hold_mounts(self, pid: int) -> None:
        """Open the init's mount namespace (bwrap clones it with the namespace: the sandbox's from the start);
        not held when that fails, or when the pid may no longer be the init's (it has exited: then the
        namespace is gone anyway)."""
        with contextlib.suppress(OSError):
            self.mount_ns = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
        if self.mount_ns >= 0 and select.select([self.init], [], [], 0)[0]:
            os.close(self.mount_ns)
            self.mount_ns = -1

    def release_mounts(self) -> int:
        """The held mount namespace's descriptor (-1 if none), no longer this object's to close."""
        fd, self.mount_ns = self.mount_ns, -1
        return fd

    def wait_for_namespace(self, timeout: float | None = None) -> bool:
        """Wait until no process of the sandbox is left (its init has exited; its group was killed, and a
        process in a session of its own dies with the init): what runs after a command (the checks) must not
        race with what the command left running. False when that was not seen within `timeout`
        (`NAMESPACE_WAIT`), or cannot be seen (the init is unknown)."""
        if self.init < 0:
            return not self.init_unknown
        return bool(select.select([self.init], [], [], NAMESPACE_WAIT if timeout is None else timeout)[0])

    def end_namespace(self) -> str:
        """The namespace was not seen empty in time: SIGKILL its init again (its death makes the kernel kill
        every process of the namespace; the group's kill may have missed it) and wait once more. Returns the
        note for the model and the user; the checks run after this either way."""
        waited = NAMESPACE_WAIT
        if self.init >= 0:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.init, signal.SIGKILL)
        if self.wait_for_namespace():
            return (f"[sandbox] processes the command left running were still there {waited:g}s after it ended; "
                    "they were killed, and the checks after the command ran once they were gone")
        seen = ("could not be seen to end (bwrap did not name the sandbox's first process in time)"
                if self.init_unknown else f"were still there {2 * waited:g}s after it ended (killed, but not gone: "
                "a process stuck in the kernel, e.g. on a hung file system)")
        return (f"[sandbox] processes the command left running {seen}; the checks after the command ran anyway, "
                "so a protected file (.envrc, .git/hooks, .git/config...) they write from now on was not moved aside: "
                "check the project before running anything in it outside swecli")

    def _close_info(self) -> None:
        if self.info >= 0:
            os.close(self.info)
            self.info = -1

    def said(self) -> bytes:
        """What bwrap or the runner printed (a set-up failure's message), usually nothing."""
        size = os.fstat(self.messages).st_size
        return os.pread(self.messages, size, 0) if size else b""

    def close(self) -> None:
        self.started()
        self._close_info()
        for fd in (self.output, self.status, self.messages, self.init, self.mount_ns):
            if fd >= 0:
                os.close(fd)
        self.output = self.status = self.messages = self.init = self.mount_ns = -1


@datarecord
class Launch:
    """A sandboxed command ready for `subprocess.Popen`; `close()` once it has ended."""

    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...]
    root: Path
    checks: tuple[Callable[[], list[str]], ...] = ()
    notes: list[str] = field(default_factory=list)
    reports: Reports | None = None
    """The command's own output and exit status (`Reports`), closed with the launch."""

    @property
    def descriptors(self) -> tuple[int, ...]:
        """What bwrap is given (`Popen`'s `pass_fds`): the filter and the reports' write ends."""
        return self.pass_fds + (self.reports.passed if self.reports is not None else ())

    def close(self) -> list[str]:
        """Release the descriptors and move aside what the command planted; returns one sentence per thing
        moved, for the model."""
        for fd in self.pass_fds:
            os.close(fd)
        self.pass_fds = ()
        if self.reports is not None:
            self.reports.close()
        for check in self.checks:
            self.notes += check()
        self.checks = ()
        return self.notes


@datarecord(frozen=True)
class Sandbox:
    """How one bash command is confined (build one with `Sandbox.for_project`)."""

    root: Path
    mode: Literal["workspace-write", "read-only"] = "workspace-write"
    writable: tuple[Path, ...] = ()
    network: bool = False
    hidden: tuple[Path, ...] = ()
    """Existing paths to cover (credentials, agent sockets)."""
    home: Path | None = None
    """The user's home directory: its dotfiles are protected when the project holds it."""
    git_dirs: tuple[Path, ...] = ()
    """The project's git directories (`.git`, or a worktree's git and common directories)."""
    bwrap: str = "bwrap"
    own: tuple[Path, ...] = ()
    """swecli's own code and interpreter (`sys.prefix`, `sys.path`) where a writable path holds them, read-only,
    and its own settings and cache folders there (hidden as credentials are); the folders above each are pinned."""

    @classmethod
    def for_project(cls, root: Path, *, mode: Literal["workspace-write", "read-only"] = "workspace-write",
                    writable_paths: Iterable[str] = (), network: bool = False, hidden_paths: Iterable[str] = (),
                    home: Path | None = None, env: Mapping[str, str] | None = None) -> Sandbox:
        """Resolve the configured paths: `~` is the home directory, relative paths are under the root.
        Writable paths that do not exist are left out (bwrap cannot mount them); see `from_settings`."""
        env = os.environ if env is None else env
        root = root.resolve()
        home = (home or Path(env.get("HOME") or Path.home())).resolve()
        writable = [p for p in (setting_path(w, root, home) for w in writable_paths) if p.exists()]
        linked = gitlinks.linked_git_dirs(root)
        git_dirs = gitlinks.git_dirs(root)
        every = tuple(dict.fromkeys([*linked, *writable]))
        state = _own_state(home, env, every)  # made before `_hidden` looks: only what exists is hidden
        return cls(root=root, mode=mode, writable=every, network=network, hidden=_hidden(root, home, hidden_paths, env),
                   home=home, git_dirs=tuple(git_dirs), own=(*_own_installation(root, every, env), *state))

    def read_only(self) -> Sandbox:
        """The same sandbox for plan mode: nothing writable but the private /tmp, no network."""
        return replace(self, mode="read-only", network=False)

    def describe(self) -> str:
        writes = ("the project directory" + (", " + ", ".join(map(str, self.writable)) if self.writable else "")
                  + " and a private /tmp") if self.mode == "workspace-write" else "only a private /tmp"
        network = "network allowed" if self.network else "no network"
        protected = "; .git/config, .git/hooks, .swecli and other protected paths read-only" \
            if self.mode == "workspace-write" else ""
        return f"{self.mode}: writes to {writes}{protected}; {network}; credentials hidden"

    def launch(self, argv: list[str], env: Mapping[str, str]) -> Launch:
        """Everything `Popen` needs to run `argv` inside the sandbox with the environment `env` (already
        the allowlisted one), through the runner that reports its end (`Reports`: bwrap's stdout and stderr
        go to `reports.messages`); placeholders for missing protected directories are made here."""
        inner = self.environment(env)
        layout = self.layout(inner)
        fd = syscalls.filter_fd(network=self.network)
        reports = Reports.open()
        runner = ["/bin/bash", "-c", reports.runner('"$@"'), "swecli-runner", *argv]
        return Launch(self.wrap(runner, layout, fd, reports.info_fd), inner, () if fd is None else (fd,), self.root,
                      layout.checks, reports=reports)

    def wrap(self, argv: list[str], layout: Layout | None = None, seccomp_fd: int | None = None,
             info_fd: int | None = None) -> list[str]:
        """The bwrap command line that runs `argv` inside the sandbox."""
        return self.command_line(argv, self.mounts(layout or Layout()), seccomp_fd, info_fd)

    def mounts(self, layout: Layout) -> Mounts:
        """What this command's line is made of beyond the sandbox's settings, read now (`command_line`)."""
        program = bwrap_program(self.bwrap, self.root, self.writable)
        if program is None:  # unavailable_reason said so first: the session does not sandbox with it
            raise OSError(errno.ENOENT, f"{self.bwrap} is not installed outside the project")
        return Mounts(program, isolation_flags(program), layout.toolchains, layout.pinned, layout.read_only,
                      tuple(path.is_dir() for path in self.hidden))

    def command_line(self, argv: list[str], mounts: Mounts, seccomp_fd: int | None = None,
                     info_fd: int | None = None) -> list[str]:
        """The bwrap command line from the sandbox's settings and `mounts` alone: one sandbox with equal
        `Mounts` makes the same line (a spare is checked that way, `swecli/tools/spare.py`)."""
        args = [mounts.program, *_BASE_FLAGS, *mounts.isolation]
        if not self.network:
            args.append("--unshare-net")
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        if info_fd is not None:
            args += ["--info-fd", str(info_fd)]
        whole = self.root == _FILESYSTEM_ROOT and self.mode == "workspace-write"  # started in /: see docs
        args += ["--bind" if whole else "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for proc in PROC_READ_ONLY:
            args += ["--ro-bind-try", proc, proc]
        args += ["--tmpfs", "/tmp"]
        for path in mounts.toolchains:
            args += ["--ro-bind", str(path), str(path)]
        if not whole:
            bind = "--bind" if self.mode == "workspace-write" else "--ro-bind"
            args += [bind, str(self.root), str(self.root)]  # after /tmp: a project under /tmp stays visible
        if self.mode == "workspace-write":
            for path in (*self.writable, *mounts.pinned):
                args += ["--bind", str(path), str(path)]
        for path in mounts.read_only:  # after the writable binds they sit in
            args += ["--ro-bind", str(path), str(path)]
        for path, is_dir in zip(self.hidden, mounts.hidden_dirs, strict=True):  # last: they win over every bind
            if is_dir:
                args += ["--tmpfs", str(path), "--remount-ro", str(path)]
            else:
                args += ["--ro-bind", "/dev/null", str(path)]
        return [*args, "--chdir", str(self.root), "--", *argv]

    def layout(self, env: Mapping[str, str]) -> Layout:
        """The per-command mounts: toolchains under /tmp; in workspace-write, the protected paths, the
        directories that hold them, and the checks that run after the command."""
        toolchains = _tmp_toolchains(env)
        if self.mode != "workspace-write":
            return Layout(toolchains=toolchains)
        seen = _Seen()
        dirs, files, existing = self._protected(seen)
        submodules = Submodules.at(self.root, self.git_dirs)
        dirs += submodules.hooks
        existing += submodules.read_only
        placeholders = [path for path in dirs if not seen.exists(path) and seen.made(path, _placeholder(path))]
        read_only = list(dict.fromkeys([*existing, *(p for p in (*dirs, *files) if seen.exists(p)), *placeholders,
                                        *self.own]))
        watched = tuple(path for path in files if not seen.exists(path))
        checks: list[Callable[[], list[str]]] = [functools.partial(_quarantine_created, self.root, watched),
                                                 submodules.check]
        if self.home is not None and _inside(self.home, self.root):
            checks.append(_new_entries_check(self.root, self.home))
        own_holders = (path for base in self.writable for path in _holders(base, self.own))  # `~/.local/lib`
        pinned = (*_holders(self.root, [*read_only, *watched]), *own_holders)
        return Layout(tuple(read_only), toolchains, watched, pinned, tuple(checks))

    def _protected(self, seen: _Seen) -> tuple[list[Path], list[Path], list[Path]]:
        """(protected directories, protected files, other existing paths to keep read-only)."""
        top_dirs, top_files = _top_protected(self.root)
        dirs, files = list(top_dirs), list(top_files)
        marker = _git_marker(self.root)
        existing: list[Path] = [marker] if marker.is_file() else []  # a worktree's pointer
        for git_dir in self.git_dirs:
            names = _git_names(git_dir)
            existing += [path for path in (names.config_worktree, names.commondir) if seen.exists(path)]
            if names.linked:
                continue  # a linked worktree's own git directory: hooks and config live in the common one
            hook_dirs, hook_files = gitlinks.hook_paths(git_dir, self.root)  # husky's .husky, included configs
            dirs += [names.hooks, *hook_dirs]
            files += [names.config, names.commondir, *hook_files]
            if os.path.isdir(names.modules):  # what the globs below read: nothing matches without it
                existing += sorted(git_dir.glob("modules/*/config")) + sorted(git_dir.glob("modules/*/hooks"))
        home = self.home
        if home is not None and _inside(home, self.root) and home.is_dir():
            existing += sorted(p for p in home.iterdir() if p.name.startswith(".") and p.exists())
            files += [home / name for name in HOME_PROFILES]
        if self.root == _FILESYSTEM_ROOT:
            existing += [Path("/", d) for d in sorted(SYSTEM_DIRS) if Path("/", d).is_dir()]
        return dirs, files, existing

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` with the temporary-directory variables pointing at the private /tmp."""
        inner = dict(env)
        for name in ("TMPDIR", *(n for n in ("TMP", "TEMP") if n in env)):
            inner[name] = "/tmp"
        return inner

    def explain_failure(self, output: str) -> Denial | None:
        """The sandbox restriction a failed command's output points to, or None."""
        match = _EROFS.search(output) or _EBUSY.search(output)
        if match:
            line = match.group(0).strip()
            protected = self.mode == "workspace-write" and _PROTECTED_MENTION.search(line)
            return Denial("protected path" if protected else "read-only file system", line)
        for line in _EACCES.findall(output):
            if any(not self._writable(Path(p)) for p in _PATH.findall(line)):
                return Denial("permission denied", line.strip())
        if not self.network:
            match = _NETWORK.search(output)
            if match:
                return Denial("network", match.group(0).strip())
        return None

    def _writable(self, path: Path) -> bool:
        if path == Path("/tmp") or path.is_relative_to("/tmp"):
            return True
        bases = (self.root, *self.writable) if self.mode == "workspace-write" else ()
        return any(path == base or path.is_relative_to(base) for base in bases)

    def advice(self, denial: Denial) -> str:
        """What the model is told under the failed command's output."""
        if denial.kind == "protected path":
            return (f"[sandbox] This command ran in swecli's sandbox and failed because that path is protected: what "
                    "runs later outside the sandbox (git's hooks and config, .swecli, .envrc, editor settings, the "
                    f"memory files) is read-only to commands: {denial.evidence}\nDo not retry it, nor look for another "
                    "way around. If the change is needed, make it with write_file or edit_file, which ask the user "
                    "first, or tell the user what to change.")
        if denial.kind == "network":
            cause = "it has no network access"
            fix = "sandbox.network = true"
        else:
            cause = f"that path is read-only or hidden in the sandbox ({self.describe()})"
            fix = "sandbox.writable_paths"
        return (f"[sandbox] This command ran in swecli's sandbox and failed because {cause}: {denial.evidence}\n"
                "Do not retry it unchanged. Find a way that stays inside the project (e.g. a virtualenv, cache "
                "or temporary directory under it), or tell the user what needs to run outside the sandbox; they "
                f"can allow it with {fix} in .swecli/config.toml or run swecli with --sandbox off.")


def from_settings(config: SandboxConfig, root: Path, env: Mapping[str, str] | None = None) -> tuple[
        Sandbox | None, str, list[str]]:
    """(the configured sandbox, or None when `sandbox.mode = "off"`; why it cannot run here, or "";
    one sentence per writable path that does not exist and is therefore left out, and the seccomp filter's
    warning): `configured`, then `probe_findings`."""
    sandbox, warnings = configured(config, root, env)
    if sandbox is None:
        return None, "", []
    problem, found = probe_findings(sandbox.root, network=config.network, writable=sandbox.writable)
    return sandbox, problem, warnings + found


def configured(config: SandboxConfig, root: Path, env: Mapping[str, str] | None = None) -> tuple[
        Sandbox | None, list[str]]:
    """`from_settings` without running anything: the sandbox (None when off) and the writable paths' warnings."""
    if config.mode == "off":
        return None, []
    env = os.environ if env is None else env
    sandbox = Sandbox.for_project(root, mode=config.mode, writable_paths=config.writable_paths,
                                  network=config.network, hidden_paths=config.hidden_paths, env=env)
    home = Path(env.get("HOME") or Path.home())
    missing = [p for p in config.writable_paths if not setting_path(p, sandbox.root, home).exists()]
    return sandbox, [f"sandbox.writable_paths: {p} does not exist, so it is not writable in the sandbox; create "
                     "it or remove it from the setting." for p in missing]


def probe_findings(root: Path, *, network: bool, writable: tuple[Path, ...] = ()) -> tuple[str, list[str]]:
    """What the start's probe finds (once per process; bwrap run, `ldconfig -p` and the seccomp binding
    loaded): why bwrap cannot sandbox commands in `root`'s project with the sandbox's `writable` folders ("" when
    it can), and the seccomp filter's warning when commands would run without it."""
    problem = unavailable_reason(root, writable)
    if not problem and not network and syscalls.unavailable():
        return problem, [syscalls.unavailable()]
    return problem, []


def _hidden(root: Path, home: Path, extra: Iterable[str], env: Mapping[str, str]) -> tuple[Path, ...]:
    candidates = [Path(p) for p in credential_locations(home, env)] + [setting_path(p, root, home) for p in extra]
    runtime = env.get("XDG_RUNTIME_DIR")
    candidates += [Path(runtime)] if runtime else []
    candidates += [Path("/var/run/docker.sock"), Path("/run/docker.sock"), *system_secrets()]
    hidden: list[Path] = []
    for path in candidates:
        if not os.path.lexists(path):
            continue
        real = path.resolve()
        if root == real or root.is_relative_to(real):
            continue  # never hide the project itself
        hidden.append(real)
    return tuple(dict.fromkeys(hidden))


def _own_installation(root: Path, writable: tuple[Path, ...], env: Mapping[str, str]) -> tuple[Path, ...]:
    """Where swecli's interpreter and imports live (the virtualenv, its site-packages, the user's site-packages,
    PYTHONPATH) inside one of `writable`: pipx, `uv tool` and `pip install --user` put swecli under `~/.local`,
    and with `~/.local` writable one command rewrote the code the next session ran outside the sandbox
    (measured). So are the folders of `LD_LIBRARY_PATH`, where the loader of the next bwrap swecli starts (and
    of the next swecli) looks first: a `libcap.so.2` a command wrote into `~/.local/lib` ran in bwrap, outside
    the sandbox (measured). Inside the project they stay writable: its own virtualenv must take `pip install`."""
    libraries = env.get("LD_LIBRARY_PATH", "").split(os.pathsep)  # a relative entry: the project, writable anyway
    found: list[Path] = []
    for entry in (sys.prefix, *sys.path, *(entry for entry in libraries if os.path.isabs(entry))):
        real = Path(entry).resolve() if entry else root
        if real.is_dir() and not real.is_relative_to(root) and any(real.is_relative_to(w) for w in writable):
            found.append(real)
    return tuple(p for p in dict.fromkeys(found) if not any(p != q and p.is_relative_to(q) for q in found))


def _own_state(home: Path, env: Mapping[str, str], writable: tuple[Path, ...]) -> tuple[Path, ...]:
    """swecli's own folders in the home where a writable path holds them: its settings and trust
    (`$XDG_CONFIG_HOME/swecli`) and what it keeps between runs (`sealed.cache_home`: the compiled code the next
    start runs, the vocabularies, the context windows), made now (0700). Both are hidden from commands
    (`SECRET_PATHS`), but a mount can only hide a folder that exists: with `~/.config` writable and no
    `~/.config/swecli` yet, one command made it and wrote the settings the next session trusts; and with `~`
    writable, `mv ~/.cache ~/.cache.old` took the hidden folder away with its parent (measured, root and
    nobody). Pinned through `Sandbox.own`, the folders above them cannot be renamed."""
    from swecli.sealed import cache_home

    config = env.get("XDG_CONFIG_HOME") or ""
    cache = cache_home(env)  # the folder swecli reads its cache from (None: it keeps none)
    found: list[Path] = []
    for folder in ((Path(config) if os.path.isabs(config) else home / ".config") / "swecli",
                   *([Path(cache)] if cache else [])):
        real = folder.resolve()
        if not any(real.is_relative_to(w) for w in writable):
            continue
        with contextlib.suppress(OSError):  # not made (a read-only home): nothing to plant it in either
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if folder.is_dir():
            found.append(folder.resolve())
    return tuple(found)


def _tmp_toolchains(env: Mapping[str, str]) -> tuple[Path, ...]:
    """The top directories under /tmp of the toolchain locations in `env` (PATH entries, VIRTUAL_ENV,
    *_HOME, ...): the private /tmp would hide them, and another interpreter would answer instead."""
    names = [*_TOOLCHAIN_VARIABLES, *(n for n in env if n.endswith("_HOME") and not n.startswith("XDG_"))]
    found: list[Path] = []
    for entry in (e for name in names for e in env.get(name, "").split(os.pathsep)):
        if not entry.startswith("/tmp/"):
            continue
        real = Path(entry).resolve()
        if real.is_relative_to("/tmp") and real != Path("/tmp") and real.exists():
            found.append(Path("/tmp", real.relative_to("/tmp").parts[0]))
    return tuple(dict.fromkeys(found))


def _placeholder(path: Path) -> bool:
    """Make an empty directory where a protected directory is missing, so a read-only mount can cover
    it (bwrap cannot mount over nothing); it is removed at exit if still empty. False if it cannot be
    made (then a command cannot make it either)."""
    made = add_placeholder(path)
    if made is None:
        return path.is_dir()
    if made:
        atexit.register(remove_placeholders)
    return True


def _quarantine(root: Path, path: Path) -> str:
    """Move a protected file a sandboxed command created out of the way; the sentence for the model."""
    shown = _shown(root, path)
    moved = _move_aside(root, path)
    if moved.startswith("("):
        return (f"[sandbox] The command created {shown}, a protected path, and swecli could not move it aside "
                f"{moved}; tell the user to review it before anything runs it.")
    return (f"[sandbox] The command created {shown}, a protected path (it runs later outside the sandbox or "
            f"steers the next session), so swecli moved it to {moved}. To create it, use write_file, which "
            "asks the user first.")


def _move_aside(root: Path, path: Path) -> str:
    """Move `path` into `.swecli/blocked/` under `root`: where it went (relative to the root), or why not
    in parentheses."""
    folder = root / ".swecli" / "blocked"
    target = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{_shown(root, path).replace('/', '%')}"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.replace(path, target)
    except OSError as exc:
        return f"({exc})"
    return target.relative_to(root).as_posix()


def _shown(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


@datarecord(frozen=True)
class _GitNames:
    """The paths a layout (and `Submodules.at`) asks about in one git directory: joined once (a `Path` join is
    ~4 us, a layout made ~10), whether each exists is asked per command."""

    config_worktree: Path
    commondir: Path
    hooks: Path
    config: Path
    index: Path
    modules: str
    linked: bool
    """A linked worktree's own git directory (`.git/worktrees/NAME`)."""


@functools.lru_cache(maxsize=16)
def _git_names(git_dir: Path) -> _GitNames:
    return _GitNames(git_dir / "config.worktree", git_dir / "commondir", git_dir / "hooks", git_dir / "config",
                     git_dir / "index", str(git_dir / "modules"), git_dir.parent.name == "worktrees")


@functools.lru_cache(maxsize=8)
def _git_marker(root: Path) -> Path:
    return root / ".git"


@functools.lru_cache(maxsize=8)
def _inside(path: Path, root: Path) -> bool:
    """`path.is_relative_to(root)` (names only, ~15 us in pathlib; a layout asks twice)."""
    return path.is_relative_to(root)


@functools.lru_cache(maxsize=8)
def _top_protected(root: Path) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """(directories, files) of the protected paths outside `.git` under `root`: only names joined (the same
    for every command of a project); whether each exists is asked per command."""
    return (tuple(root / d for d in PROTECTED_DIRS if not d.startswith(".git/")),
            tuple(root / f for f in PROTECTED_FILES if not f.startswith(".git/")))


class _Seen:
    """Whether each path exists, asked of the file system once per layout (the layout asks about most
    protected paths two or three times; `Path.exists` costs ~3x a plain `os.stat` of the string). It answers
    as `Path.exists` does: follows symbolic links, False for a path that is missing, not below a directory
    or a link loop, and raises any other error (a permission denied is not taken for "missing")."""

    _MISSING = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})

    def __init__(self) -> None:
        self._known: dict[str, bool] = {}

    def exists(self, path: Path) -> bool:
        key = str(path)
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = _exists(key)
        return found

    def made(self, path: Path, made: bool) -> bool:
        """`path` was just made a placeholder directory (it exists from here on), or could not be: then it
        is asked again (something else may have been put there meanwhile)."""
        if made:
            self._known[str(path)] = True
        else:
            self._known.pop(str(path), None)
        return made


def _exists(path: str) -> bool:
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno in _Seen._MISSING:
            return False
        raise
    except ValueError:  # a NUL in the name, as Path.exists
        return False
    return True


def _holders(root: Path, paths: Iterable[Path]) -> tuple[Path, ...]:
    """The directories strictly between `root` and each of `paths` (`.git` for `.git/config`), parents first:
    bound onto themselves, they cannot be renamed away with the protected paths in them."""
    top = str(root).rstrip("/") + "/"
    found: set[str] = set()
    for path in map(str, paths):  # strings: pathlib's parents and is_relative_to cost ~20 ms a call here
        cut = path.rfind("/")
        while cut > len(top) - 1 and path.startswith(top):
            path = path[:cut]
            found.add(path)
            cut = path.rfind("/")
    kept = (p for p in found if os.path.isdir(p) and not os.path.islink(p))
    return tuple(Path(p) for p in sorted(kept, key=lambda p: (p.count("/"), p)))


def _quarantine_created(root: Path, watched: tuple[Path, ...]) -> list[str]:
    """Move aside each protected file in `watched` (missing when the command started) that now exists."""
    return [_quarantine(root, path) for path in watched if os.path.lexists(path)]


def _new_entries_check(root: Path, home: Path) -> Callable[[], list[str]]:
    """When the project holds the home: a check that moves aside every dot entry of the home the command
    creates (`.ssh/authorized_keys` where there was no `.ssh`, `.config/git/config`, `.local/bin/ls`): the
    existing ones are read-only, but a mount cannot cover a name that does not exist yet."""
    before = _dot_entries(home)

    def check() -> list[str]:
        return [_quarantine(root, home / name) for name in sorted(_dot_entries(home) - before)]

    return check


def _dot_entries(home: Path) -> frozenset[str]:
    try:
        return frozenset(name for name in os.listdir(home) if name.startswith("."))
    except OSError:
        return frozenset()


@datarecord(frozen=True)
class Submodules:
    """The project's submodules as one command finds them (`swecli/tools/gitlinks.py` says why they matter)."""

    root: Path
    index: Path | None = None
    covered: frozenset[str] = frozenset()
    """Gitlinks whose repository is checked out inside the project: kept read-only during the command."""
    read_only: tuple[Path, ...] = ()
    hooks: tuple[Path, ...] = ()

    @classmethod
    def at(cls, root: Path, git_dirs: tuple[Path, ...]) -> Submodules:
        index = next((index for index in (_git_names(d).index for d in git_dirs) if index.exists()), None)
        if index is None:
            return cls(root)
        covered: list[str] = []
        read_only: list[Path] = []
        hooks: list[Path] = []
        for rel in sorted(gitlinks.gitlinks(index)):
            nested = gitlinks.nested_git_dir(root, rel)
            if nested is None:
                continue
            entry, git_dir = nested
            covered.append(rel)
            read_only += [entry] if entry != git_dir else []
            read_only += [git_dir / name for name in ("config", "config.worktree", "commondir")
                          if (git_dir / name).exists()]
            hooks += [git_dir / "hooks"] if git_dir.is_dir() and not git_dir.is_symlink() else []
        return cls(root, index, frozenset(covered), tuple(read_only), tuple(hooks))

    def check(self) -> list[str]:
        """After the command: move aside the `.git` of each submodule it could change that is set to run
        something (its config, hooks or common directory)."""
        if self.index is None:
            return []
        notes: list[str] = []
        for rel in sorted(gitlinks.gitlinks(self.index) - self.covered):
            nested = gitlinks.nested_git_dir(self.root, rel)
            why = gitlinks.planted(nested[1]) if nested else ""
            if nested and why:
                moved = _move_aside(self.root, nested[0])
                notes.append(f"[sandbox] The command made {rel} a submodule and {why}: the user's next `git status` "
                             f"would run it outside the sandbox, so swecli moved {rel}/.git to {moved}. Do not "
                             "set it up again; tell the user if the project needs this submodule.")
        return notes


# -- can bwrap run here? -------------------------------------------------------------------------------

MISSING = ("Commands cannot be sandboxed because bubblewrap is not installed: install it (`sudo apt-get install "
           "bubblewrap`, or your distribution's bubblewrap package) or set sandbox.mode = \"off\" in "
           ".swecli/config.toml to run commands unsandboxed; until then, commands that are not read-only ask "
           "first, in auto mode too.")
CANNOT_START = ("Commands cannot be sandboxed because bwrap cannot start here ({error}): allow unprivileged user "
                "namespaces (`sudo sysctl -w kernel.unprivileged_userns_clone=1`; on Ubuntu 24.04 "
                "`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`) or set sandbox.mode = \"off\" "
                "in .swecli/config.toml to run commands unsandboxed; until then, commands that are not read-only "
                "ask first, in auto mode too.")
NOT_LINUX = ("Commands cannot be sandboxed on this system (swecli's sandbox uses bubblewrap, on Linux): set "
             "sandbox.mode = \"off\" in .swecli/config.toml to run commands unsandboxed without asking in auto "
             "mode; until then, commands that are not read-only ask first.")
PASSED_OVER = ("Commands cannot be sandboxed because the only bubblewrap on PATH, {path}, is in a folder sandboxed "
               "commands can write (the project or sandbox.writable_paths), so a command could have replaced it "
               "and swecli does not run it: install bubblewrap in a system directory (`sudo apt-get install "
               "bubblewrap`) or take that folder out of sandbox.writable_paths; until then, commands that are not "
               "read-only ask first, in auto mode too.")


def unavailable_reason(root: Path | None = None, writable: tuple[Path, ...] = ()) -> str:
    """"" when bwrap can sandbox commands in the project at `root` (the working directory by default, with
    the sandbox's `writable` folders), else one sentence saying why and how to fix it."""
    known = unprobed_reason(root, writable)
    if known is not None:
        return known
    path = bwrap_program("bwrap", Path.cwd() if root is None else root, writable)
    assert path is not None
    return _probe(path)[0]


def unprobed_reason(root: Path | None = None, writable: tuple[Path, ...] = ()) -> str | None:
    """`unavailable_reason`'s answer where it needs no bwrap run (not Linux, bwrap not installed or only where
    a sandboxed command can write), else None."""
    if not sys.platform.startswith("linux"):
        return NOT_LINUX
    if bwrap_program("bwrap", Path.cwd() if root is None else root, writable) is not None:
        return None
    anywhere = shutil.which("bwrap")
    return PASSED_OVER.format(path=anywhere) if anywhere else MISSING


def bwrap_program(name: str, root: Path, writable: tuple[Path, ...] = ()) -> str | None:
    """The bwrap swecli runs: `name` itself when it is a path, else the one on PATH outside the folders a
    sandboxed command may write (`trusted_program`: the project, the writable paths, `writable`) and the
    relative entries. swecli starts bwrap itself, outside any sandbox: a repository's `bin/bwrap`, on PATH
    through direnv's `PATH_add bin`, or one a command wrote into `~/.local/bin` with `~/.local` writable, ran
    every command unsandboxed, and the start's probe ran it too (measured)."""
    if os.path.isabs(name):
        return name
    return _trusted_bwrap(name, str(root), os.environ.get("PATH", os.defpath), writable)


@functools.lru_cache(maxsize=8)
def _trusted_bwrap(name: str, root: str, search: str, writable: tuple[Path, ...]) -> str | None:
    if Path(root) != _FILESYSTEM_ROOT:
        return trusted_program(name, Path(root), search, writable)
    # started in /: every PATH entry is inside the project, but the system's directories stay read-only to its
    # commands (`_protected`), so a bwrap found there is the system's, not one a command planted (unless a
    # writable path is among them)
    system = [entry for entry in search.split(os.pathsep) if _in_system_dir(entry)]
    return find_outside(name, tuple(system), (*command_writable(Path(root)), *writable))


def _in_system_dir(entry: str) -> bool:
    if not os.path.isabs(entry):
        return False
    try:
        return Path(entry).resolve().parts[1:2] in {(name,) for name in SYSTEM_DIRS}
    except (OSError, RuntimeError):
        return False


def isolation_flags(bwrap: str = "bwrap") -> tuple[str, ...]:
    """The strongest capability and user-namespace flags this bwrap accepts here: no capabilities in a user
    namespace of its own without nested ones, or (a setuid bwrap) `--cap-drop ALL` alone. A name is looked
    up as `bwrap_program` does (never one inside the working directory's project): the probe runs it."""
    path = bwrap if os.path.isabs(bwrap) else bwrap_program(bwrap, Path.cwd())
    found = _probe(path)[1] if path else ()
    return found or _ISOLATION_CHOICES[0]


_PROBE_LOCK = threading.Lock()


def _probe(bwrap: str) -> tuple[str, tuple[str, ...]]:
    """`_probed`, run once even when the start's probe and a spare sandbox's start ask at the same time."""
    with _PROBE_LOCK:
        return _probed(bwrap)


@functools.lru_cache(maxsize=8)
def _probed(bwrap: str) -> tuple[str, tuple[str, ...]]:
    """Start a trivial command with the namespaces the real ones use (once per bwrap binary): ("", flags)
    with the first isolation choice that works, or (the error, ())."""
    error = ""
    for flags in _choices(bwrap):
        argv = [bwrap, *_BASE_FLAGS, *flags, "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev", "--proc",
                "/proc", "--tmpfs", "/tmp", "--", "/bin/true"]
        failure = _try(argv)
        if not failure:
            return "", flags
        error = error or failure
    return CANNOT_START.format(error=error), ()


def _choices(bwrap: str) -> tuple[tuple[str, ...], ...]:
    """The isolation choices worth trying: a setuid bwrap run by a user cannot map a user namespace of its
    own (bubblewrap documents --disable-userns as not working there; trying leaves a child stuck)."""
    try:
        setuid = bool(os.stat(bwrap).st_mode & stat.S_ISUID) and os.geteuid() != 0
    except OSError:
        setuid = False
    return _ISOLATION_CHOICES[1:] if setuid else _ISOLATION_CHOICES


def _try(argv: list[str]) -> str:
    """"" when `argv` exits 0, else the first line it printed on stderr (waiting for the process, not for
    its output: a child it leaves behind must not hold swecli up)."""
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors)
        except OSError as exc:
            return str(exc)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return "bwrap did not finish within 30 s"
        errors.seek(0)
        lines = errors.read().decode("utf-8", errors="replace").strip().splitlines()
    return "" if code == 0 else (lines[0] if lines else f"exit status {code}")
