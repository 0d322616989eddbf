"""`swecli -p TASK`: run one task to completion without a person at the keyboard.

`run_headless` opens the session (`swecli.assembly`), runs the task and prints the outcome; the
printers below turn the loop's events into progress lines (text) or JSON events (stream-json).

Output formats:
- text: the final answer on stdout; progress (actions, results, warnings) on stderr.
- json: one object on stdout: result, subtype and is_error (Claude Code's), stop_reason, turns,
  tool_calls, usage (with `estimated` and `estimated_requests` when the server reported no usage and
  swecli counted locally), duration_ms and duration_api_ms (Claude Code's; `duration` in seconds is kept
  for scripts written against it), compactions, compaction_wait (seconds the loop stood still for them),
  session_id, error.
- stream-json: one JSON object per line on stdout: first `{"type": "system", "subtype": "init", ...}` (the
  session id, model, cwd, tools, MCP servers: Claude Code's shape), then one per event, the last one of
  type "result" (the json object).
Exit status: 0 when the model finished, 1 on a provider error, 2 at the iteration limit, 130 when
interrupted (Ctrl-C, as a shell reports it: the first one stops the turn as Esc does in the REPL, a
second one at once), 3 when the model finished but tool calls were refused because no one was there to
approve them (the last line says how many and how to allow them), or was stopped for asking again and
again for such calls (stop reason `denied`: the same call refused 3 times, or 5 refused in a row; see
`swecli.denials`). In text mode stdout holds only the
model's answer: why a turn ended otherwise (interrupted, the iteration limit) is said on stderr.

Input piped to stdin is attached to the task (`attach_piped`): whole up to
`context.offload_threshold_tokens`, else saved under `.swecli/tool_results/` with a head+tail preview.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO, assert_never

from swecli.collector import ON_THE_WIRE
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
from swecli.llm.retry import format_seconds
from swecli.messages import Usage
from swecli.records import datarecord
from swecli.tools.facts import facts_for, key_argument
from swecli.tools.visible import visible

if TYPE_CHECKING:
    from swecli.assembly import AgentSession
    from swecli.config import Settings
    from swecli.llm.base import CancelToken
    from swecli.permissions import Approver
    from swecli.tools.spool import FullOutput

OutputFormat = Literal["text", "json", "stream-json"]
EXIT_REFUSED = 3
"""The model finished, but tool calls were refused for want of someone to approve them (or the turn was
stopped because the model kept asking for such calls: stop reason `denied`)."""
EXIT_INTERRUPTED = 130
"""128 + SIGINT, as a shell reports a command stopped by Ctrl-C."""
EXIT_CODES = {"done": 0, "output_limit": 0, "refused": 0, "empty": 0, "error": 1, "iteration_limit": 2,
              "interrupted": EXIT_INTERRUPTED, "denied": EXIT_REFUSED}
ANSWERED = frozenset({"done", "output_limit", "refused", "empty"})
"""The model ended the turn itself (a warning on stderr explains the last three)."""
RESULT_SUBTYPES = {**dict.fromkeys(ANSWERED, "success"), "iteration_limit": "error_max_turns"}
"""Claude Code's result subtypes; anything else is `error_during_execution`."""


def event_to_dict(event: Event) -> dict[str, Any]:
    """A JSON-ready view of an event: `type` (its `kind`) plus its fields (messages and results flattened)."""
    data: dict[str, Any] = {"type": event.kind}
    for f in dataclasses.fields(event):
        if f.name == "kind":
            continue
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
        if isinstance(event, ReasoningDelta):
            if not self._in_reasoning:
                self.out.write("thinking: ")
                self._in_reasoning = True
            self.out.write(visible(event.text))
            self.out.flush()
            return
        if self._in_reasoning and not isinstance(event, ChildEvent):
            self.out.write("\n")
            self._in_reasoning = False
        line = self._child(event) if isinstance(event, ChildEvent) else progress_line(event)
        if line:
            self.out.write(visible(line) + "\n")
            self.out.flush()

    def _child(self, wrapped: ChildEvent) -> str:
        """A sub-agent's actions and warnings, indented under its task call."""
        event = wrapped.event
        if isinstance(event, ToolStarted):
            return f"    > [{wrapped.agent}] {event.call.name} {key_argument(event.call.name, event.args)}"
        if isinstance(event, Notice) and event.level != "info":
            return f"    {event.level}: [{wrapped.agent}] {event.text}"
        return ""


