"""The guard through the real loop: the real providers over HTTP against the scripted LLM server, real bash,
a throwaway home. A destructive command the model proposes in auto mode asks the person; with no one to
ask (`-p`, a pipe) it is refused, and the model is told why; nothing is deleted. (The REPL's side, the
question a person sees, is in tests/ui/test_repl_guard.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from swecli.assembly import open_session
from swecli.config import SandboxConfig, Settings
from swecli.events import Event, ToolFinished
from swecli.permissions import ApprovalRequest, Decision
from swecli.testing.server import Call, Reply, ScriptedLLM, Step, Wire
from tests.helpers import scripted_settings, tool_results

# Destructive commands of the kinds issue 22 found missed, aimed at the throwaway home's Documents folder.
DESTRUCTIVE = [
    "cd ~ && rm -rf Documents",
    "find ~/Documents | xargs rm -rf",
    'f(){ rm -rf "$1"; }; f ~/Documents',
    "python3 -c \"import shutil,os; shutil.rmtree(os.path.join(os.path.expanduser('~'), 'Documents'))\"",
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throwaway home with a file worth keeping; the guard and the commands both see it as ~."""
    home = tmp_path / "home"
    (home / "Documents").mkdir(parents=True)
    (home / "Documents" / "thesis.txt").write_text("four years of work\n")
    monkeypatch.setenv("HOME", str(home))
    return home


def settings(llm: ScriptedLLM, mode: str) -> Settings:
    # No sandbox: the guard alone stands between the command and the home (as with sandbox.mode = "off").
    return scripted_settings(llm, mode=mode, sandbox=SandboxConfig(mode="off"))


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_auto_mode_with_no_one_to_ask_refuses_destructive_commands(project: Path, home: Path, wire: Wire) -> None:
    steps: list[Step] = [Reply(calls=[Call("bash", {"command": command})]) for command in DESTRUCTIVE]
    steps += [Reply(calls=[Call("bash", {"command": "echo built > out.txt"})]), Reply("Done.")]
    events: list[Event] = []
    with ScriptedLLM(steps, wire=wire) as llm:
        session = open_session(project, settings(llm, "auto"), listeners=[events.append])
        turn = session.run("clean up the home folder")
        session.close()
    assert turn.stop_reason == "done"
    told = [tool_results(llm.requests[i + 1])[-1] for i in range(len(DESTRUCTIVE))]
    for command, message in zip(DESTRUCTIVE, told, strict=True):
        assert "needs the user's approval" in message and "no one is there to approve it" in message, command
    assert "home directory" in told[0] and "fed by find" in told[1] and "function f" in told[2]
    assert (home / "Documents" / "thesis.txt").read_text() == "four years of work\n"
    assert (project / "out.txt").read_text() == "built\n"  # an ordinary command still runs unasked in auto mode
    refused = [e for e in events if isinstance(e, ToolFinished) and not e.approved]
    assert len(refused) == len(DESTRUCTIVE)


def test_auto_mode_asks_the_person_and_never_remembers_always(project: Path, home: Path) -> None:
    asked: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return Decision("always") if len(asked) == 1 else Decision("no", "not my documents")

    command = "cd ~ && rm -rf Documents"
    steps: list[Step] = [Reply(calls=[Call("bash", {"command": "echo $HOME > where.txt"})]),
                         Reply(calls=[Call("bash", {"command": command})]),
                         Reply(calls=[Call("bash", {"command": command})]),
                         Reply("Stopped.")]
    with ScriptedLLM(steps) as llm:
        session = open_session(project, settings(llm, "auto"), approver=approver)
        session.run("tidy up")
        session.close()
    # the first, harmless command ran without a question; the destructive one was asked both times: the
    # person's "always" did not stick, and their second answer reached the model
    assert [r.args["command"] for r in asked] == [command, command]
    assert all("top-level folder of the home directory" in r.danger for r in asked)
    assert "not my documents" in tool_results(llm.requests[3])[-1]
    assert (project / "where.txt").read_text().strip() == str(home)
    assert not (home / "Documents").exists()  # allowed once, as the person said


def test_print_mode_refuses_destructive_commands_in_auto_mode(project: Path, home: Path) -> None:
    """The real `swecli -p` process, in auto mode: the destructive command is refused, the rest runs."""
    steps: list[Step] = [Reply(calls=[Call("bash", {"command": "rm -rf \"${HOME:?}\"/Documents"})]),
                         Reply(calls=[Call("bash", {"command": "git init -q . && rm -rf .git"})]),
                         Reply("I could not remove them.")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWECLI_") and not k.endswith("_API_KEY")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    with ScriptedLLM(steps) as llm:
        out = subprocess.run([sys.executable, "-m", "swecli", "-p", "remove my documents and the repo",
                              "--mode", "auto", "--provider", "openai-compatible", "--base-url", llm.base_url,
                              "--model", "scripted-model", "--output-format", "json"],
                             cwd=project, env=env, capture_output=True, text=True, timeout=120,
                             stdin=subprocess.DEVNULL)
    assert out.returncode == 3, out.stderr  # the run finished, but some calls were refused
    summary = json.loads(out.stdout)
    assert summary["result"] == "I could not remove them."
    assert [d["tool_input"]["command"] for d in summary["permission_denials"]] == [
        "rm -rf \"${HOME:?}\"/Documents", "git init -q . && rm -rf .git"]
    first, second = tool_results(llm.requests[1])[-1], tool_results(llm.requests[2])[-1]
    assert "recursive delete of a top-level folder of the home directory" in first and "non-interactive" in first
    assert "a git repository (.git: its history)" in second
    assert (home / "Documents" / "thesis.txt").exists()
