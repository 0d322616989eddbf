"""How swecli runs its own helper programs on the project: never a program or setting the project planted,
never with swecli's secrets.

What swecli itself starts (not the model's commands, which the sandbox confines) runs outside any
sandbox, with swecli's rights. A cloned repository, or a model that writes into it, must not be able to
choose what that runs:

- `trusted_program(name, project)` finds a helper (ripgrep) on PATH without looking in directories that
  are relative (`.`, `bin`) or inside the project (an activated `.venv/bin`, `node_modules/.bin`): a
  program of that name planted there is never run.
- `helper_environment()` is what such a helper gets: a fixed PATH, the locale and temp directory, and
  nothing else (no API keys, no `RIPGREP_CONFIG_PATH`, no `GIT_*`, no `LD_PRELOAD`).
- `python_workers_without_cwd()` covers Python worker processes (the repository map's parse pool): a
  spawned worker starts with `python -c ...`, which puts the current directory (the project) first on
  `sys.path`, so a project file named `multiprocessing.py` ran inside it. `PYTHONSAFEPATH` keeps it out.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

HELPER_PATH = "/usr/local/bin:/usr/bin:/bin"
"""PATH inside a helper (it needs none: it is started by absolute path, and starts nothing itself)."""
KEPT_VARIABLES = ("LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")
"""Read by a helper for its text encoding and scratch files; nothing in them can make it run code."""


def trusted_program(name: str, project: Path, path: str | None = None) -> str | None:
    """`shutil.which(name)` over PATH minus its relative entries and those inside `project`."""
    search = os.environ.get("PATH", os.defpath) if path is None else path
    top = project.resolve()
    kept = [entry for entry in search.split(os.pathsep) if _outside(entry, top)]
    return shutil.which(name, path=os.pathsep.join(kept)) if kept else None


def _outside(entry: str, project: Path) -> bool:
    if not entry or not os.path.isabs(entry):
        return False  # "" and "." mean the current directory: the project itself
    try:
        resolved = Path(entry).resolve()
    except (OSError, RuntimeError):
        return False
    return not resolved.is_relative_to(project)


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
