"""The input line: a prompt-toolkit session with history, completion, key bindings and the toolbar.

- History persists per project in `.swecli/history` (Up/Down, Ctrl-R search).
- Enter sends; Alt-Enter or Esc Enter inserts a newline; a paste with newlines stays one message
  (prompt-toolkit's bracketed paste inserts it whole).
- Tab completes slash commands, their arguments, and `@path` mentions.
- Shift-Tab cycles the mode; Ctrl-C clears a non-empty line, and on an empty one asks to leave.
- The bottom toolbar shows provider/model, mode, the context meter and a background summary at work.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from swecli.session.private import make_private_dir
from swecli.ui.commands.registry import CommandContext

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import CompleteEvent, Completion
    from prompt_toolkit.document import Document
    from prompt_toolkit.formatted_text import StyleAndTextTuples

    from swecli.ui.meter import Meter



class PromptHost(CommandContext, Protocol):
    """What the input line needs besides what a command may do: the toolbar's meter, Shift-Tab, warnings."""

    def context_meter(self) -> Meter: ...

    def cycle_mode(self) -> None: ...

    def warn(self, text: str) -> None: ...


PROMPT = "❯ "
MAX_PATH_COMPLETIONS = 200
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".pytest_cache", ".ruff_cache"}

STYLE = {
    "bottom-toolbar": "noreverse bg:#222222 #bbbbbb",
    "toolbar.model": "bold #dddddd",
    "toolbar.mode.default": "#88aaff",
    "toolbar.mode.auto": "bold #ffaa44",
    "toolbar.mode.plan": "bold #66cc66",
    "toolbar.meter.ok": "#88cc88",
    "toolbar.meter.near": "bold #eeee44",
    "toolbar.meter.over": "bold #ff5555",
    "toolbar.hint": "#777777",
    "toolbar.background": "#cc88ff",
    "prompt": "bold #66aaff",
}


def history_path(root: Path) -> Path:
    return root / ".swecli" / "history"


def command_candidates(host: PromptHost, text: str) -> list[tuple[str, str, str]]:
    """Completions for a line starting with `/`: (replacement, display, help), for the command name
    while it is being typed, else for its argument."""
    if " " not in text:
        typed = text[1:]
        return [(f"/{c.name}", f"/{c.name}", c.help) for c in host.commands.commands() if c.name.startswith(typed)]
    name, _, argument = text[1:].partition(" ")
    command = host.commands.get(name)
    if command is None or command.complete is None:
        return []
    return [(c, c, "") for c in command.complete(host, argument.lstrip())]


def path_candidates(root: Path, typed: str) -> list[str]:
    """Project paths starting with `typed` (directories end in `/`); hidden entries only when asked for."""
    directory, _, prefix = typed.rpartition("/")
    base = (root / directory) if directory else root
    try:
        base = base.resolve()
        if not (base == root.resolve() or base.is_relative_to(root.resolve())) or not base.is_dir():
            return []
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return []
    out: list[str] = []
    for entry in entries:
        if not entry.name.startswith(prefix) or entry.name in SKIP_DIRS:
            continue
        if entry.name.startswith(".") and not prefix.startswith("."):
            continue
        is_dir = entry.is_dir()
        out.append(f"{directory + '/' if directory else ''}{entry.name}{'/' if is_dir else ''}")
        if len(out) >= MAX_PATH_COMPLETIONS:
            break
    return out


def _completer(host: PromptHost) -> Any:
    from prompt_toolkit.completion import Completer, Completion

    class ReplCompleter(Completer):
        def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
            before = document.text_before_cursor
            if before.startswith("/") and "\n" not in before:
                yield from self._commands(before)
                return
            word = before.split()[-1] if before and not before[-1].isspace() else ""
            if word.startswith("@"):
                for path in path_candidates(host.root, word[1:]):
                    yield Completion("@" + path, start_position=-len(word), display=path)

        def _commands(self, before: str) -> Iterable[Completion]:
            if " " not in before:
                for replacement, display, meta in command_candidates(host, before):
                    yield Completion(replacement, start_position=-len(before), display=display, display_meta=meta)
                return
            argument = before.partition(" ")[2].lstrip()
            for replacement, display, _ in command_candidates(host, before):
                yield Completion(replacement, start_position=-len(argument), display=display)

    return ReplCompleter()


def _key_bindings(host: PromptHost) -> Any:
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add("s-tab")
    def _cycle_mode(event: KeyPressEvent) -> None:
        host.cycle_mode()
        event.app.invalidate()

    @bindings.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt, style="class:aborting")

    return bindings


HINTS = ("shift-tab mode", "/help", "ctrl-d exit")
"""Toolbar hints, kept while they fit the terminal's width, dropped from the end when they do not."""


def toolbar_fragments(host: PromptHost, width: int | None = None) -> StyleAndTextTuples:
    """The bottom toolbar, within `width` columns (the terminal's): whole hints are dropped before the
    model name is shortened, so nothing is ever cut mid-word."""
    settings = host.settings
    meter = host.context_meter()
    width = _terminal_width() if width is None else width
    model = f"{settings.provider or 'auto'}/{settings.model or '?'}"
    fixed = f" {model} · {host.mode} mode · {meter.label}"
    if len(fixed) > width:
        model = _shorten(model, max(8, len(model) - (len(fixed) - width)))
    fragments: StyleAndTextTuples = [
        ("", " "),
        ("class:toolbar.model", model),
        ("", " · "),
        (f"class:toolbar.mode.{host.mode}", f"{host.mode} mode"),
        ("", " · "),
        (f"class:toolbar.meter.{meter.level}", meter.label),
        *background_fragments(host.session.agent.context.background_status()),
    ]
    used = sum(len(text) for _, text, *_ in fragments)
    hints = ""
    for hint in HINTS:
        piece = f"  ·  {hint}" if not hints else f" · {hint}"
        if used + len(hints) + len(piece) > width:
            break
        hints += piece
    if hints:
        fragments.append(("class:toolbar.hint", hints))
    return fragments


def _shorten(text: str, size: int) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


def _terminal_width() -> int:
    from prompt_toolkit.application import get_app_or_none

    app = get_app_or_none()
    if app is None:
        return 1_000
    return int(app.output.get_size().columns)


def background_fragments(status: str) -> StyleAndTextTuples:
    """`⟳ summarizing older context` while a background summary is made (see swecli.context.background)."""
    return [("", " · "), ("class:toolbar.background", f"⟳ {status}")] if status else []


def build_session(host: PromptHost) -> PromptSession[str]:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory, History, InMemoryHistory
    from prompt_toolkit.styles import Style

    history: History
    try:
        path = history_path(host.root)
        make_private_dir(path.parent)
        # Fails now (a directory, no permission) rather than on the first saved line; 0600 like every record.
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        history = FileHistory(str(path))
    except OSError as exc:
        host.warn(f"input history is not saved ({exc}); it lasts for this session only.")
        history = InMemoryHistory()
    return PromptSession(
        message=[("class:prompt", PROMPT)],
        history=history,
        completer=_completer(host),
        complete_while_typing=True,
        key_bindings=_key_bindings(host),
        bottom_toolbar=lambda: toolbar_fragments(host),
        style=Style.from_dict(STYLE),
        multiline=False,
        enable_history_search=False,
        mouse_support=False,
    )
