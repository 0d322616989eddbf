"""Rich rendering of the agent's events for the REPL.

Layout: everything finished (reasoning lines, action lines, results, diffs, answer paragraphs) is
printed once, in order, above a small live region at the bottom of the screen. The live region holds
only what is still changing: the partial line of a stream, the last lines of a running command, a
spinner with the elapsed time and `esc to interrupt`, and what the person typed meanwhile (messages
queued for after the turn, and the line being typed). So the scrollback reads like a clean log,
however long the stream.

Events arrive on the agent's worker thread; the REPL's main thread pauses the live region for
approval prompts. A lock keeps the two from interleaving.

Text that came from the model or the user is always wrapped in `rich.text.Text` (or rendered as
Markdown) and never interpreted as console markup, so `[brackets]` print as they are.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import field
from functools import cached_property
from typing import TYPE_CHECKING, Any, assert_never

from rich.console import Console, Group, RenderableType
from rich.text import Text

from swecli.events import (
    BackgroundSummary,
    ChildEvent,
    CompactionDone,
    ContextOverflow,
    Event,
    HistoryReplaced,
    MessageAppended,
    ModelCallFinished,
    ModelCallStarted,
    Notice,
    ReasoningDelta,
    SummarySpent,
    TextDelta,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnFinished,
    Waiting,
)
from swecli.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from swecli.records import datarecord
from swecli.tools.facts import facts_for, key_argument, one_line
from swecli.tools.visible import visible
from swecli.ui.meter import format_tokens

if TYPE_CHECKING:
    from rich.live import Live
    from rich.spinner import Spinner

    from swecli.permissions import ApprovalRequest
    from swecli.tools.base import ToolResult

RESULT_MARK = "  ⎿  "
PREVIEW_INDENT = "     "
REASONING_INDENT = "  "
CODE_THEME = "monokai"


def as_written(markup: str, code_theme: str = CODE_THEME) -> RenderableType:
    """rich's Markdown with HTML read as text. CommonMark passes HTML through for a browser, and rich draws
    none of it: `<details>` blocks, `List<String>`, `<T>` and `<br/>` vanished from answers. In a terminal
    an answer about code shows its angle brackets as the model wrote them. (markdown-it and pygments load
    only once there is an answer to show.)"""
    from markdown_it import MarkdownIt
    from rich.markdown import Markdown

    shown = Markdown("", code_theme=code_theme)
    shown.markup = markup
    shown.parsed = MarkdownIt("commonmark", {"html": False}).enable("strikethrough").enable("table").parse(markup)
    return shown


TAIL_LINES = 6
"""Lines of a streaming answer shown in the live region before its paragraph is complete."""
OUTPUT_LINES = 5
"""Last lines of a running command's output shown in the live region."""
PARTIAL_CHARS = 500
INTERRUPTED = "interrupted by user"

QUIET_OUTCOMES = ("declined", "refused", "interrupted by user")
"""Summaries that are the whole story: no preview, shown in yellow rather than as an error."""


# -- formatting helpers (pure; tested with exact text) --------------------------------------------

