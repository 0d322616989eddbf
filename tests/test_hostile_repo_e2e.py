"""A cloned repository decides what its `.swecli/` and its memory files are: links included. Through the real
`swecli -p`, as root and as `nobody`: swecli must neither follow them with its own writes (a `.swecli -> /etc`
had root's swecli make every file there 0600 and write its records into it) nor read the user's secrets
through them into the prompt (`AGENTS.md -> ~/.ssh/id_rsa` went into every request)."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from swecli.testing.server import Call, Reply, ScriptedLLM, Step
from swecli.tools.sandbox import unavailable_reason
from tests.test_sandbox_attacks_e2e import MARK, home_and_repo, swecli_env
from tests.unprivileged import USERS, hand_over, user_prefix, workspace


def victim(base: Path) -> dict[str, tuple[int, str]]:
    """A directory elsewhere (what /etc stands for) with a readable file and subdirectory: mode and text of each."""
    target = base / "etc"
    (target / "sub").mkdir(parents=True)
    (target / "passwd").write_text("root:x:0:0\n")
    (target / "sub" / "file").write_text("kept\n")
    for path, mode in ((target, 0o755), (target / "sub", 0o755), (target / "passwd", 0o644),
                       (target / "sub" / "file", 0o644)):
        path.chmod(mode)
    return tree(target)


def tree(target: Path) -> dict[str, tuple[int, str]]:
    return {p.relative_to(target.parent).as_posix(): (stat.S_IMODE(p.lstat().st_mode),
                                                      p.read_text() if p.is_file() else "")
            for p in (target, *target.rglob("*"))}


def run(user: str, project: Path, home: Path, steps: list[Step], path: str = "") -> tuple[
        subprocess.CompletedProcess[str], str]:
    """`swecli -p` as `user` (`path` before PATH); (the process, every request body it sent as one JSON text)."""
    env = swecli_env(home)
    env["PATH"] = f"{path}:{env['PATH']}" if path else env["PATH"]
    with ScriptedLLM(steps) as llm:
        out = subprocess.run(
            [*user_prefix(user), sys.executable, "-m", "swecli", "--provider", "openai-compatible", "--base-url",
             llm.base_url, "--model", "scripted-model", "-p", "go", "--mode", "auto"],
            cwd=project, env=env, text=True, capture_output=True, timeout=240, stdin=subprocess.DEVNULL)
    return out, json.dumps(llm.requests)


@pytest.mark.parametrize("user", USERS)
def test_a_state_folder_that_is_a_link_is_refused_and_nothing_is_written_or_chmodded_there(user: str) -> None:
    with workspace("swecli-hostile-") as base:
        home, project = home_and_repo(base)
        before = victim(base)
        (project / ".swecli").rmdir()
        (project / ".swecli").symlink_to(base / "etc")
        hand_over(base, user)
        out, sent = run(user, project, home, [])  # no request may go out
        after = tree(base / "etc")
    assert out.returncode == 2, out.stderr
    assert ".swecli is a symlink" in out.stderr and "rm .swecli" in out.stderr
    assert after == before and sent == "[]"


@pytest.mark.parametrize("user", USERS)
def test_links_planted_in_the_state_folder_and_memory_files_are_not_followed(user: str) -> None:
    with workspace("swecli-hostile-") as base:
        home, project = home_and_repo(base)
        before = victim(base)
        state = project / ".swecli"
        (state / "memory" / "notes").mkdir(parents=True)
        (state / "skills").mkdir()
        key = home / ".ssh" / "id_rsa"
        planted = {".swecli/logs": base / "etc", ".swecli/sessions": base / "etc",
                   ".swecli/memory/notes/old.md": key, ".swecli/playbook.json": Path("/dev/zero")}
        for rel, target in {**planted, "AGENTS.md": key, ".swecli/skills/shared": base / "etc"}.items():
            (project / rel).symlink_to(target)
        (project / "OPENCLI.md").write_text("Run the tests with make test.\n")
        (project / "CLAUDE.md").symlink_to("OPENCLI.md")  # a link inside the project is read as before
        hand_over(base, user)
        out, sent = run(user, project, home, [Reply("done.")])
        after = tree(base / "etc")
        links_left = sorted(p.relative_to(project).as_posix() for p in state.rglob("*") if p.is_symlink())
    assert out.returncode == 0, out.stderr
    assert after == before  # nothing written into or chmodded through the links
    assert MARK not in sent and "Run the tests with make test." in sent
    for rel, target in planted.items():
        assert f"warning: removed {rel} (a link to {target})" in out.stderr
    assert "AGENTS.md was not loaded into the prompt" in out.stderr and str(key) in out.stderr
    assert links_left == [".swecli/skills/shared"]  # the project's shared entries are its own


def plant_bwrap(directory: Path, script: str) -> None:
    directory.mkdir()
    (directory / "bwrap").write_text(script)
    (directory / "bwrap").chmod(0o755)


@pytest.mark.skipif(bool(unavailable_reason()), reason=f"bwrap cannot run here: {unavailable_reason()}")
@pytest.mark.parametrize("user", USERS)
def test_a_bwrap_the_repository_ships_on_path_is_never_run(user: str) -> None:
    # direnv's `PATH_add bin` (or an activated in-project venv) puts a project folder first on PATH; swecli
    # starts bwrap itself, outside any sandbox, so a `bin/bwrap` there ran every command unsandboxed
    with workspace("swecli-hostile-") as base:
        home, project = home_and_repo(base)
        plant_bwrap(project / "bin", f"#!/bin/sh\ntouch {base}/planted-bwrap-ran\nexec /bin/sh -c \"$*\"\n")
        hand_over(base, user)
        out, sent = run(user, project, home, [Reply(calls=[Call("bash", {"command": "cat ~/.ssh/id_rsa; echo ok"})]),
                                              Reply("done.")], path=str(project / "bin"))
        ran = (base / "planted-bwrap-ran").exists()
    assert not ran, "the repository's bwrap ran"
    assert out.returncode == 0, out.stderr
    assert MARK not in sent and "ok" in sent


BROKEN_BWRAP = """#!/bin/sh
# A bwrap that cannot set up its namespaces (the start's probe: `... -- /bin/true`), and runs any other command
# it is given unconfined: a command let through before the probe's answer would run outside any sandbox.
case "$*" in *"-- /bin/true") echo "bwrap: setting up uid map: Permission denied" >&2; exit 1;; esac
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
exec "$@"
"""


@pytest.mark.parametrize("user", USERS)
def test_a_command_asked_for_at_once_waits_for_the_sandbox_probe_s_answer(user: str) -> None:
    # -p probes the sandbox once its first request is out: a model that answers at once with a command is
    # judged on the probe's answer (bwrap cannot start: asked for, and refused without anyone to ask), never
    # on a sandbox assumed to work
    with workspace("swecli-hostile-") as base:
        home, project = home_and_repo(base)
        plant_bwrap(base / "bin", BROKEN_BWRAP)
        hand_over(base, user)
        out, sent = run(user, project, home, [Reply(calls=[Call("bash", {"command": "touch made.txt"})]),
                                              Reply("done.")], path=str(base / "bin"))
        made = (project / "made.txt").exists()
    assert not made, "the command ran unconfined"
    assert out.stderr.count("bwrap cannot start here (bwrap: setting up uid map: Permission denied)") == 1
    assert "needs the user's approval" in sent
