"""What swecli runs itself never comes from the project: loading the seccomp binding runs no program from PATH, and
helpers (ripgrep, bwrap) are never looked up where a sandboxed command could have written them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from swecli.tools.own_process import command_writable, trusted_program

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


def program(folder: Path, name: str = "rg") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("#!/bin/sh\nexit 0\n")
    (folder / name).chmod(0o755)
    return folder / name


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".config" / "swecli").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return home


def test_a_path_entry_inside_a_configured_writable_path_is_passed_over(tmp_path: Path, home: Path) -> None:
    # `writable_paths = ["~/.local"]`: a sandboxed command can write `~/.local/bin/rg`, which swecli ran itself
    project, system = tmp_path / "project", program(tmp_path / "system")
    project.mkdir()
    planted = program(home / ".local" / "bin")
    search = f"{planted.parent}:{system.parent}"
    assert trusted_program("rg", project, search) == str(planted)  # nothing configured: the first one
    (home / ".config" / "swecli" / "config.toml").write_text('[sandbox]\nwritable_paths = ["~/.local"]\n')
    assert trusted_program("rg", project, search) == str(system)
    assert trusted_program("rg", project, str(planted.parent)) is None


def test_a_writable_path_the_project_names_untrusted_is_passed_over_too(tmp_path: Path, home: Path) -> None:
    # trusted later, the project's writable_paths apply to the next session's commands: skipping its folders
    # costs only the helpers there
    project, system = tmp_path / "project", program(tmp_path / "system")
    (project / ".swecli").mkdir(parents=True)
    (project / ".swecli" / "config.toml").write_text('[sandbox]\nwritable_paths = ["../tools"]\n')
    planted = program(tmp_path / "tools" / "bin")
    assert trusted_program("rg", project, f"{planted.parent}:{system.parent}") == str(system)
    assert trusted_program("rg", project, str(planted.parent), writable=(tmp_path / "other",)) is None


def test_an_entry_that_is_a_link_in_the_project_is_passed_over(tmp_path: Path, home: Path) -> None:
    # `bin -> /usr/bin` (a committed symlink) resolved outside the project and was kept; a command then
    # replaces the link with a folder holding its own `rg`, run by the path `bin/rg` found before
    project, system = tmp_path / "project", program(tmp_path / "system")
    project.mkdir()
    (project / "bin").symlink_to(system.parent)
    (project / "up").symlink_to(tmp_path)  # `..` after a link the project owns lands where the link says
    for entry in (project / "bin", project / "up" / "system", Path(f"{project}/up/../system")):
        assert trusted_program("rg", project, str(entry)) is None, entry


def test_a_program_that_is_a_link_into_a_writable_folder_is_passed_over(tmp_path: Path, home: Path) -> None:
    # `/usr/local/bin/rg -> ~/.cargo/bin/rg`: the folder is the system's, the program a command may rewrite
    (home / ".config" / "swecli" / "config.toml").write_text('[sandbox]\nwritable_paths = ["~/.cargo"]\n')
    project, system = tmp_path / "project", program(tmp_path / "system")
    project.mkdir()
    linked = tmp_path / "local"
    linked.mkdir()
    (linked / "rg").symlink_to(program(home / ".cargo" / "bin"))
    assert trusted_program("rg", project, f"{linked}:{system.parent}") == str(system)
    (linked / "rg").unlink()
    (linked / "rg").symlink_to(system)  # a link elsewhere is kept, and run by its own name (a snap's dispatcher)
    assert trusted_program("rg", project, str(linked)) == str(linked / "rg")
    chained = tmp_path / "chained"  # a chain through the writable folder: a command could point its middle elsewhere
    chained.mkdir()
    (chained / "rg").symlink_to(home / ".cargo" / "bin" / "rg-link")
    (home / ".cargo" / "bin" / "rg-link").symlink_to(system)
    assert trusted_program("rg", project, str(chained)) is None


def test_an_unreadable_configuration_counts_the_whole_home_as_writable(tmp_path: Path, home: Path) -> None:
    (home / ".config" / "swecli" / "config.toml").write_text("not toml [")
    project = tmp_path / "project"
    project.mkdir()
    assert home in command_writable(project)
    assert trusted_program("rg", project, str(program(home / "bin").parent)) is None


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
