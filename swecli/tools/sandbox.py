"""The OS sandbox for bash: bubblewrap (`bwrap`) on Linux.

A sandboxed command sees the whole file system read-only, except:
- the project directory: read-write in `workspace-write`, read-only in `read-only` (plan mode); when
  the project is a git worktree, its git directory is writable too, so `git commit` works;
- `sandbox.writable_paths` (e.g. `~/.cache` for build caches);
- a private, empty `/tmp` (and `/dev/shm`) that disappears with the command.

The user's credentials are not visible at all: each existing entry of `SECRET_PATHS` under the home
directory (plus `sandbox.hidden_paths`), `$XDG_RUNTIME_DIR` (agent sockets, the D-Bus session bus)
and the Docker socket is covered, an empty read-only directory over a directory, `/dev/null` over a
file. Environment variables named like secrets (`*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`,
`*CREDENTIAL*`, as Codex does) are not passed in, but for those `sandbox.pass_env` names. There is
no network (a namespace with only an unconnected loopback) unless `sandbox.network = true`, and a
private PID namespace, so a command cannot signal or trace the user's other processes; background
jobs end with the command.

The command stays in the process group swecli starts, so Esc and timeouts still kill everything it
started; `--die-with-parent` covers swecli itself dying.

`unavailable_reason()` says, once per process, why bwrap cannot be used (not installed, or cannot
create namespaces in this container), in one sentence with the fix. `Sandbox.explain_failure()`
recognizes a failure the sandbox caused (read-only file system, permission denied outside the
writable paths, no network) so the model is told, not left guessing.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from swecli.config import SandboxConfig
from swecli.tools.protected import SECRET_PATHS

SandboxMode = Literal["workspace-write", "read-only", "off"]

_SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_BASE_FLAGS = ("--die-with-parent", "--unshare-pid", "--unshare-ipc")
_EROFS = re.compile(r"[^\n]*Read-only file system[^\n]*")
_EACCES = re.compile(r"[^\n]*Permission denied[^\n]*")
_PATH = re.compile(r"(/[^\s'\"`:,)]+)")
_NETWORK = re.compile(
    r"[^\n]*(?:Network is unreachable|Temporary failure in name resolution|Could not resolve host|"
    r"Name or service not known|nodename nor servname|getaddrinfo|Failed to establish a new connection|"
    r"Couldn't connect to server|Failed to connect to|Connection refused|No route to host|EAI_AGAIN|ENOTFOUND|"
    r"ENETUNREACH|ECONNREFUSED|unable to access 'https?://)[^\n]*", re.IGNORECASE)


@dataclass(frozen=True)
class Denial:
    """A failure the sandbox caused."""

    kind: Literal["read-only file system", "permission denied", "network"]
    evidence: str
    """The output line that shows it."""


@dataclass(frozen=True)
class Sandbox:
    """How one bash command is confined (build one with `Sandbox.for_project`)."""

    root: Path
    mode: Literal["workspace-write", "read-only"] = "workspace-write"
    writable: tuple[Path, ...] = ()
    network: bool = False
    hidden: tuple[Path, ...] = ()
    """Existing paths to cover (credentials, agent sockets)."""
    pass_env: tuple[str, ...] = ()
    """Names or shell patterns of secret-looking variables passed in all the same (`sandbox.pass_env`)."""
    bwrap: str = "bwrap"

    @classmethod
    def for_project(cls, root: Path, *, mode: Literal["workspace-write", "read-only"] = "workspace-write",
                    writable_paths: Iterable[str] = (), network: bool = False, hidden_paths: Iterable[str] = (),
                    pass_env: Iterable[str] = (), home: Path | None = None,
                    env: Mapping[str, str] | None = None) -> Sandbox:
        """Resolve the configured paths: `~` is the home directory, relative paths are under the root.
        Writable paths that do not exist are left out (bwrap cannot mount them); see `missing_writable`."""
        env = os.environ if env is None else env
        root = root.resolve()
        home = (home or Path(env.get("HOME") or Path.home())).resolve()
        writable = [p for p in (_resolve(w, root, home) for w in writable_paths) if p.exists()]
        return cls(root=root, mode=mode, writable=tuple(dict.fromkeys([*_git_dirs(root), *writable])),
                   network=network, hidden=_hidden(root, home, hidden_paths, env), pass_env=tuple(pass_env))

    def read_only(self) -> Sandbox:
        """The same sandbox for plan mode: nothing writable but the private /tmp, no network."""
        return replace(self, mode="read-only", network=False)

    def describe(self) -> str:
        writes = ("the project directory" + (", " + ", ".join(map(str, self.writable)) if self.writable else "")
                  + " and a private /tmp") if self.mode == "workspace-write" else "only a private /tmp"
        network = "network allowed" if self.network else "no network"
        return f"{self.mode}: writes to {writes}; {network}; credentials hidden"

    def wrap(self, argv: list[str]) -> list[str]:
        """The bwrap command line that runs `argv` inside the sandbox."""
        args = [self.bwrap, *_BASE_FLAGS]
        if not self.network:
            args.append("--unshare-net")
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        bind = "--bind" if self.mode == "workspace-write" else "--ro-bind"
        args += [bind, str(self.root), str(self.root)]  # after /tmp: a project under /tmp stays visible
        if self.mode == "workspace-write":
            for path in self.writable:
                args += ["--bind", str(path), str(path)]
        for path in self.hidden:  # last: they win over every bind above
            if path.is_dir():
                args += ["--tmpfs", str(path), "--remount-ro", str(path)]
            else:
                args += ["--ro-bind", "/dev/null", str(path)]
        return [*args, "--chdir", str(self.root), "--", *argv]

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` without secret-looking variables (but those `pass_env` names), with TMPDIR pointing at
        the private /tmp."""
        kept = {k: v for k, v in env.items() if self._passes(k)}
        kept["TMPDIR"] = "/tmp"
        return kept

    def _passes(self, name: str) -> bool:
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in self.pass_env):
            return True
        return not _SECRET_ENV.search(name) and name != "SSH_AUTH_SOCK"

    def explain_failure(self, output: str) -> Denial | None:
        """The sandbox restriction a failed command's output points to, or None."""
        match = _EROFS.search(output)
        if match:
            return Denial("read-only file system", match.group(0).strip())
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
    one sentence per writable path that does not exist and is therefore left out)."""
    if config.mode == "off":
        return None, "", []
    env = os.environ if env is None else env
    sandbox = Sandbox.for_project(root, mode=config.mode, writable_paths=config.writable_paths,
                                  network=config.network, hidden_paths=config.hidden_paths,
                                  pass_env=config.pass_env, env=env)
    home = Path(env.get("HOME") or Path.home())
    missing = [p for p in config.writable_paths if not _resolve(p, sandbox.root, home).exists()]
    warnings = [f"sandbox.writable_paths: {p} does not exist, so it is not writable in the sandbox; create it or "
                "remove it from the setting." for p in missing]
    return sandbox, unavailable_reason(), warnings


def _resolve(path: str, root: Path, home: Path) -> Path:
    expanded = Path(str(home) + path[1:]) if path == "~" or path.startswith("~/") else Path(path)
    return (expanded if expanded.is_absolute() else root / expanded).resolve()


def _git_dirs(root: Path) -> list[Path]:
    """The git directory and common directory of a worktree (`.git` is a file pointing elsewhere)."""
    marker = root / ".git"
    if not marker.is_file():
        return []
    text = marker.read_text(encoding="utf-8", errors="replace").strip()
    if not text.startswith("gitdir:"):
        return []
    gitdir = (root / text.split(":", 1)[1].strip()).resolve()
    dirs = [gitdir] if gitdir.is_dir() else []
    common = gitdir / "commondir"
    if common.is_file():
        shared = (gitdir / common.read_text(encoding="utf-8").strip()).resolve()
        if shared.is_dir():
            dirs.append(shared)
    return dirs


def _hidden(root: Path, home: Path, extra: Iterable[str], env: Mapping[str, str]) -> tuple[Path, ...]:
    candidates = [home / rel for rel in SECRET_PATHS] + [_resolve(p, root, home) for p in extra]
    runtime = env.get("XDG_RUNTIME_DIR")
    candidates += [Path(runtime)] if runtime else []
    candidates += [Path("/var/run/docker.sock"), Path("/run/docker.sock")]
    hidden: list[Path] = []
    for path in candidates:
        if not os.path.lexists(path):
            continue
        real = path.resolve()
        if root == real or root.is_relative_to(real):
            continue  # never hide the project itself
        hidden.append(real)
    return tuple(dict.fromkeys(hidden))


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


def unavailable_reason() -> str:
    """"" when bwrap can sandbox commands here, else one sentence saying why and how to fix it."""
    if not sys.platform.startswith("linux"):
        return NOT_LINUX
    path = shutil.which("bwrap")
    if path is None:
        return MISSING
    return _probe(path)


@functools.lru_cache(maxsize=8)
def _probe(bwrap: str) -> str:
    """Start a trivial command with the same namespaces the real ones use (once per bwrap binary)."""
    argv = [bwrap, *_BASE_FLAGS, "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--", "/bin/true"]
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return CANNOT_START.format(error=str(exc))
    if proc.returncode == 0:
        return ""
    lines = proc.stderr.decode("utf-8", errors="replace").strip().splitlines()
    return CANNOT_START.format(error=lines[0] if lines else f"exit status {proc.returncode}")
