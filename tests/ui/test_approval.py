"""Approvals: asked on the agent's worker thread, answered on the main thread."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable

from rich.console import Console

from swecli.messages import ToolCall
from swecli.permissions import ApprovalRequest, Decision
from swecli.ui.approval import QUESTION, ApprovalBridge, ask
from swecli.ui.keys import ESC, TypeAhead

BASH = ApprovalRequest(ToolCall(id="c1", name="bash", arguments="{}"), {"command": "make test"}, "make test")
EDIT = ApprovalRequest(ToolCall(id="c2", name="edit_file", arguments="{}"), {"path": "a.py"},
                       "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n")


def console() -> Console:
    return Console(file=io.StringIO(), width=80, color_system=None, force_terminal=False, highlight=False)


def printed(c: Console) -> str:
    assert isinstance(c.file, io.StringIO)
    return "\n".join(line.rstrip() for line in c.file.getvalue().splitlines())


def keys(*sequence: str) -> Callable[[], str | None]:
    pending = list(sequence)
    return lambda: pending.pop(0)


def no_line(prompt: str) -> str:
    raise AssertionError("no reason should be asked for")


def test_the_bridge_hands_the_request_to_the_answering_thread() -> None:
    bridge = ApprovalBridge()
    decisions: list[Decision] = []
    worker = threading.Thread(target=lambda: decisions.append(bridge(BASH)))
    worker.start()
    pending = bridge.next(timeout=10)
    assert pending is not None and pending.request is BASH
    assert worker.is_alive()  # blocked until answered
    pending.answer(Decision("always"))
    worker.join(10)
    assert decisions == [Decision("always")]


def test_closing_the_bridge_declines_waiting_and_later_requests() -> None:
    bridge = ApprovalBridge()
    decisions: list[Decision] = []
    worker = threading.Thread(target=lambda: decisions.append(bridge(BASH)))
    worker.start()
    while bridge._queue.empty():
        worker.join(0.01)
    bridge.close()
    worker.join(10)
    assert decisions[0].verdict == "no"
    assert bridge(EDIT).verdict == "no"


def test_yes_after_other_keys_and_the_command_is_not_repeated() -> None:
    c = console()
    answer = ask(BASH, c, keys("x", "", "y"), no_line)  # other keys are ignored until a valid answer
    assert answer.decision == Decision("yes") and not answer.interrupt
    assert printed(c) == f"{QUESTION} yes"  # the action line above showed the command; not repeated


def test_no_asks_for_an_optional_reason() -> None:
    c = console()
    answer = ask(EDIT, c, keys("N"), lambda prompt: "  use the helper instead ")
    assert answer.decision == Decision("no", "use the helper instead")
    empty = ask(EDIT, console(), keys("n"), lambda prompt: "")
    assert empty.decision == Decision("no", "")


def test_always_names_its_scope() -> None:
    c = console()
    assert ask(BASH, c, keys("a"), no_line).decision == Decision("always")
    assert printed(c).endswith("Allowed for the rest of this session: the command `make test`")
    c = console()
    ask(EDIT, c, keys("a"), no_line)
    assert printed(c).endswith("Allowed for the rest of this session: edit_file")


def test_escape_declines_and_interrupts() -> None:
    answer = ask(BASH, console(), keys(ESC), no_line)
    assert answer.interrupt and answer.decision.verdict == "no"


def test_dangerous_commands_do_not_offer_always() -> None:
    danger = ApprovalRequest(BASH.call, {"command": "rm -rf /"}, "rm -rf /", danger="deletes the root")
    c = console()
    answer = ask(danger, c, keys("a", "y"), no_line)  # `a` is not an answer here: it waits for y or n
    assert answer.decision == Decision("yes")
    assert printed(c).endswith("Allow? [y]es / [n]o yes")
    assert "always" not in printed(c) and "Allowed for the rest" not in printed(c)


def test_keys_read_together_are_answered_one_at_a_time() -> None:
    # A busy machine hands `a` and `n` over in one read: for a flagged command `a` does nothing, `n` says no.
    danger = ApprovalRequest(BASH.call, {"command": "rm -rf /"}, "rm -rf /", danger="deletes the root")
    c = console()
    answer = ask(danger, c, keys("an"), lambda prompt: "not that")
    assert answer.decision == Decision("no", "not that")
    assert printed(c).endswith("Allow? [y]es / [n]o no")


def test_a_message_typed_in_one_chunk_at_the_question_is_queued_whole() -> None:
    typed = TypeAhead()
    answer = ask(BASH, console(), keys("hello\r", "y"), no_line, typed)
    assert answer.decision == Decision("yes")
    assert typed.queued == ["hello"]
