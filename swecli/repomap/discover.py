"""The files of a project as the tools see them: .gitignore honoured, VCS and swecli internals skipped.

ripgrep's `--files` with the flags walk.py mirrors lists a 10k-file tree in tens of milliseconds; without
ripgrep, walk.py itself gives the same list (a test holds the two to agreement). Symlinks are never
followed and not listed, so the map cannot escape the project.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from swecli.tools.walk import ALWAYS_SKIP, IgnoreRules, walk

RG_FLAGS = ("--files", "--no-config", "--hidden", "--no-require-git", "--no-ignore-dot", "--no-ignore-global",
            "--no-messages")


def project_files(root: Path, engine: str = "auto") -> list[str]:
    """Root-relative POSIX paths of the regular files, sorted; `engine` is auto, rg or python."""
    root = root.resolve()
    rg = shutil.which("rg") if engine != "python" else None
    if rg is not None:
        listed = _rg_files(rg, root)
        if listed is not None:
            return listed
    return sorted(entry.path.relative_to(root).as_posix() for entry in walk(root, IgnoreRules(root))
                  if entry.is_file)


def _rg_files(rg: str, root: Path) -> list[str] | None:
    command = [rg, *RG_FLAGS, *(arg for name in sorted(ALWAYS_SKIP) for arg in ("--glob", f"!{name}/")), "--null"]
    try:
        done = subprocess.run(command, cwd=root, capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode not in (0, 1):  # 1: no files at all
        return None
    names = [raw.decode("utf-8", errors="surrogateescape").removeprefix("./")
             for raw in done.stdout.split(b"\0") if raw]
    return sorted(names)  # ripgrep does not list symlinks without --follow; the index lstat()s each file anyway