def progress_line(event: Event) -> str:
    """The `--output-format text` line for an event ("" for events that print nothing)."""
    match event:
        case ToolStarted():
            return f"> {event.call.name} {key_argument(event.call.name, event.args)}"
        case ToolFinished():
            mark = "x" if event.result.is_error else "."
            return f"  {mark} {event.result.summary or ('error' if event.result.is_error else 'ok')}"
        case CompactionDone():
            made = f"summary made in the background, waited {event.waited:.1f}s" if event.background \
                else f"in {event.duration:.1f}s"
            return (f"{event.strategy} ({event.trigger}): {event.tokens_before:,} -> {event.tokens_after:,} "
                    f"tokens ({-event.reduction:+.0%}) {made}")
        case BackgroundSummary():
            return "" if event.used else f"background summary {event.phase}" + (f": {event.note}" if event.note else "")
        case Notice():
            return f"{event.level}: {event.text}"
        case Waiting():
            return (f"waiting for {event.provider}: no reply for {format_seconds(event.seconds)} (swecli waits "
                    f"up to {format_seconds(event.limit)} of silence, request_timeout)")
        case (TextDelta() | ReasoningDelta() | ModelCallStarted() | ModelCallFinished() | ToolOutput()
              | MessageAppended() | HistoryReplaced() | SummarySpent() | ContextOverflow() | TurnFinished()
              | ChildEvent()):
            return ""  # the answer goes to stdout at the end; the rest is for the log
        case _:
            assert_never(event)


