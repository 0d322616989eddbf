"""What swecli runs itself (not the model's commands) never runs what a hostile repository planted.

A full `-p` session through the real loop, the scripted model over HTTP: a bash call that changes tracked
files (what the notes' change record follows), a grep, and retrieval plus the repository map's parse pool.
The repository carries every way it can make git, ripgrep or a Python worker run its code, each writing a
marker file outside the project; no marker may appear. On the code before this test, `core.fsmonitor`
ran with swecli's full environment (the API key landed in the marker), and a `multiprocessing.py` at the
project's top ran inside the map's worker processes. Run as the current user and, when that is root
(CI), again as `nobody`.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from swecli.testing.server import Call, Reply, ScriptedLLM
from tests.unprivileged import USERS, seed_vocabularies, user_prefix

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
SECRET = "sk-test-OWNPROC-0123456789abcdef"
HOOKS = ("post-index-change", "pre-commit", "post-checkout", "reference-transaction", "fsmonitor-watchman",
         "pre-auto-gc", "post-rewrite")


@pytest.fixture
def place() -> Iterator[Path]:
    """A directory both root and `nobody` can use (pytest's own tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="swecli-ownproc-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def script(path: Path, marker: Path, then: str = "cat") -> None:
    path.write_text(f"#!/bin/sh\nenv > {marker}\n{then}\n")
    path.chmod(0o755)


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                   capture_output=True)


def git_vectors(config: Path, markers: Path) -> str:
    """Every setting by which a repository's config makes git run a command, each writing its own marker."""
    def run(name: str) -> str:
        return f'"env > {markers}/{name}; cat"'

    return f"""
[core]
    fsmonitor = "env > {markers}/fsmonitor; false"
    hooksPath = {config.parent / 'planted-hooks'}
    pager = {run('core.pager')}
    sshCommand = {run('core.sshCommand')}
    askPass = {run('core.askPass')}
    editor = {run('core.editor')}
    alternateRefsCommand = {run('core.alternateRefsCommand')}
[pager]
    status = {run('pager.status')}
    diff = {run('pager.diff')}
[diff]
    external = {run('diff.external')}
[diff "evil"]
    textconv = {run('diff.textconv')}
[filter "evil"]
    clean = {run('filter.clean')}
    smudge = {run('filter.smudge')}
    process = {run('filter.process')}
    required = false
[credential]
    helper = "!env > {markers}/credential.helper; true"
[gc]
    auto = 1
"""


def hostile_project(place: Path, through_include: bool) -> tuple[Path, Path]:
    """A git repository whose config (directly, or through an `include` of a file in the repository) sets
    every git vector, plus a planted `rg`, a ripgrep config with a preprocessor, and a `multiprocessing.py`."""
    project, markers = place / "project", place / "markers"
    project.mkdir()
    markers.mkdir()
    git(project, "init", "-q")
    for number in range(160):  # enough files for the repository map's worker processes
        (project / f"mod_{number:03}.py").write_text(f"def function_{number}():\n    return {number}\n")
    (project / "greet.py").write_text("print('helo')\n")
    (project / ".gitattributes").write_text("* filter=evil diff=evil\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "start")
    vectors = git_vectors(project / ".git" / "config", markers)
    if through_include:
        (project / "team.gitconfig").write_text(vectors)
        with (project / ".git" / "config").open("a") as fh:
            fh.write("[include]\n    path = ../team.gitconfig\n")
    else:
        with (project / ".git" / "config").open("a") as fh:
            fh.write(vectors)
    for hooks in (project / ".git" / "hooks", project / ".git" / "planted-hooks"):
        hooks.mkdir(exist_ok=True)
        for hook in HOOKS:
            script(hooks / hook, markers / f"hook.{hook}")
    (project / "bin").mkdir()
    real_rg = shutil.which("rg")
    then = f'exec {real_rg} "$@"' if real_rg else "true"  # so that the map still gets its files
    script(project / "bin" / "rg", markers / "planted-rg", then)
    script(project / "rg", markers / "planted-rg-in-cwd", then)
    script(project / "pre.sh", markers / "rg-preprocessor")
    (project / ".ripgreprc").write_text(f"--pre={project / 'pre.sh'}\n")
    (project / "multiprocessing.py").write_text(f"import os\nopen({str(markers / 'python-worker')!r}, 'w')"
                                                ".write(repr(dict(os.environ)))\n")
    return project, markers


def as_user(user: str, paths: list[Path]) -> list[str]:
    if user == "invoking":
        return []
    for path in paths:
        for entry in [path, *path.rglob("*")]:
            os.lchown(entry, 65534, 65534)
    return user_prefix(user)


def run_session(project: Path, llm: ScriptedLLM, home: Path, user: str,
                markers: Path) -> subprocess.CompletedProcess[str]:
    # The console script, as a user starts it (`python -m` would put the project on sys.path itself).
    swecli = Path(sys.executable).parent / "swecli"
    env = {"PATH": f"{project / 'bin'}:.:{os.environ['PATH']}", "HOME": str(home), "LANG": "C.UTF-8",
           "OPENAI_API_KEY": SECRET, "RIPGREP_CONFIG_PATH": str(project / ".ripgreprc")}
    if "PYTHONPATH" in os.environ:  # a checkout under test that is not the installed one
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    prefix = as_user(user, [project, home, markers])
    command = [*prefix, str(swecli), "--provider", "openai-compatible", "--base-url", llm.base_url,
               "--model", "scripted-model", "--mode", "auto", "--sandbox", "off", "-p",
               "greet.py fails with: NameError: name 'helo' is not defined in this module; fix it"]
    return subprocess.run(command, cwd=project, env=env, text=True, capture_output=True, timeout=180,
                          stdin=subprocess.DEVNULL)


@needs_git
@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("through_include", [False, True], ids=["config", "include"])
def test_a_hostile_repository_runs_nothing_of_its_own_in_swecli(place: Path, user: str,
                                                                through_include: bool) -> None:
    project, markers = hostile_project(place, through_include)
    home = place / "home"
    home.mkdir()
    seed_vocabularies(home)
    steps = [
        Reply(calls=[Call("bash", {"command": "sed -i 's/helo/hello/' greet.py && touch mod_001.py && echo new > "
                                              "added.txt"})]),
        Reply(calls=[Call("grep", {"pattern": "function_1"})]),
        Reply(calls=[Call("repo_map", {})]),  # waits for the map's build (its worker processes)
        Reply("Fixed the greeting."),
    ]
    with ScriptedLLM(steps) as llm:
        out = run_session(project, llm, home, user, markers)
    assert out.returncode == 0, out.stderr
    ran = sorted(p.name for p in markers.iterdir())
    assert not ran, f"swecli ran what the repository planted: {ran}"
    assert "Found 71 matches" in str(llm.requests[2]["messages"][-1]["content"])
    assert "function_159" in str(llm.requests[3]["messages"][-1]["content"])
    notes = "".join(p.read_text() for p in (project / ".swecli" / "memory" / "notes").glob("*.md"))
    assert "`greet.py` — changed by" in notes and "`added.txt` — changed by" in notes  # the change record holds
    assert project.joinpath("greet.py").read_text() == "print('hello')\n"
    assert stat.S_IMODE(project.joinpath(".swecli").stat().st_mode) == 0o700
