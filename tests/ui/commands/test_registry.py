"""The slash-command registry and the built-in commands, on an in-process REPL."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from swecli.config import Settings
from swecli.events import Event, HistoryReplaced
from swecli.testing.server import Reply, ScriptedLLM
from swecli.ui.commands import Command, CommandContext, CommandRegistry, default_registry, is_command
from swecli.ui.repl import Repl


def output(repl: Repl) -> str:
    file = repl.console.file
    assert isinstance(file, io.StringIO)
    return "\n".join(line.rstrip() for line in file.getvalue().splitlines())


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM([], strict=False) as server:
        yield server


def make_repl(project: Path, llm: ScriptedLLM, *extra: Command) -> Repl:
    """An in-process REPL; `extra` commands are registered beside the built-in ones (the same name replaces one)."""
    settings = Settings(provider="openai-compatible", model="scripted-model", base_url=llm.base_url)
    console = Console(file=io.StringIO(), width=100, color_system=None, force_terminal=False, highlight=False)
    repl = Repl(project, settings, console)
    for command in extra:
        repl.commands.register(command, replace=True)
    return repl


def test_registry_rejects_duplicates_unless_replacing() -> None:
    registry = CommandRegistry([Command("ping", "Answer pong", lambda repl, args: None, aliases=("p",))])
    with pytest.raises(ValueError, match="already registered"):
        registry.register(Command("ping", "again", lambda repl, args: None))
    with pytest.raises(ValueError, match="already registered"):
        registry.register(Command("other", "alias clash", lambda repl, args: None, aliases=("p",)))
    registry.register(Command("ping", "Replaced", lambda repl, args: None), replace=True)
    assert registry.get("/ping") is not None and registry.get("ping").help == "Replaced"  # type: ignore[union-attr]
    assert registry.get("p") is None  # the old alias went with the old command
    with pytest.raises(ValueError, match="must be a word"):
        registry.register(Command("two words", "bad", lambda repl, args: None))


def test_suggestions_and_command_detection() -> None:
    registry = default_registry()
    assert registry.suggest("hepl") == "help"
    assert registry.suggest("mod") in ("mode", "model")
    assert registry.suggest("zzzzzz") is None
    assert registry.get("quit") is registry.get("exit")
    assert is_command("/mode plan") and is_command("  /help  ")
    assert not is_command("/etc/hosts is broken") and not is_command("fix /help page")


def test_dispatch_passes_arguments_and_reports_unknown_commands(project: Path, llm: ScriptedLLM) -> None:
    seen: list[str] = []
    repl = make_repl(project, llm, Command("compact", "Compact now", lambda ctx, args: seen.append(args),
                                           usage="/compact [focus]"))
    repl.submit("/compact keep the [test] failures")
    assert seen == ["keep the [test] failures"]
    repl.submit("/compcat")
    repl.submit("/xyzzy")
    assert output(repl).splitlines()[-2:] == [
        "Unknown command /compcat. Did you mean /compact? Type /help for the list.",
        "Unknown command /xyzzy. Type /help for the list.",
    ]
    repl.submit("/help")
    assert re.search(r"^/compact \[focus\] +Compact now$", output(repl), re.MULTILINE)


def test_a_failing_command_does_not_end_the_session(project: Path, llm: ScriptedLLM) -> None:
    def broken(ctx: CommandContext, args: str) -> None:
        raise RuntimeError("disk on fire")

    repl = make_repl(project, llm, Command("boom", "Fails", broken))
    repl.submit("/boom")
    assert output(repl).endswith("/boom failed: RuntimeError: disk on fire")


def test_mode_command(project: Path, llm: ScriptedLLM) -> None:
    repl = make_repl(project, llm)
    repl.submit("/mode plan")
    assert repl.agent.policy.mode == "plan" and repl.settings.mode == "plan"
    repl.submit("/mode autp")
    assert output(repl).endswith("Unknown mode 'autp'; use one of: default, auto, plan. Did you mean auto?")
    repl.submit("/mode")
    assert output(repl).endswith("Mode: plan (choose with /mode default|auto|plan; Shift-Tab cycles)")
    repl.cycle_mode()
    assert repl.mode == "default"
    repl.cycle_mode()
    assert repl.mode == "auto"


def test_clear_model_tokens_and_exit(project: Path, llm: ScriptedLLM) -> None:
    events: list[Event] = []
    repl = make_repl(project, llm)
    repl.session.bus.listeners.append(events.append)
    llm.add(Reply("Hello!", usage={"prompt_tokens": 1500, "completion_tokens": 20}),
            Reply("Again.", usage={"prompt_tokens": 1700, "completion_tokens": 30, "cached_tokens": 1400}))
    repl.submit("hi")
    repl.submit("hi again")
    repl.submit("/tokens")
    assert output(repl).endswith(
        "Session usage · 2 requests\n"
        "  input           3.2k  (3,200)\n"
        "  output            50  (50)\n"
        "  cache read      1.4k  (1,400)\n"
        "  cache write        0  (0)\n"
        "  total           3.2k  (3,250)"
    )
    repl.refresh_meter()
    before = repl.context_meter()
    assert before.window == 32_768 and before.used > 0
    repl.submit("/clear")
    after = repl.context_meter()
    assert repl.agent.history == [] and 0 < after.used < before.used  # system prompt and tools remain
    assert any(isinstance(e, HistoryReplaced) and e.reason == "clear" for e in events)
    repl.submit("/model other-model")
    assert repl.agent.provider.model == "other-model" and repl.settings.model == "other-model"
    repl.submit("/model")
    assert "Model: other-model · provider openai-compatible" in output(repl)
    repl.submit("/exit")
    assert repl._exit


def test_reopen_switches_sessions_and_keeps_mode_and_approvals(project: Path, llm: ScriptedLLM) -> None:
    repl = make_repl(project, llm)
    llm.add(Reply("First answer."))
    repl.submit("first question")
    first_id, first_history = repl.session.session_id, list(repl.agent.history)
    repl.set_mode("auto")
    repl.agent.policy.always_commands.add("make test")
    repl.reopen(None)
    assert repl.session.session_id != first_id and repl.agent.history == []
    repl.reopen(first_id)
    assert repl.session.session_id == first_id
    assert [m.content for m in repl.agent.history] == [m.content for m in first_history]
    assert repl.mode == "auto" and "make test" in repl.agent.policy.always_commands


def test_every_family_lands_on_the_one_registry() -> None:
    assert default_registry().names() == sorted([
        "help", "clear", "tokens", "resume", "exit", "quit",  # session
        "model", "mode", "thinking",  # model
        "context", "compact",  # context
        "init", "notes", "playbook",  # memory
        "repomap",  # project
        "skills",  # skills (each /skill-name is registered by the REPL once it has the session's catalog)
        "mcp",  # mcp
    ])