class StreamJsonPrinter:
    """Events as JSON lines. The init object comes first, as in Claude Code: what the session said while it
    opened (a missing bubblewrap, a trust notice) is held until `start` has written it."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.held: list[Event] | None = []

    def start(self, init: dict[str, Any]) -> None:
        self.out.write(json.dumps(init) + "\n")
        held, self.held = self.held or [], None
        for event in held:
            self(event)
        self.out.flush()

    def __call__(self, event: Event) -> None:
        if self.held is not None:
            self.held.append(event)
            return
        # The final TurnFinished is reported once, as the closing "result" object; a running command's
        # live output is for eyes (its result carries the output).
        live = event.event if isinstance(event, ChildEvent) else event
        if not isinstance(event, TurnFinished) and not isinstance(live, ToolOutput):
            self.out.write(json.dumps(event_to_dict(event)) + "\n")
            self.out.flush()


@datarecord
class Tally:
    """What a run spent and refused, from its events: the result reports it even when the turn never
    finished (a provider error, a second Ctrl-C)."""

    model_calls: int = 0
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    denials: list[dict[str, Any]] = field(default_factory=list)
    """Tool calls the policy refused (Claude Code's `permission_denials`)."""
    started: float = field(default_factory=time.monotonic)
    api_seconds: float = 0.0
    """Time spent waiting for model calls (`duration_api_ms`)."""

    def __call__(self, event: Event) -> None:
        if isinstance(event, ModelCallFinished):
            self.api_seconds += event.duration
        if isinstance(event, ModelCallStarted):
            self.model_calls += 1
        elif isinstance(event, ModelCallFinished | SummarySpent):  # summary requests are spend too
            self.usage = self.usage + event.usage
        elif isinstance(event, ToolFinished):
            self.tool_calls += 1
            if not event.approved:
                self.denials.append({"tool_name": event.call.name, "tool_use_id": event.call.id,
                                     "tool_input": event.call.args()})

    def turn(self, stop_reason: str, error: str) -> TurnFinished:
        """The turn as far as it went."""
        return TurnFinished("", self.model_calls, self.usage, time.monotonic() - self.started, stop_reason, error,
                            tool_calls=self.tool_calls)


def result_object(turn: TurnFinished | None, session_id: str, error: str = "",
                  denials: list[dict[str, Any]] | None = None, api_seconds: float = 0.0) -> dict[str, Any]:
    usage = {**turn.usage.model_dump(), "estimated": turn.usage.estimated} if turn else {}
    stop_reason = "error" if error and (turn is None or turn.stop_reason in ANSWERED) else (
        turn.stop_reason if turn else "error")
    return {
        "type": "result",
        "subtype": RESULT_SUBTYPES.get(stop_reason, "error_during_execution"),
        "is_error": stop_reason not in ANSWERED,
        "result": turn.answer if turn and not error else "",
        "stop_reason": stop_reason,
        "turns": turn.iterations if turn else 0,
        "tool_calls": turn.tool_calls if turn else 0,
        "usage": usage,
        "duration_ms": round(turn.duration * 1000) if turn else 0,
        "duration_api_ms": round(api_seconds * 1000),
        "duration": round(turn.duration, 3) if turn else 0,
        "compactions": turn.compactions if turn else 0,
        "compaction_wait": round(turn.compaction_wait, 3) if turn else 0,
        "session_id": session_id,
        "error": error or None,
        "permission_denials": denials or [],
    }


def finish(  # noqa: PLR0913 (the outcome; tests pass their own streams)
        fmt: OutputFormat, turn: TurnFinished | None, session_id: str, error: str, out: TextIO | None = None,
        err: TextIO | None = None, refused: str = "", denials: list[dict[str, Any]] | None = None,
        api_seconds: float = 0.0) -> int:
    """Print the outcome in the chosen format and return the exit status. `refused` is the closing line
    about calls refused for want of approval (their count and how to allow them), or "". The streams
    default to `sys.stdout`/`sys.stderr` as they are at the call (a default bound at import would miss a
    redirection, as the in-process test runner's)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    summary = result_object(turn, session_id, error, denials, api_seconds)
    if fmt == "json" or fmt == "stream-json":
        out.write(json.dumps(summary) + "\n")
    elif error and (turn is None or turn.stop_reason != "interrupted"):
        err.write(f"error: {error}\n")
    elif turn is not None and turn.stop_reason not in ANSWERED:
        err.write(f"swecli: {turn.answer or error}\n")  # not an answer: stdout stays empty for a script
    else:
        assert turn is not None
        if turn.answer.strip():  # an empty answer was already reported on stderr, not printed as a blank line
            # On a terminal its control characters are shown, not obeyed: a misled model's answer set the window
            # title, cleared the screen and wrote the clipboard (OSC 52) through raw escapes. A pipe gets the text.
            answer = turn.answer.rstrip()
            out.write((visible(answer) if _is_terminal(out) else answer) + "\n")
    if refused and fmt == "text":
        err.write(f"swecli: {refused}\n")
    out.flush()
    code = EXIT_CODES.get(summary["stop_reason"], 1)
    return EXIT_REFUSED if code == 0 and refused else code


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or stand-in stream
        return False


def refusal_line(tally: Tally, session: AgentSession) -> str:
    """How many calls were refused because no one could approve them, and how to allow them ("" if none
    or if refusing was the point: plan mode, or a person who answered no)."""
    policy = session.agent.policy
    if not tally.denials or policy.approver is not None or policy.mode == "plan":
        return ""
    count = len(tally.denials)
    calls = f"{count} tool call{'s were' if count > 1 else ' was'} refused"
    shown = ", ".join(f"{d['tool_name']} {key_argument(d['tool_name'], d['tool_input'])}".strip()
                      for d in tally.denials[:3]) + (", ..." if count > 3 else "")
    no_sandbox = ('without bubblewrap, commands that are not read-only need a person\'s approval even in auto mode: '
                  'install it, or set sandbox.mode = "off"')
    if policy.mode == "auto":
        why = no_sandbox if policy.unconfined_against_wishes else (
            "dangerous commands and writes to protected paths (.git/, .swecli/, .envrc, ...) never run without a "
            "person to approve them")
        return f"{calls} ({shown}): {why}; run them yourself, or in the REPL (swecli) to approve each one."
    extra = f" ({no_sandbox}.)" if policy.unconfined_against_wishes else ""
    return (f"{calls} ({shown}): it needs approval and no one was there to give it. Re-run with --mode auto to "
            f"allow changes, or in a terminal to approve each one.{extra}")


def plan_hint(session: AgentSession, turn: TurnFinished) -> str:
    if session.agent.policy.mode != "plan" or turn.stop_reason != "done":
        return ""
    return (f"swecli: plan mode changed nothing. To carry out this plan: swecli --resume {session.session_id} "
            "-p \"carry out the plan\" --mode auto\n")


def run_headless(root: Path, settings: Settings, prompt: str, output_format: OutputFormat, *, resume: str | None = None,
                 continue_latest: bool = False, piped: FullOutput | None = None) -> int:
    from swecli.assembly import explain_provider_error, open_session
    from swecli.llm.base import ProviderError
    from swecli.skills.catalog import SkillError

    printer = StreamJsonPrinter(sys.stdout) if output_format == "stream-json" else ProgressPrinter(sys.stderr)
    tally = Tally()
    listeners: list[Callable[[Event], None]] = [tally] if output_format == "json" else [printer, tally]
    listeners.append(vocabulary_after_first_request(settings.model))
    session = open_session(root, settings, approver=tty_approver(), listeners=listeners, resume=resume,
                           continue_latest=continue_latest, first_prompt=prompt, probe_later=True)
    # With no one to wait for, the one task waits for its MCP servers (ready, or failed and named).
    session.mcp_wait = settings.mcp.startup_timeout
    if isinstance(printer, StreamJsonPrinter):
        printer.start(init_event(session))
    error = ""
    try:
        if piped is not None:
            attach_piped(session, piped)
        prompt = load_named_skill(session, prompt, printing=output_format == "text")
        with interrupt_cancels(session.agent.cancel):
            turn = session.run(prompt)
    except ProviderError as exc:
        session.recorder.log.error(str(exc))
        error = explain_provider_error(settings, exc)
        turn = tally.turn("error", error)
    except SkillError as exc:  # a /skill-name whose file cannot be read: nothing was sent
        error = str(exc)
        turn = tally.turn("error", error)
    except KeyboardInterrupt:  # the second Ctrl-C: stop at once, and still report what was spent
        turn = tally.turn("interrupted", "interrupted by user")
        error = "interrupted by user"
    finally:
        refused = refusal_line(tally, session)  # before close: it may wait for the sandbox's probe, which reports
        session.close()
    if output_format == "text" and not error:
        sys.stderr.write(plan_hint(session, turn))
    return finish(output_format, turn, session.session_id, error, refused=refused, denials=tally.denials,
                  api_seconds=tally.api_seconds)


def init_event(session: AgentSession) -> dict[str, Any]:
    """stream-json's first line, in Claude Code's shape: what this run works with, before anything happens.
    MCP servers still starting are listed as such (their tools join when they are ready)."""
    from swecli import __version__

    servers = session.mcp.manager.states() if session.mcp is not None else []
    return {
        "type": "system",
        "subtype": "init",
        "session_id": session.session_id,
        "model": session.settings.model,
        "provider": session.settings.provider,
        "cwd": str(session.root),
        "tools": session.agent.tools.names(),
        "mcp_servers": [{"name": s.name, "status": s.status} for s in servers],
        "permission_mode": session.settings.mode,
        "swecli_version": __version__,
    }


def vocabulary_after_first_request(model: str) -> Callable[[Event], None]:
    """A listener that lets the tokenizer's vocabulary load while a request is in flight (-p and the REPL):
    until then counts are estimated (`swecli.context.tokens.prefetch`), so loading never holds a request
    or the person's typing, and a run whose model answers at once never waits at exit for a load it did
    not need. The first request's start also switches the cyclic collector back on (`entry` switched it
    off for start-up), after freezing what start-up built: later passes skip those objects."""
    from swecli.context.tokens import encoding_for_model, prefetch

    in_flight = threading.Event()
    prefetch(encoding_for_model(model), in_flight, delay=ON_THE_WIRE)

    def listener(event: Event) -> None:
        if isinstance(event, ModelCallStarted):
            if not gc.isenabled():
                gc.freeze()
                gc.enable()
            in_flight.set()
        elif isinstance(event, ModelCallFinished):
            in_flight.clear()

    return listener


@contextlib.contextmanager
def interrupt_cancels(cancel: CancelToken) -> Iterator[None]:
    """Ctrl-C stops the turn the way Esc does in the REPL (the loop ends it cleanly, so what was spent is
    reported); a second Ctrl-C raises KeyboardInterrupt as usual."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        if cancel.cancelled:
            raise KeyboardInterrupt
        cancel.cancel()
        sys.stderr.write("\nswecli: interrupting (press Ctrl-C again to stop at once)\n")

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def load_named_skill(session: AgentSession, prompt: str, printing: bool) -> str:
    """`swecli -p "/skill-name [request]"`, as in the REPL: the skill's instructions go into the history,
    and the request (or "Use the <name> skill.") is the task. Any other prompt is returned as it is."""
    from swecli.skills.catalog import SkillError
    from swecli.skills.loading import skill_command

    name, _, request = prompt.strip().partition(" ")
    skill = session.skills.get(name) if name.startswith("/") and session.skills else None
    if skill is None:
        return prompt
    try:
        message, task = skill_command(skill, session.root, request)
    except SkillError as exc:
        raise SkillError(f"/{skill.name}: {exc}") from None
    session.agent.append(message)
    if printing:
        sys.stderr.write(f"📘 loaded skill {skill.name} ({skill.path})\n")
    return task


