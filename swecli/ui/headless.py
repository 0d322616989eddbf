"""`swecli -p TASK`: run one task to completion without a person at the keyboard.

`run_headless` opens the session (`swecli.assembly`), runs the task and prints the outcome; the
printers below turn the loop's events into progress lines (text) or JSON events (stream-json).

Output formats:
- text: the final answer on stdout; progress (actions, results, warnings) on stderr.
- json: one object on stdout: result, stop_reason, turns, tool_calls, usage (with `estimated` and
  `estimated_requests` when the server reported no usage and swecli counted locally), compactions,
  compaction_wait (seconds the loop stood still for them), session_id, error.
- stream-json: one JSON object per event on stdout, the last one of type "result".
Exit status: 0 when the model finished, 1 on a provider error, 2 at the iteration limit or when
interrupted.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from swecli.events import (
    BackgroundSummary,
    ChildEvent,
    CompactionDone,
    Event,
    Notice,
    ReasoningDelta,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    Waiting,
)
from swecli.llm.retry import format_seconds
from swecli.ui.render import key_argument

if TYPE_CHECKING:
    from swecli.config import Settings
    from swecli.permissions import Approver

OutputFormat = Literal["text", "json", "stream-json"]
EXIT_CODES = {"done": 0, "output_limit": 0, "refused": 0, "empty": 0, "error": 1, "iteration_limit": 2,
              "interrupted": 2}
ANSWERED = frozenset({"done", "output_limit", "refused", "empty"})
"""The model ended the turn itself (a warning on stderr explains the last three)."""


def event_to_dict(event: Event) -> dict[str, Any]:
    """A JSON-ready view of an event: `type` plus its fields (messages and results flattened)."""
    name = type(event).__name__
    kind = "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
    data: dict[str, Any] = {"type": kind}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        data[f.name] = event_to_dict(value) if isinstance(event, ChildEvent) and f.name == "event" else \
            _jsonable(value)
    return data


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


class ProgressPrinter:
    """Plain progress lines for `--output-format text` (stderr), readable in CI logs."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._in_reasoning = False

    def __call__(self, event: Event) -> None:
        if isinstance(event, ChildEvent):
            self._child(event)
            return
        if isinstance(event, ReasoningDelta):
            if not self._in_reasoning:
                self.out.write("thinking: ")
                self._in_reasoning = True
            self.out.write(event.text)
            self.out.flush()
            return
        if self._in_reasoning and not isinstance(event, ReasoningDelta):
            self.out.write("\n")
            self._in_reasoning = False
        if isinstance(event, ToolStarted):
            self.out.write(f"> {event.call.name} {key_argument(event.call.name, event.args)}\n")
        elif isinstance(event, ToolFinished):
            mark = "x" if event.result.is_error else "."
            self.out.write(f"  {mark} {event.result.summary or ('error' if event.result.is_error else 'ok')}\n")
        elif isinstance(event, CompactionDone):
            made = f"summary made in the background, waited {event.waited:.1f}s" if event.background \
                else f"in {event.duration:.1f}s"
            self.out.write(f"{event.strategy} ({event.trigger}): {event.tokens_before:,} -> {event.tokens_after:,} "
                           f"tokens ({-event.reduction:+.0%}) {made}\n")
        elif isinstance(event, BackgroundSummary) and not event.used:
            self.out.write(f"background summary {event.phase}" + (f": {event.note}" if event.note else "") + "\n")
        elif isinstance(event, Notice):
            self.out.write(f"{event.level}: {event.text}\n")
        elif isinstance(event, Waiting):
            self.out.write(f"waiting for {event.provider}: no reply for {format_seconds(event.seconds)} (swecli waits "
                           f"up to {format_seconds(event.limit)} of silence, request_timeout)\n")
        self.out.flush()

    def _child(self, wrapped: ChildEvent) -> None:
        """A sub-agent's actions, indented under its task call."""
        event = wrapped.event
        if isinstance(event, ToolStarted):
            self.out.write(f"    > [{wrapped.agent}] {event.call.name} {key_argument(event.call.name, event.args)}\n")
        elif isinstance(event, Notice) and event.level != "info":
            self.out.write(f"    {event.level}: [{wrapped.agent}] {event.text}\n")
        self.out.flush()


class StreamJsonPrinter:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, event: Event) -> None:
        # The final TurnFinished is reported once, as the closing "result" object.
        if not isinstance(event, TurnFinished):
            self.out.write(json.dumps(event_to_dict(event)) + "\n")
            self.out.flush()


def result_object(turn: TurnFinished | None, session_id: str, error: str = "") -> dict[str, Any]:
    usage = {**turn.usage.model_dump(), "estimated": turn.usage.estimated} if turn else {}
    return {
        "type": "result",
        "result": turn.answer if turn and not error else "",
        "stop_reason": "error" if error else (turn.stop_reason if turn else "error"),
        "turns": turn.iterations if turn else 0,
        "tool_calls": turn.tool_calls if turn else 0,
        "usage": usage,
        "duration": round(turn.duration, 3) if turn else 0,
        "compactions": turn.compactions if turn else 0,
        "compaction_wait": round(turn.compaction_wait, 3) if turn else 0,
        "session_id": session_id,
        "error": error or None,
    }


def finish(fmt: OutputFormat, turn: TurnFinished | None, session_id: str, error: str,
           out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Print the outcome in the chosen format and return the exit status."""
    summary = result_object(turn, session_id, error)
    if fmt == "json" or fmt == "stream-json":
        out.write(json.dumps(summary) + "\n")
    elif error:
        err.write(f"error: {error}\n")
    else:
        assert turn is not None
        if turn.answer.strip():  # an empty answer was already reported on stderr, not printed as a blank line
            out.write(turn.answer.rstrip() + "\n")
        if turn.stop_reason not in ANSWERED:
            err.write(f"swecli: {turn.answer}\n")
    out.flush()
    return EXIT_CODES.get(summary["stop_reason"], 1)


def run_headless(root: Path, settings: Settings, prompt: str, output_format: OutputFormat, *, resume: str | None = None,
                 continue_latest: bool = False) -> int:
    from swecli.assembly import open_session
    from swecli.llm.base import ProviderError

    printer = StreamJsonPrinter(sys.stdout) if output_format == "stream-json" else ProgressPrinter(sys.stderr)
    listeners: list[Callable[[Event], None]] = [] if output_format == "json" else [printer]
    session = open_session(root, settings, approver=tty_approver(), listeners=listeners, resume=resume,
                           continue_latest=continue_latest, first_prompt=prompt)
    try:
        turn = session.run(prompt)
    except ProviderError as exc:
        session.recorder.log.error(str(exc))
        return finish(output_format, None, session.session_id, str(exc))
    except KeyboardInterrupt:
        return finish(output_format, None, session.session_id, "interrupted by user")
    finally:
        session.close()
    return finish(output_format, turn, session.session_id, "")


def tty_approver() -> Approver | None:
    """Ask on the terminal when there is one; None (refuse, never block) when there is not."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None
    from swecli.permissions import ApprovalRequest, Decision

    def ask(request: ApprovalRequest) -> Decision:
        sys.stderr.write(f"\n{request.call.name} wants to run:\n{request.preview}\n")
        for warning in (request.danger, request.note):
            if warning:
                sys.stderr.write(f"warning: {warning}\n")
        answer = input("Allow? [y]es / [n]o / [a]lways this session: ").strip().lower()
        if answer.startswith("a"):
            return Decision("always")
        if answer.startswith("y"):
            return Decision("yes")
        return Decision("no", answer[1:].strip(" :-") if answer.startswith("n") else answer)

    return ask
