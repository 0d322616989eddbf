"""What swecli runs itself never comes from the project: loading the seccomp binding runs no program from PATH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

LOAD = """
import ctypes.util, sys
from swecli.tools import syscalls
if sys.argv[1] == "unknown":  # a library ldconfig does not list, as libseccomp on Alpine
    syscalls._found_without_a_compiler("swecli-no-such-library") and sys.exit(3)
    ctypes.util.find_library("swecli-no-such-library")  # what pyseccomp's import would then have done
elif sys.argv[1] == "unlisted":  # this machine's ldconfig lists libseccomp: here it does not
    listing = syscalls._ldconfig_listing()
    syscalls._ldconfig_listing = lambda: b"\\n".join(line for line in listing.splitlines() if b"seccomp" not in line)
    syscalls.unavailable() == syscalls.MISSING_LIBSECCOMP or sys.exit(4)
    "pyseccomp" in sys.modules and sys.exit(5)
else:
    syscalls.unavailable()
"""


def load(project: Path, case: str) -> bool:
    """Whether the project's planted `gcc` (first on PATH) ran."""
    ran = project / "ran"
    ran.unlink(missing_ok=True)
    env = {**os.environ, "PATH": f"{project / 'bin'}:{os.environ['PATH']}"}
    subprocess.run([sys.executable, "-c", LOAD, case], env=env, check=True, timeout=60, capture_output=True)
    return ran.exists()


def test_loading_the_seccomp_binding_runs_no_program_from_the_project(tmp_path: Path) -> None:
    # for a library ldconfig does not list, ctypes asks `gcc` (then `cc`, `ld`, `objdump`) from PATH: with a
    # project folder first on PATH (direnv's `PATH_add bin`) the repository's own `gcc` ran
    (tmp_path / "bin").mkdir()
    for name in ("gcc", "cc", "ld", "objdump"):
        (tmp_path / "bin" / name).write_text(f"#!/bin/sh\ntouch {tmp_path}/ran\nexit 1\n")
        (tmp_path / "bin" / name).chmod(0o755)
    assert load(tmp_path, "unknown")  # the threat on this Python: find_library ran the planted gcc
    assert not load(tmp_path, "seccomp")  # swecli's load asks ldconfig only
    assert not load(tmp_path, "unlisted")  # and, where it does not list libseccomp, does not import the binding


LDCONFIG_RUNS = """
import sys
runs = []
sys.addaudithook(lambda event, args: runs.append(args[1]) if event == "subprocess.Popen" else None)
from swecli.tools import syscalls
assert syscalls.unavailable() == "" and syscalls.filter_fd(network=False) is not None, "no filter here"
print(runs)
"""


def test_the_filter_asks_ldconfig_once(tmp_path: Path) -> None:
    # ctypes runs `ldconfig -p` for every library it is asked for: the start's probe ran it four times (twice
    # for the check above, twice in pyseccomp's import); one listing answers all four
    done = subprocess.run([sys.executable, "-c", LDCONFIG_RUNS], capture_output=True, text=True, timeout=60)
    if "no filter here" in done.stderr:
        pytest.skip("libseccomp is not available here")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[['/sbin/ldconfig', '-p']]"


@pytest.mark.parametrize("name", ["c", "seccomp", "m", "stdc++", "swecli-no-such-library"])
def test_a_listed_soname_is_ctypes_own_answer(name: str) -> None:
    import ctypes.util

    from swecli.tools import syscalls

    assert syscalls._listed_soname(name) == ctypes.util._findSoname_ldconfig(name)  # type: ignore[attr-defined]