def attach_piped(session: AgentSession, piped: FullOutput) -> None:
    """Input piped to stdin goes into the history before the task, as context the task refers to: whole
    when it fits `context.offload_threshold_tokens` and half the room the window leaves (a 4,096-token local
    server has far less than 8,000 to spare), else saved under `.swecli/tool_results/` with a head+tail
    preview sized to the room and the path (nothing piped in is lost; the model reads the file in pieces)."""
    from swecli.context.offload import EXACT_COUNT_BYTES, offload_full
    from swecli.messages import UserMessage

    config = session.settings.context
    context = session.agent.context
    count = context.counter.text
    text = piped.text(EXACT_COUNT_BYTES)
    size = f"{piped.lines:,} line{'s' if piped.lines != 1 else ''}, {piped.size:,} bytes"
    state = context.state(session.agent.history)
    room = context.calibration.to_local(max(0, state.budget.hard_limit - state.total))
    limit = max(1, min(config.offload_threshold_tokens, room // 2))
    if text is not None and count(text) <= limit:
        content = f"Input piped to swecli on stdin ({size}):\n<stdin>\n{text.rstrip()}\n</stdin>"
        note = f"attached the input piped to stdin ({size})"
    else:
        lines = preview_lines(piped, config.offload_preview_lines, room // 4, count)
        saved = offload_full(session.root, f"stdin-{session.session_id}", "stdin", "", piped, count, limit, lines,
                             max_lines=0)
        content = f"Input piped to swecli on stdin, too large to include whole ({size}):\n{saved.content}"
        why = "" if limit == config.offload_threshold_tokens else \
            f", half of what the {context.window:,}-token context window leaves"
        note = (f"the input piped to stdin is {size}, over the {limit:,}-token limit{why}: the model gets its first "
                f"and last lines, and the whole of it is in {saved.path}")
    session.agent.append(UserMessage(content=content, kind="context"))
    session.bus(Notice("info", note))


PREVIEW_OVERHEAD = 200
"""Tokens of a saved input's preview that are not its lines (the header, the note on the lines left out)."""


def preview_lines(piped: FullOutput, most: int, budget: int, count: Callable[[str], int]) -> int:
    """The most preview lines (head and tail, up to `most`) whose text fits `budget` tokens; at least 2."""
    from swecli.context.offload import PREVIEW_LINE_CHARS

    lines = most
    while lines > 2:
        head = piped.head_lines((lines + 1) // 2)
        tail = piped.tail_lines(lines // 2)
        if sum(count(line[:PREVIEW_LINE_CHARS]) + 1 for line in head + tail) + PREVIEW_OVERHEAD <= budget:
            break
        lines //= 2
    return max(2, lines)


def tty_approver() -> Approver | None:
    """Ask on the terminal when there is one; None (refuse, never block) when there is not."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None
    from swecli.permissions import ApprovalRequest, Decision

    def ask(request: ApprovalRequest) -> Decision:
        # The progress line above names a short one-line command in full already: do not print it twice.
        name, args = request.call.name, request.args
        if not (facts_for(name).is_shell and key_argument(name, args) == args.get("command")):
            sys.stderr.write(f"\n{request.call.name} wants to run:\n{request.preview}\n")
        for warning in (request.danger, request.note):
            if warning:
                sys.stderr.write(f"warning: {warning}\n")
        question = "Allow? [y]es / [n]o: " if request.danger else "Allow? [y]es / [n]o / [a]lways this session: "
        answer = input(question).strip().lower()
        while request.danger and answer.startswith("a"):  # a flagged command is never allowed "always"
            answer = input(question).strip().lower()
        if answer.startswith("a"):
            return Decision("always")
        if answer.startswith("y"):
            return Decision("yes")
        return Decision("no", answer[1:].strip(" :-") if answer.startswith("n") else answer)

    return ask
