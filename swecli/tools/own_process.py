"""How swecli runs its own helper programs on the project: never a program or setting the project planted,
never with swecli's secrets.

What swecli itself starts (not the model's commands, which the sandbox confines) runs outside any
sandbox, with swecli's rights. A cloned repository, or a model that writes into it, must not be able to
choose what that runs:

- `trusted_program(name, project)` finds a helper (ripgrep, bubblewrap) on PATH without looking in
  directories that are relative (`.`, `bin`), or that a sandboxed command can write: inside the project
  (an activated `.venv/bin`, `node_modules/.bin`) or inside a configured `sandbox.writable_paths` entry
  (`~/.local` with `~/.local/bin` on PATH, `~/.cargo`, `~/go`). A program of that name planted there is
  never run, nor one found through a link into such a folder.
- `helper_environment()` is what such a helper gets: a fixed PATH, the locale and temp directory, and
  nothing else (no API keys, no `RIPGREP_CONFIG_PATH`, no `GIT_*`, no `LD_PRELOAD`).
- `python_workers_without_cwd()` covers Python worker processes (the repository map's parse pool): a
  spawned worker starts with `python -c ...`, which puts the current directory (the project) first on
  `sys.path`, so a project file named `multiprocessing.py` ran inside it. `PYTHONSAFEPATH` keeps it out.
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

HELPER_PATH = "/usr/local/bin:/usr/bin:/bin"
"""PATH inside a helper (it needs none: it is started by absolute path, and starts nothing itself)."""
KEPT_VARIABLES = ("LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")
"""Read by a helper for its text encoding and scratch files; nothing in them can make it run code."""


def trusted_program(name: str, project: Path, path: str | None = None, writable: Iterable[Path] = ()) -> str | None:
    """`shutil.which(name)` over PATH minus the entries a sandboxed command could have filled: relative ones,
    those inside `project`, the configured writable paths (`command_writable`) or `writable` (a sandbox's
    own), and a program whose links lead through such a folder."""
    search = os.environ.get("PATH", os.defpath) if path is None else path
    untrusted = (project, *command_writable(project), *writable)
    return find_outside(name, tuple(search.split(os.pathsep)), untrusted)


@functools.lru_cache(maxsize=32)
def find_outside(name: str, entries: tuple[str, ...], untrusted: tuple[Path, ...]) -> str | None:
    """The first `name` in `entries` that neither the entry nor the program itself leads into one of the
    `untrusted` folders: every leading part of the entry is resolved (a command could swap any of them
    for a link), and so is every link from the program found to its file (`/usr/local/bin/rg ->
    ~/.cargo/bin/rg`). Kept per process (a lookup resolves every leading part of every entry, ~1 ms): what
    it returns, and every link it leads through, lies in folders no sandboxed command can write."""
    folders = tuple(_real(Path(folder)) or Path(os.path.abspath(folder)) for folder in untrusted)
    for entry in entries:
        if not entry or not os.path.isabs(entry) or _leads_into(Path(entry), folders):
            continue  # "" and "." mean the current directory: the project itself
        found = shutil.which(name, path=entry)
        if found is not None and _links_stay_outside(Path(found), folders):
            return found
    return None


def _links_stay_outside(program: Path, folders: tuple[Path, ...]) -> bool:
    """Whether every link on the way from `program` to the file it names (and the file) sits in a folder outside
    `folders`: then no command can change where it leads. The path itself is what runs (a snap's
    `/snap/bin/x -> /usr/bin/snap` goes by the name it was called with)."""
    for _ in range(40):  # the kernel's own limit on links followed
        holder = _real(program.parent)
        if holder is None or any(holder.is_relative_to(folder) for folder in folders):
            return False
        if not program.is_symlink():
            return True
        try:
            program = holder / os.readlink(program)
        except OSError:
            return False
    return False


def _leads_into(entry: Path, folders: tuple[Path, ...]) -> bool:
    for part in (entry, *entry.parents):
        real = _real(part)
        if real is None or any(real.is_relative_to(folder) for folder in folders):
            return True
    return False


def _real(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return None


def command_writable(project: Path, env: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """The folders outside `project` a sandboxed command may write, from the configuration files: every
    `sandbox.writable_paths` entry any of them names (the project's file too, trusted or not: a folder it
    names only hides helpers there) and a linked worktree's git directories. Read from the files, not
    from a session, so `swecli repomap` and the map's builder process see the same folders as the session
    whose commands wrote there. Unreadable configuration: the whole home directory counts as writable."""
    from swecli.config import ConfigError, config_layers
    from swecli.tools.gitlinks import linked_git_dirs

    env = dict(os.environ if env is None else env)
    home = Path(env.get("HOME") or Path.home())
    try:
        layers = config_layers(project, env)
    except (ConfigError, OSError):
        return (home, *linked_git_dirs(project))
    named = [entry for layer in layers for entry in _writable_paths(layer.data)]
    return (*(setting_path(entry, project, home) for entry in named), *linked_git_dirs(project))


def _writable_paths(data: Mapping[str, object]) -> list[str]:
    section = data.get("sandbox")
    entries = section.get("writable_paths") if isinstance(section, dict) else None
    return [entry for entry in entries if isinstance(entry, str)] if isinstance(entries, list) else []


def setting_path(path: str, root: Path, home: Path) -> Path:
    """A path setting as the sandbox reads it: `~` is the home directory, a relative path is under `root`."""
    expanded = Path(str(home) + path[1:]) if path == "~" or path.startswith("~/") else Path(path)
    return (expanded if expanded.is_absolute() else root / expanded).resolve()


def helper_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a helper program: a fixed PATH plus the locale and temp directory of `env`."""
    source = os.environ if env is None else env
    return {"PATH": HELPER_PATH, **{name: source[name] for name in KEPT_VARIABLES if name in source}}


_SPAWN_LOCK = threading.Lock()


@contextmanager
def python_workers_without_cwd() -> Iterator[None]:
    """While Python worker processes are started (`ProcessPoolExecutor` submits), they do not import from the
    current directory. The variable is set only for that moment: the model's commands and hooks must keep
    Python's usual `sys.path`."""
    with _SPAWN_LOCK:
        before = os.environ.get("PYTHONSAFEPATH")
        os.environ["PYTHONSAFEPATH"] = "1"
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("PYTHONSAFEPATH", None)
            else:
                os.environ["PYTHONSAFEPATH"] = before