def format_duration(seconds: float) -> str:
    """`0.4s`, `3.2s`, `12s`, `2m 05s`, `1h 02m`."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def verb(name: str) -> str:
    """The word a call of this tool is shown with (`read`, `grep`, `bash`)."""
    return facts_for(name).verb or name


def action_line(name: str, args: dict[str, Any]) -> Text:
    """`🔍 grep 'login' src/`, `⚡ bash pytest -q`: one line per tool call."""
    facts = facts_for(name)
    line = Text(f"{facts.icon} ")
    line.append(facts.verb or name, style="bold")
    argument = facts.describe(args)
    if argument:
        line.append(" " + argument, style="" if facts.is_shell else "cyan")
    return line


def result_text(name: str, result: ToolResult, preview_lines: int = 3, width: int = 100) -> Text:
    """The one-line summary under an action line, then a few lines of preview."""
    summary = result.summary or (_first_line(result.content) if result.is_error else "") or \
        ("error" if result.is_error else "done")
    style = "red" if result.is_error else ""
    if result.summary in QUIET_OUTCOMES:
        style = "yellow"
    text = Text(RESULT_MARK)
    text.append(one_line(visible(summary), width), style=style)
    for line in _preview(name, result, summary, preview_lines):
        text.append("\n" + PREVIEW_INDENT + _clip(line, width), style="dim")
    return text


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _preview(name: str, result: ToolResult, summary: str, count: int) -> list[str]:
    end = facts_for(name).preview
    if result.summary == INTERRUPTED and end == "tail" and count > 0:
        return _partial_output(result.content, count)
    if result.summary in QUIET_OUTCOMES or count <= 0:
        return []
    if end == "none" and not result.is_error:
        return []
    lines = result.content.strip("\n").splitlines()
    if lines and lines[0].strip() == summary.strip():
        lines = lines[1:]  # the summary already said it
    if end == "tail" and result.full is not None:
        while lines and lines[-1].startswith("exit code "):
            lines.pop()  # the summary says it: the preview's lines are then all the output's
    total = len(lines)
    if result.full is not None:  # the model got a cut: count what was hidden in the whole output, as it is told
        total = max(total, result.full.lines)
    if total <= count:
        return lines
    hidden = _plural(total - min(count, len(lines)), "line")
    if end == "tail":
        return [f"… +{hidden}", *lines[-count:]]
    return [*lines[:count], f"… +{hidden}"]


def _partial_output(content: str, count: int) -> list[str]:
    """What an interrupted command printed before it was stopped (the model got the same), without
    the status lines around it."""
    lines = [line for line in content.strip("\n").splitlines()
             if line != INTERRUPTED and not line.startswith("exit code ")]
    if not lines or lines == ["(no output)"]:
        return []
    if len(lines) <= count:
        return lines
    return [f"… +{_plural(len(lines) - count, 'line')}", *lines[-count:]]


def _clip(line: str, width: int) -> str:
    line = line.expandtabs(4)
    return line if len(line) <= width else line[: width - 1] + "…"


def diff_text(diff: str, max_lines: int = 80, indent: str = "    ") -> Text:
    """A unified diff, coloured: additions green, removals red, hunk headers cyan."""
    lines = visible(diff).rstrip("\n").splitlines()
    hidden = max(0, len(lines) - max_lines)
    text = Text()
    for i, line in enumerate(lines[:max_lines]):
        if i:
            text.append("\n")
        text.append(indent + line, style=_diff_style(line))
    if hidden:
        text.append(f"\n{indent}… +{hidden} more diff lines", style="dim")
    return text


def _diff_style(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    if line.startswith("@@"):
        return "cyan"
    return ""


def looks_like_diff(text: str) -> bool:
    return any(line.startswith(("@@", "--- ", "+++ ")) for line in text.splitlines()[:20])


def completion_line(turn: TurnFinished) -> Text:
    """`⏺ done in 12s · ↑ 3.2k ↓ 450 tokens` after each turn; `~` and "(estimated)" mark local counts
    (the server reported no usage)."""
    words = {
        "done": ("done in", "green"),
        "output_limit": ("cut at the output limit after", "yellow"),
        "refused": ("refused after", "yellow"),
        "empty": ("empty answer after", "yellow"),
        "interrupted": ("interrupted after", "yellow"),
        "iteration_limit": ("stopped at the iteration limit after", "yellow"),
        "error": ("failed after", "red"),
    }
    phrase, colour = words.get(turn.stop_reason, (f"{turn.stop_reason} after", "yellow"))
    text = Text("⏺ ", style=colour)
    text.append(f"{phrase} {format_duration(turn.duration)}")
    usage, mark = turn.usage, "~" if turn.usage.estimated else ""
    text.append(f" · ↑ {mark}{format_tokens(usage.input_tokens)} ↓ {mark}{format_tokens(usage.output_tokens)} tokens"
                + (" (estimated)" if usage.estimated else ""), style="dim")
    return text


def compaction_line(event: CompactionDone) -> Text:
    """`⟳ compacted 42 messages: 120k → 30k tokens (-75%, summarize, auto)`."""
    what = f"compacted {_plural(event.messages_compacted, 'message')}" if event.messages_compacted else "compacted"
    text = Text("⟳ ", style="magenta")
    text.append(f"{what}: {format_tokens(event.tokens_before)} → {format_tokens(event.tokens_after)} tokens")
    text.append(f" ({-event.reduction:+.0%}, {event.strategy}, {event.trigger})", style="dim")
    if event.background:
        text.append(f" · summary made in the background, waited {format_duration(event.waited)}", style="dim")
    if event.note:
        text.append(f"\n  {event.note}", style="dim")
    return text


def notice_line(event: Notice) -> Text:
    marks = {"info": ("ℹ ", "blue"), "warning": ("⚠ ", "yellow"), "error": ("✗ ", "red")}
    mark, colour = marks.get(event.level, ("• ", ""))
    text = Text(mark, style=colour)
    text.append(visible(event.text), style=colour if event.level == "error" else "")
    return text


def approval_preview(request: ApprovalRequest, max_diff_lines: int = 80) -> RenderableType:
    """What will happen if the user says yes: the diff of an edit, the full command of bash."""
    parts: list[RenderableType] = []
    if facts_for(request.call.name).is_shell:
        command = str(request.args.get("command", "")) or request.preview
        # The action line above shows a short one-line command in full already; repeat only what it cut.
        if key_argument(request.call.name, request.args) != command:
            text = Text("    $ ", style="dim")
            text.append(visible(command), style="bold")
            parts.append(text)
    elif looks_like_diff(request.preview):
        parts.append(diff_text(request.preview, max_diff_lines))
    elif request.preview:
        parts.append(Text(visible(request.preview), style=""))
    if request.danger:
        parts.append(Text(f"    ⚠ {request.danger}", style="bold red"))
    if request.note:
        parts.append(Text(f"    ⚠ {request.note}", style="yellow"))
    return Group(*parts)


# -- streaming buffers ----------------------------------------------------------------------------

class LineStream:
    """Turns a stream of fragments into finished lines, word-wrapped to `width` so that no line
    waits forever in the live region when the model writes one long paragraph."""

    def __init__(self, width: int) -> None:
        self.width = max(20, width)
        self.partial = ""

    def feed(self, fragment: str) -> list[str]:
        self.partial += fragment
        done: list[str] = []
        while "\n" in self.partial:
            line, self.partial = self.partial.split("\n", 1)
            done.extend(self._wrap(line, final=True))
        done.extend(self._wrap(self.partial, final=False))
        return done

    def _wrap(self, line: str, final: bool) -> list[str]:
        out: list[str] = []
        while len(line) > self.width:
            cut = line.rfind(" ", 0, self.width + 1)
            cut = cut if cut > 0 else self.width
            out.append(line[:cut].rstrip())
            line = line[cut:].lstrip(" ")
        if final:
            out.append(line)
        else:
            self.partial = line
        return out

    def flush(self) -> list[str]:
        rest, self.partial = self.partial, ""
        return [rest] if rest.strip() else []


class BlockStream:
    """Splits streamed Markdown into finished blocks (at blank lines outside code fences), so each
    paragraph or code block is rendered as Markdown once it is complete."""

    def __init__(self) -> None:
        self.pending = ""

    def feed(self, fragment: str) -> list[str]:
        self.pending += fragment
        cut = self._last_safe_break()
        if cut < 0:
            return []
        block, self.pending = self.pending[:cut].rstrip("\n"), self.pending[cut:].lstrip("\n")
        return [block] if block.strip() else []

    def _last_safe_break(self) -> int:
        """The end of the last blank line that is not inside a fenced code block (-1 if none)."""
        position, in_fence, cut = 0, False, -1
        for line in self.pending.splitlines(keepends=True):
            stripped = line.strip()
            if stripped.startswith(("```", "~~~")):
                in_fence = not in_fence
            position += len(line)
            if not stripped and not in_fence and line.endswith("\n"):
                cut = position
        return cut

    def flush(self) -> list[str]:
        rest, self.pending = self.pending.rstrip("\n"), ""
        return [rest] if rest.strip() else []


# -- sub-agents -----------------------------------------------------------------------------------

@datarecord
class ChildProgress:
    """A running sub-agent, as the live region shows it under its `task` call."""

    agent: str
    actions: list[str] = field(default_factory=list)
    tools: int = 0
    tokens: int = 0

    def see(self, event: Event) -> None:
        if isinstance(event, ToolStarted):
            self.tools += 1
            self.actions = [*self.actions[-(CHILD_ACTIONS - 1):], action_line(event.call.name, event.args).plain]
        elif isinstance(event, ModelCallFinished):
            self.tokens += event.usage.total_tokens

    def lines(self) -> list[Text]:
        head = Text(f"{RESULT_MARK}{self.agent}: ", style="dim")
        head.append(f"{_plural(self.tools, 'tool use')} · {format_tokens(self.tokens)} tokens", style="dim")
        out = [head]
        hidden = self.tools - len(self.actions)
        if hidden > 0:
            out.append(Text(f"{PREVIEW_INDENT}… +{hidden} earlier", style="dim"))
        out += [Text(PREVIEW_INDENT + action, style="dim", overflow="ellipsis", no_wrap=True)
                for action in self.actions]
        return out


CHILD_ACTIONS = 3
"""A running sub-agent's latest actions shown under its call (the rest are folded into a count)."""


