"""Whether the user's input for a turn can fit the model's window at all.

Compaction makes room by summarizing or dropping *older* history; it cannot make the turn's own input
smaller without the model answering about text it never saw (a 10,000-token task clipped to its first
200 tokens, piped text truncated away). So a turn whose input (the task, and what was attached to it
for this turn: piped stdin, `@path` files, a loaded skill) does not fit the window together with the
system prompt, the tool schemas and the smallest useful reply is refused before anything is sent,
with both sizes and what to do instead: Claude Code answers "Prompt is too long" the same way. Piped
input never gets here whole when it is too large for the window: `-p` saves it to a file and the model
reads it in pieces (`swecli.ui.headless.attach_piped`).
"""

from __future__ import annotations

from collections.abc import Sequence

from swecli.context.budget import MIN_REPLY
from swecli.context.manager import ContextManager
from swecli.llm.base import ContextOverflowError
from swecli.messages import Message, UserMessage


class InputTooLarge(ContextOverflowError):
    """The turn's input cannot fit the window: nothing was sent, and compacting would not help."""


def pending_input(history: Sequence[Message]) -> int:
    """Where the trailing run of user messages starts (the input waiting for the turn's first reply)."""
    start = len(history)
    while start > 0 and isinstance(history[start - 1], UserMessage):
        start -= 1
    return start


def input_too_large(context: ContextManager, history: Sequence[Message],
                    message: UserMessage | None = None) -> InputTooLarge | None:
    """The error to report when the pending input of `history` (plus `message`, the task about to be
    added) cannot fit `context.window`; None when it can."""
    pending = [*history[pending_input(history):], *([message] if message is not None else [])]
    if not pending:
        return None
    state = context.state([])
    fixed = state.system + state.tools + state.memory
    size = context.calibration.apply(sum(context.counter.message(m) for m in pending))
    reply = max(1, min(MIN_REPLY, context.budget.reserve // 4))
    if fixed + size + reply <= context.window:
        return None
    attached = any(isinstance(m, UserMessage) and m.kind != "prompt" for m in pending)
    what = "the task and the input attached to it are" if attached else "the task is"
    return InputTooLarge(
        f"{what} ~{size:,} tokens: with swecli's system prompt and tool schemas (~{fixed:,}) and room for a reply "
        f"it does not fit the model's {context.window:,}-token context window ({context.window_source}). "
        "Shorten it; or save the text to a file and ask about the file (the model reads a "
        "file in pieces), or pipe it: cat FILE | swecli -p \"what to do with it\" (piped input too large for the "
        "window is saved to a file the model reads in pieces); or give the model a larger window.")
