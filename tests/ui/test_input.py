"""The input line: completion, toolbar and history file."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, InMemoryHistory
from rich.console import Console

from swecli.config import Settings
from swecli.testing.server import ScriptedLLM
from swecli.ui.input import (
    _completer,
    build_session,
    command_candidates,
    history_path,
    path_candidates,
    toolbar_fragments,
)
from swecli.ui.meter import Meter
from swecli.ui.repl import Repl


@dataclass
class FixedMeter(Repl):
    """A REPL whose toolbar shows a given meter (the toolbar reads it through `PromptHost.context_meter`)."""

    fixed: Meter | None = None

    def context_meter(self) -> Meter:
        return self.fixed or super().context_meter()


@pytest.fixture
def repl(project: Path) -> Iterator[Repl]:
    with ScriptedLLM([], strict=False) as llm:
        settings = Settings(provider="openai-compatible", model="scripted-model", base_url=llm.base_url)
        console = Console(file=io.StringIO(), width=100, color_system=None, force_terminal=False)
        yield FixedMeter(project, settings, console)


def completions(repl: Repl, text: str) -> list[str]:
    document = Document(text, len(text))
    return [c.text for c in _completer(repl).get_completions(document, CompleteEvent(completion_requested=True))]


def test_slash_commands_and_their_arguments_complete(repl: Repl) -> None:
    assert completions(repl, "/mo") == ["/mode", "/model"]
    assert completions(repl, "/") == ["/clear", "/compact", "/context", "/exit", "/help", "/init", "/mcp", "/mode",
                                      "/model", "/notes", "/playbook", "/repomap", "/resume", "/skills", "/thinking",
                                      "/tokens"]
    assert completions(repl, "/mode p") == ["plan"]
    assert completions(repl, "/mode ") == ["default", "auto", "plan"]
    assert completions(repl, "/tokens ") == []
    assert completions(repl, "/repomap ") == ["symbols", "deps "]
    assert [c[2] for c in command_candidates(repl, "/cl")] == ["Start a new conversation (same settings)"]


def test_path_mentions_complete_inside_the_project(repl: Repl, project: Path) -> None:
    (project / "src" / "api").mkdir(parents=True)
    (project / "src" / "api" / "auth.py").write_text("")
    (project / "src" / "app.py").write_text("")
    (project / ".env").write_text("")
    (project / ".git").mkdir()
    assert completions(repl, "fix @sr") == ["@src/"]
    assert completions(repl, "fix @src/a") == ["@src/api/", "@src/app.py"]
    assert completions(repl, "fix @src/api/") == ["@src/api/auth.py"]
    assert completions(repl, "see @.") == ["@.env", "@.swecli/"]  # hidden entries only when asked for
    assert completions(repl, "see @../") == []  # never outside the project
    assert completions(repl, "plain words") == []
    assert path_candidates(project, "nothing-here") == []


def test_toolbar_shows_model_mode_and_a_coloured_meter(repl: Repl) -> None:
    fragments = toolbar_fragments(repl)
    text = "".join(fragment[1] for fragment in fragments)
    assert text.startswith(" openai-compatible/scripted-model · default mode · ctx ")
    assert "/32.8k" in text
    assert isinstance(repl, FixedMeter)
    repl.fixed = Meter(87_100, 100_000, 0.8)
    repl.cycle_mode()
    fragments = toolbar_fragments(repl)
    assert ("class:toolbar.meter.over", "ctx 87% · 87.1k/100k") in fragments
    assert ("class:toolbar.mode.auto", "auto mode") in fragments
    repl.fixed = Meter(75_000, 100_000, 0.8)
    assert ("class:toolbar.meter.near", "ctx 75% · 75k/100k") in toolbar_fragments(repl)


def test_toolbar_fits_the_terminal_without_cutting_a_word(repl: Repl) -> None:
    def text(width: int) -> str:
        return "".join(fragment[1] for fragment in toolbar_fragments(repl, width))

    wide = text(160)
    assert wide.endswith("  ·  shift-tab mode · /help · ctrl-d exit")
    at_80 = text(80)
    assert len(at_80) <= 80 and at_80 == wide[: len(at_80)]  # whole hints dropped from the end
    assert at_80.rstrip().endswith(("/32.8k", "mode", "/help", "exit"))
    narrow = text(50)
    assert len(narrow) <= 50 and "default mode" in narrow and "ctx " in narrow and "…" in narrow


def test_history_is_kept_per_project(repl: Repl, project: Path) -> None:
    session = build_session(repl)
    assert isinstance(session.history, FileHistory)
    assert history_path(project).is_file()


def test_an_unwritable_history_falls_back_to_memory(repl: Repl, project: Path) -> None:
    history_path(project).parent.mkdir(exist_ok=True)
    history_path(project).mkdir()  # a directory where the file should be
    session = build_session(repl)
    assert isinstance(session.history, InMemoryHistory)
    assert "input history is not saved" in repl.console.file.getvalue()  # type: ignore[attr-defined]


def test_toolbar_shows_a_summary_being_made_in_the_background(repl: Repl) -> None:
    import threading

    from swecli.llm.openai import OpenAIProvider
    from swecli.messages import AssistantMessage, Message, UserMessage
    from swecli.testing.server import Reply

    gate = threading.Event()
    context = repl.agent.context
    history: list[Message] = []
    while context.state(history).total <= context.budget.warning_limit:
        history += [UserMessage(content="explain the module " + "parser token " * 150),
                    AssistantMessage(content="it parses " * 200)]
    assert context.state(history).total <= context.budget.hard_limit

    def summarize(body: dict[str, object]) -> Reply:
        gate.wait(30)
        return Reply("### Current task and state\nexplaining the module", usage=False)

    with ScriptedLLM([summarize]) as summarizer:
        context.summary_provider = lambda: OpenAIProvider(model="m", base_url=summarizer.base_url, api_key="k",
                                                          name="openai-compatible", sleep=lambda s: None)
        assert context.prepare(history, repl.provider) is history  # the loop goes on
        assert ("class:toolbar.background", "⟳ summarizing older context") in toolbar_fragments(repl)
        gate.set()
        job = context.background_job
        assert job is not None and job.done.wait(30)
        assert ("class:toolbar.background", "⟳ summary ready") in toolbar_fragments(repl)
    context.cancel_background("the test is over")
    assert not [f for f in toolbar_fragments(repl) if f[0] == "class:toolbar.background"]
