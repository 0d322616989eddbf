"""The files of a project as the tools see them: .gitignore honoured, VCS and swecli internals skipped.

ripgrep's `--files` with the flags walk.py mirrors lists a 10k-file tree in tens of milliseconds; without
ripgrep, walk.py itself gives the same list (a test holds the two to agreement). Symlinks are never
followed and not listed, so the map cannot escape the project.

`start_listing` runs ripgrep in the background, so a warm run reads its cache and stats the files it
knows while the listing is made (`Listing.files()` collects it).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from swecli.tools.walk import ALWAYS_SKIP, IgnoreRules, walk

RG_FLAGS = ("--files", "--no-config", "--hidden", "--no-require-git", "--no-ignore-dot", "--no-ignore-global",
            "--no-messages")
RG_TIMEOUT = 60.0


class Listing:
    """One listing of a project's files, under way (ripgrep) or done (the Python walk)."""

    def __init__(self, root: Path, engine: str = "auto") -> None:
        self.root = root.resolve()
        self._process: subprocess.Popen[bytes] | None = None
        self._done: list[str] | None = None
        rg = shutil.which("rg") if engine != "python" else None
        if rg is not None:
            command = [rg, *RG_FLAGS, *(arg for name in sorted(ALWAYS_SKIP) for arg in ("--glob", f"!{name}/")),
                       "--null"]
            try:
                self._process = subprocess.Popen(command, cwd=self.root, stdout=subprocess.PIPE,
                                                 stderr=subprocess.DEVNULL)
            except OSError:
                self._process = None

    def files(self) -> list[str]:
        """Root-relative POSIX paths of the regular files, sorted."""
        if self._done is None:
            listed = self._collect() if self._process is not None else None
            self._done = listed if listed is not None else _walked(self.root)
        return self._done

    def _collect(self) -> list[str] | None:
        assert self._process is not None
        try:
            out, _ = self._process.communicate(timeout=RG_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.communicate()
            return None
        if self._process.returncode not in (0, 1):  # 1: no files at all
            return None
        # ripgrep does not list symlinks without --follow; the index lstat()s the files it parses anyway
        names = out.decode("utf-8", errors="surrogateescape").split("\0")
        return sorted(name.removeprefix("./") if name.startswith("./") else name for name in names if name)


def start_listing(root: Path, engine: str = "auto") -> Listing:
    """Start listing `root`'s files; `engine` is auto, rg or python."""
    return Listing(root, engine)


def project_files(root: Path, engine: str = "auto") -> list[str]:
    """Root-relative POSIX paths of the regular files, sorted; `engine` is auto, rg or python."""
    return Listing(root, engine).files()


def _walked(root: Path) -> list[str]:
    return sorted(entry.path.relative_to(root).as_posix() for entry in walk(root, IgnoreRules(root))
                  if entry.is_file)
