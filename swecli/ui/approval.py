"""Approvals in the REPL: the agent asks on its worker thread, the person answers on the main thread.

The agent's `Policy` calls the approver from the worker thread that runs the loop. Only the main
thread may touch the terminal (it owns the key watcher and the live region), so `ApprovalBridge`
queues the request and blocks the worker until the main thread has asked and answered it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import field
from typing import Literal

from rich.console import Console
from rich.text import Text

from swecli.permissions import ApprovalRequest, Decision
from swecli.records import datarecord
from swecli.tools.facts import facts_for
from swecli.ui.keys import CTRL_C, ENTER, ESC, TypeAhead
from swecli.ui.render import approval_preview

QUESTION = "Allow? [y]es / [n]o / [a]lways this session"
QUESTION_DANGEROUS = "Allow? [y]es / [n]o"
REASON_PROMPT = "  Reason for the model (optional, Enter to skip): "
ANSWERS: dict[str, Literal["yes", "no", "always"]] = {"y": "yes", "n": "no", "a": "always"}


@datarecord
class PendingApproval:
    """A question waiting for the person, answered from the prompt's thread."""

    request: ApprovalRequest
    decision: Decision | None = None
    _done: threading.Event = field(default_factory=threading.Event)

    def answer(self, decision: Decision) -> None:
        self.decision = decision
        self._done.set()

    def wait(self) -> Decision:
        self._done.wait()
        assert self.decision is not None
        return self.decision


class ApprovalBridge:
    """The `Approver` handed to the agent: thread-safe, answered by whoever calls `next()`."""

    def __init__(self) -> None:
        self._queue: queue.Queue[PendingApproval] = queue.Queue()
        self._closed = False

    def __call__(self, request: ApprovalRequest) -> Decision:
        if self._closed:
            return Decision("no", "swecli is shutting down")
        pending = PendingApproval(request)
        self._queue.put(pending)
        return pending.wait()

    def next(self, timeout: float = 0.0) -> PendingApproval | None:
        """The oldest unanswered request, waiting up to `timeout` seconds for one."""
        try:
            return self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get_nowait()
        except queue.Empty:
            return None

    def close(self) -> None:
        """Decline whatever is still waiting, and everything asked from now on."""
        self._closed = True
        while (pending := self.next()) is not None:
            pending.answer(Decision("no", "swecli is shutting down"))


@datarecord
class Answer:
    """The person's answer, and whether it also stops the turn."""

    decision: Decision
    interrupt: bool = False
    """Esc or Ctrl-C at the prompt: decline and stop the turn."""


def ask(request: ApprovalRequest, console: Console, read_key: Callable[[], str | None],
        read_line: Callable[[str], str], typed: TypeAhead | None = None) -> Answer:
    """Show what the call will do, ask `Allow?`, and for a no, ask for an optional reason.

    `read_key` returns the next key (blocking); `read_line` reads a line with normal editing. Keys that
    are no answer go to `typed`, the messages typed for after the turn: a message begun at the question
    takes every key (y, n and a too) until Enter queues it, then `Allow?` waits again.
    """
    question = Text((QUESTION_DANGEROUS if request.danger else QUESTION) + " ", style="bold")
    console.print(approval_preview(request))
    console.print(question, end="")
    offered = "yn" if request.danger else "yna"  # a flagged command is allowed once at a time, never "always"
    composing = False
    read_key = _one_at_a_time(read_key)
    while True:
        key = read_key()
        if key in (ESC, CTRL_C):
            console.print(Text("no (interrupted)", style="yellow"))
            return Answer(Decision("no", "the user interrupted"), interrupt=True)
        letter = (key or "").strip().lower()[:1]
        if not composing and letter == "a" and letter not in offered:
            continue  # "always" is not offered for a flagged command: the key does nothing
        verdict = ANSWERS.get(letter) if letter and letter in offered else None
        if typed is not None and key and (composing or (verdict is None and key != ENTER)):
            composing = _type_ahead(typed, key, console, question)
            continue
        if verdict is not None:
            break
    console.print(Text(verdict, style="green" if verdict != "no" else "yellow"))
    if verdict == "no":
        return Answer(Decision("no", _reason(read_line)))
    if verdict == "always" and not request.danger:
        shell = facts_for(request.call.name).is_shell
        scope = f"the command `{request.args.get('command', '')}`" if shell else request.call.name
        console.print(Text(f"  Allowed for the rest of this session: {scope}", style="dim"))
    return Answer(Decision(verdict))


def _one_at_a_time(read_key: Callable[[], str | None]) -> Callable[[], str | None]:
    """`read_key`, but text read in one chunk comes back a character at a time: keys typed quickly (or on a
    busy machine) arrive together, and `a` then `n` for a flagged command, which offers no "always", must
    still answer no rather than be dropped as one key beginning with `a`. Named keys (Esc, Enter, Ctrl-C) and
    escape sequences ("") stay whole."""
    pending: list[str] = []

    def next_key() -> str | None:
        if not pending:
            key = read_key()
            if key is None or key in (ESC, CTRL_C, ENTER) or len(key) <= 1:
                return key
            pending.extend(key)
        return pending.pop(0)

    return next_key


def _type_ahead(typed: TypeAhead, key: str, console: Console, question: Text) -> bool:
    """A key of a message typed while `Allow?` waits, echoed after the question; Enter queues the line
    (sent after the turn, as anything typed while the agent works) and asks again. Returns whether a
    message is still being typed."""
    before = len(typed.queued)
    typed.feed(key)
    if len(typed.queued) > before or "\r" in key or "\n" in key:
        console.print()
        if len(typed.queued) > before:
            console.print(Text(f"  ⏎ queued: {typed.queued[-1]}", style="cyan"))
        console.print(question, end="")
        return False
    if key in ("\x7f", "\x08"):
        console.file.write("\b \b")
        console.file.flush()
    else:
        console.print(Text("".join(c for c in key if c.isprintable())), end="")
    return True


def _reason(read_line: Callable[[str], str]) -> str:
    try:
        return read_line(REASON_PROMPT).strip()
    except (EOFError, KeyboardInterrupt):
        return ""
