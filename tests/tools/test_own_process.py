"""What swecli runs itself never comes from the project: `fixed_path` while a library looks programs up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from swecli.tools.own_process import HELPER_PATH, fixed_path

LOOKUP = """
import ctypes.util, sys
from contextlib import nullcontext
from swecli.tools.own_process import fixed_path
with (fixed_path() if sys.argv[1] == "fixed" else nullcontext()):
    ctypes.util.find_library("swecli-no-such-library")  # what pyseccomp's import does for libseccomp
"""


def lookup(project: Path, how: str) -> bool:
    """Whether the project's planted `gcc` ran while a library was looked up, `how` = fixed or as is."""
    ran = project / "ran"
    ran.unlink(missing_ok=True)
    env = {**os.environ, "PATH": f"{project / 'bin'}:{os.environ['PATH']}"}
    subprocess.run([sys.executable, "-c", LOOKUP, how], env=env, check=True, timeout=60, capture_output=True)
    return ran.exists()


def test_a_library_lookup_runs_no_program_from_the_project(tmp_path: Path) -> None:
    # ldconfig does not know the library, so ctypes asks `gcc` (then `cc`, `ld`) from PATH: with a project
    # folder first on PATH (direnv's `PATH_add bin`), the repository's own `gcc` ran in swecli's process tree
    (tmp_path / "bin").mkdir()
    for name in ("gcc", "cc", "ld", "objdump"):
        (tmp_path / "bin" / name).write_text(f"#!/bin/sh\ntouch {tmp_path}/ran\nexit 1\n")
        (tmp_path / "bin" / name).chmod(0o755)
    assert lookup(tmp_path, "as is")  # the threat, on this Python: the planted program runs
    assert not lookup(tmp_path, "fixed")


def test_the_fixed_path_lasts_only_while_it_is_held() -> None:
    before = os.environ["PATH"]
    with fixed_path():
        assert os.environ["PATH"] == HELPER_PATH
    assert os.environ["PATH"] == before