# -- the event listener ---------------------------------------------------------------------------

class Renderer:
    """Listens to the agent's events and draws them (see the module docstring for the layout)."""

    def __init__(self, console: Console, *, live: bool | None = None, preview_lines: int = 3,
                 diff_lines: int = 80) -> None:
        self.console = console
        self.live_enabled = console.is_terminal if live is None else live
        self.preview_lines = preview_lines
        self.diff_lines = diff_lines
        self._lock = threading.RLock()
        self._live: Live | None = None
        self._turn_started = time.monotonic()
        self._activity = "Thinking"
        self._tool_started: float | None = None
        """When the running tool call began: the status line's clock counts it while it runs."""
        self._reasoning = LineStream(self._text_width(REASONING_INDENT))
        self._answer = BlockStream()
        self._in_reasoning = False
        self._answer_blocks = 0
        self._after_code = False
        self._streamed = False
        self._approved_diffs: set[str] = set()
        self._output_partial = ""
        self._output_tail: list[str] = []
        self.queued: list[str] = []
        """Messages typed while the agent works, sent after the turn (shown in the live region)."""
        self.typing = ""
        """The line being typed while the agent works."""
        self._children: dict[str, ChildProgress] = {}
        self._silent_since: float | None = None
        """When the model went quiet, while it stays quiet (from `Waiting` events)."""
        self.interrupting = False
        self.summarizing = False
        """A background summary is being made (shown in the status line)."""

    # the REPL's side ------------------------------------------------------------------------------
    def begin_turn(self, activity: str = "Thinking") -> None:
        with self._lock:
            self._turn_started = time.monotonic()
            self._tool_started = None
            self.interrupting = False
            self._activity = activity
            self._clear_output()
            self._start_live()

    def pause(self) -> None:
        """Stop the live region (before an approval prompt takes the terminal)."""
        with self._lock:
            self._stop_live()

    def resume(self) -> None:
        with self._lock:
            if self._tool_started is not None:  # an approved call starts running now, not when it asked
                self._tool_started = time.monotonic()
            self._start_live()

    def end_turn(self) -> None:
        with self._lock:
            self._finish_streams()
            self._stop_live()

    def mark_interrupting(self) -> None:
        with self._lock:
            self.interrupting = True

    def show_typing(self, typing: str, queued: list[str]) -> None:
        """What the person typed while the agent works: the current line and the queued messages."""
        with self._lock:
            self.typing, self.queued = typing, list(queued)

    def note_diff_shown(self, call_id: str) -> None:
        """The approval prompt showed this call's diff already; do not repeat it under the result."""
        with self._lock:
            self._approved_diffs.add(call_id)

    def print(self, renderable: RenderableType = "") -> None:
        with self._lock:
            self.console.print(renderable)

    # the agent's side -----------------------------------------------------------------------------
    def __call__(self, event: Event) -> None:
        with self._lock:
            self._dispatch(event)

    def _dispatch(self, event: Event) -> None:  # noqa: C901 (one case per event kind, exhaustive: see events.py)
        if not isinstance(event, ChildEvent | Waiting):
            self._silent_since = None
        match event:
            case ChildEvent():
                self._on_child(event)
            case Waiting():
                self._silent_since = time.monotonic() - event.seconds
            case ReasoningDelta():
                self._on_reasoning(event.text)
            case TextDelta():
                self._on_text(event.text)
            case ModelCallStarted():
                self._on_model_call()
            case MessageAppended():
                if isinstance(event.message, AssistantMessage):
                    self._on_assistant(event.message)
            case ToolStarted():
                self._on_tool_started(event)
            case ToolOutput():
                self._on_output(event.text)
            case ToolFinished():
                self._on_tool_finished(event)
            case CompactionDone():
                self._print_finished(compaction_line(event))
            case BackgroundSummary():
                self.summarizing = event.phase == "started"
            case Notice():
                self._print_finished(notice_line(event))
            case TurnFinished():
                self._on_turn_finished(event)
            case ModelCallFinished() | HistoryReplaced() | SummarySpent() | ContextOverflow():
                pass  # for the log and the toolbar: nothing to draw
            case _:
                assert_never(event)

    def _print_finished(self, line: Text) -> None:
        """A line of its own, below whatever was streaming (which is finished first)."""
        self._finish_streams()
        self.console.print(line)

    def _on_model_call(self) -> None:
        self._streamed = False
        self._activity = "Thinking"
        self._start_live()

    def _on_tool_started(self, event: ToolStarted) -> None:
        self._finish_streams()
        self.console.print(action_line(event.call.name, event.args))
        self._activity = f"Running {verb(event.call.name)}"
        self._tool_started = time.monotonic()
        self._clear_output()

    def _on_reasoning(self, fragment: str) -> None:
        self._streamed = True
        if not self._in_reasoning:
            self._finish_answer()
            self.console.print(Text("💭 Reasoning:", style="dim italic"))
            self._in_reasoning = True
            self._activity = "Reasoning"
        for line in self._reasoning.feed(fragment):
            self._print_reasoning(line)

    def _print_reasoning(self, line: str) -> None:
        self.console.print(Text(REASONING_INDENT + visible(line), style="dim italic"))

    def _on_text(self, fragment: str) -> None:
        self._streamed = True
        self._finish_reasoning()
        self._activity = "Writing"
        for block in self._answer.feed(fragment):
            self._print_block(block)

    def _print_block(self, block: str) -> None:
        # Blocks are separated by a blank line, as in a whole-document render; a code block's own
        # padding already provides it.
        if self._answer_blocks and not self._after_code:
            self.console.print()
        self.console.print(as_written(visible(block)))
        self._answer_blocks += 1
        self._after_code = block.rstrip().endswith(("```", "~~~"))

    def _on_assistant(self, message: AssistantMessage) -> None:
        if not self._streamed:  # a provider that answered in one piece: show it the same way
            if message.reasoning:
                self._on_reasoning(message.reasoning)
            if message.content:
                self._on_text(message.content)
        self._finish_streams()
        self._streamed = False

    def _on_output(self, text: str) -> None:
        lines = (self._output_partial + text).split("\n")
        self._output_partial = lines.pop()[-PARTIAL_CHARS:]  # a line with no end yet (a progress bar)
        if lines:
            self._output_tail = (self._output_tail + lines[-OUTPUT_LINES:])[-OUTPUT_LINES:]

    def _clear_output(self) -> None:
        self._output_partial, self._output_tail = "", []

    def _on_child(self, wrapped: ChildEvent) -> None:
        """A sub-agent's progress stays folded in the live region under its call; only its warnings and
        its outcome (the parent's ToolFinished) reach the scrollback."""
        progress = self._children.setdefault(wrapped.call_id, ChildProgress(wrapped.agent))
        progress.see(wrapped.event)
        if isinstance(wrapped.event, Notice) and wrapped.event.level != "info":
            self._finish_streams()
            self.console.print(Text(PREVIEW_INDENT) + notice_line(wrapped.event))

    def _on_tool_finished(self, event: ToolFinished) -> None:
        self._tool_started = None
        self._clear_output()
        self._children.pop(event.call.id, None)
        self._finish_streams()
        width = self._text_width(PREVIEW_INDENT)
        self.console.print(result_text(event.call.name, event.result, self.preview_lines, width))
        if event.result.diff and not event.result.is_error and event.call.id not in self._approved_diffs:
            self.console.print(diff_text(event.result.diff, self.diff_lines))
        self._approved_diffs.discard(event.call.id)
        self._activity = "Thinking"

    def _on_turn_finished(self, turn: TurnFinished) -> None:
        self._finish_streams()
        self._stop_live()
        if turn.stop_reason == "iteration_limit" or (turn.stop_reason == "error" and turn.error):
            self.console.print(Text(visible(turn.error or turn.answer), style="yellow"))
        self.console.print(completion_line(turn))

    def _finish_streams(self) -> None:
        self._finish_reasoning()
        self._finish_answer()

    def _finish_reasoning(self) -> None:
        if self._in_reasoning:
            for line in self._reasoning.flush():
                self._print_reasoning(line)
            self._in_reasoning = False

    def _finish_answer(self) -> None:
        for block in self._answer.flush():
            self._print_block(block)
        self._answer_blocks = 0

    # the live region ------------------------------------------------------------------------------
    def _start_live(self) -> None:
        if not self.live_enabled or self._live is not None:
            return
        from rich.live import Live

        self._live = Live(console=self.console, get_renderable=self._live_view, refresh_per_second=10,
                          transient=True, redirect_stdout=False, redirect_stderr=False)
        self._live.start()

    def _stop_live(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _live_view(self) -> RenderableType:
        # Called by rich's refresh thread: read the buffers without the lock (a torn read only
        # shows a frame one fragment old).
        parts: list[RenderableType] = []
        if self._in_reasoning and self._reasoning.partial:
            parts.append(Text(REASONING_INDENT + visible(self._reasoning.partial), style="dim italic",
                              overflow="ellipsis", no_wrap=True))
        pending = self._answer.pending
        if pending.strip():
            tail = visible(pending).rstrip("\n").splitlines()[-TAIL_LINES:]
            parts.append(Text("\n".join(tail), overflow="ellipsis", no_wrap=True))
        output = [_last_frame(line) for line in [*self._output_tail, self._output_partial] if line.strip()]
        if output:
            parts.append(Text("\n".join(PREVIEW_INDENT + line.expandtabs(4) for line in output[-OUTPUT_LINES:]),
                              style="dim", overflow="ellipsis", no_wrap=True))
        for progress in list(self._children.values()):
            parts.extend(progress.lines())
        parts.append(self.status_line())
        parts.extend(Text(f"  ⏎ queued: {line}", style="cyan", overflow="ellipsis", no_wrap=True)
                     for line in self.queued)
        if self.typing:
            parts.append(Text(f"  ❯ {self.typing}▏", overflow="ellipsis", no_wrap=True))
        return Group(*parts)

    @cached_property
    def _spinner(self) -> Spinner:
        """Made for the first status line: rich.spinner imports rich.table, which the prompt never needs."""
        from rich.spinner import Spinner

        return Spinner("dots", style="cyan")

    def status_line(self, now: float | None = None) -> Text:
        now = time.monotonic() if now is None else now
        frame = self._spinner.render(now)
        line = frame.copy() if isinstance(frame, Text) else Text("·")
        label = "Interrupting" if self.interrupting else self._activity
        line.append(f" {label}… ", style="bold")
        since = self._tool_started if self._tool_started is not None else self._turn_started
        line.append(f"{format_duration(now - since)}", style="dim")
        if self._silent_since is not None:
            line.append(f" · no reply for {format_duration(now - self._silent_since)}", style="yellow")
        line.append(" · esc to interrupt", style="dim")
        if self.summarizing:
            line.append(" · summarizing older context in the background", style="dim")
        return line

    def _text_width(self, indent: str) -> int:
        return max(20, self.console.width - len(indent) - 1)


_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[^\[]|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _last_frame(line: str) -> str:
    """What a terminal would show of a line redrawn with carriage returns (progress bars), without the
    colour codes and other control characters (they would garble the live region)."""
    return _CONTROL.sub("", line.rstrip("\r").rsplit("\r", 1)[-1])


# -- a resumed session's last exchanges -------------------------------------------------------------

def replay_lines(history: list[Message], exchanges: int = 3, width: int = 100) -> list[Text]:
    """The last few exchanges of a resumed conversation, compactly: each prompt, the actions it led to,
    and the first lines of the answer, so the person sees where they were."""
    starts = [i for i, m in enumerate(history) if isinstance(m, UserMessage) and m.kind == "prompt"]
    if not starts:
        return []
    shown = starts[-exchanges:]
    lines: list[Text] = []
    if len(starts) > len(shown) or shown[0] > 0:
        earlier = len(starts) - len(shown)
        what = f"{_plural(earlier, 'earlier exchange')}" if earlier else "earlier context"
        lines.append(Text(f"  … {what} not shown", style="dim"))
    for n, start in enumerate(shown):
        end = shown[n + 1] if n + 1 < len(shown) else len(history)
        lines.extend(_exchange_lines(history[start:end], width, _skill_before(history, start)))
    return lines


_SKILL_NAME = re.compile(r'<skill name="([^"]+)"')


def _skill_before(history: list[Message], start: int) -> str:
    """The skill a `/skill-name` loaded just before the prompt at `start` ("" when none did)."""
    before = history[start - 1] if start > 0 else None
    if isinstance(before, UserMessage) and before.kind == "skill":
        found = _SKILL_NAME.match(before.content)
        return found.group(1) if found else ""
    return ""


def _exchange_lines(span: list[Message], width: int, skill: str = "") -> list[Text]:
    prompt = span[0]
    assert isinstance(prompt, UserMessage)
    typed = prompt.content
    if skill:  # as it was typed: `/skill-name request` (the request alone was sent after the skill)
        typed = f"/{skill}" + ("" if typed == f"Use the {skill} skill." else f" {typed}")
    out = [Text(f"❯ {one_line(visible(typed), width)}", style="bold")]
    calls: list[ToolCall] = [c for m in span if isinstance(m, AssistantMessage) for c in m.tool_calls]
    if calls:
        named = ", ".join(f"{verb(c.name)} {key_argument(c.name, c.args())}".strip() for c in calls[-3:])
        more = f"{len(calls) - 3} more, " if len(calls) > 3 else ""
        errors = sum(1 for m in span if isinstance(m, ToolMessage) and m.is_error)
        failed = f" ({errors} failed)" if errors else ""
        out.append(Text(_clip(f"  {_plural(len(calls), 'action')}{failed}: {more}{named}", width), style="dim"))
    last = next((m for m in reversed(span) if isinstance(m, AssistantMessage)), None)
    answer = last.content if last is not None and not last.tool_calls else ""
    if answer.strip():
        body = [line for line in answer.strip().splitlines() if line.strip()]
        text = Text("⏺ ", style="green")
        text.append(_clip(visible(body[0]), width) + (" …" if len(body) > 1 else ""))
        out.append(text)
    elif any(isinstance(m, ToolMessage) and m.content.startswith(INTERRUPTED) for m in span):
        out.append(Text("  ⏹ interrupted (no answer)", style="yellow"))
    else:
        out.append(Text("  ⏹ no answer (interrupted, or stopped by an error)", style="yellow"))
    return out


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count:,} {word}s"
