"""The ledger: what the context engine needs to know about a history, kept up to date in O(appended).

Between two rewrites (compaction, decay, /clear) the loop only appends to its history. The ledger
keeps, for the history it last saw: the running token total after each message (so any span's
tokens, the current turn's and the newest zone's start are a subtraction or a bisection away), and
where the user prompts and the assistant messages are. `sync(history)` checks that `history` still
starts with what the ledger holds (one identity comparison per message, done in C by list equality)
and reads only the new messages; after a rewrite it starts over, from counts the `TokenCounter` has
cached per message. `generation` changes at every such restart, so the mechanisms that keep their own
incremental state (decay's scan) know when to start over too.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence

from swecli.messages import AssistantMessage, Message, ToolMessage, UserMessage


class Ledger:
    def __init__(self, count: Callable[[Message], int]) -> None:
        self._count = count
        self.messages: list[Message] = []
        self.cumulative: list[int] = [0]
        """cumulative[i]: tokens of messages[:i]."""
        self.prompts: list[int] = []
        """Indices of the user prompts (`UserMessage.kind == "prompt"`)."""
        self.assistants: list[int] = []
        """Indices of the assistant messages."""
        self.generation = 0

    def sync(self, history: Sequence[Message]) -> Ledger:
        """Bring the ledger up to `history` and return it."""
        held = len(self.messages)
        if not self._extends(history, held):
            self._restart()
            held = 0
        for index in range(held, len(history)):
            self._add(index, history[index])
        return self

    def _extends(self, history: Sequence[Message], held: int) -> bool:
        if len(history) < held:
            return False
        if held == 0:
            return True
        if history[held - 1] is not self.messages[held - 1]:
            return False
        head = history[:held]
        # List equality compares identical elements without calling their __eq__: a C loop.
        return (head if isinstance(head, list) else list(head)) == self.messages

    def _restart(self) -> None:
        self.messages, self.cumulative, self.prompts, self.assistants = [], [0], [], []
        self.generation += 1

    def _add(self, index: int, msg: Message) -> None:
        self.messages.append(msg)
        self.cumulative.append(self.cumulative[-1] + self._count(msg))
        if isinstance(msg, AssistantMessage):
            self.assistants.append(index)
        elif isinstance(msg, UserMessage) and msg.kind == "prompt":
            self.prompts.append(index)

    # --- questions, about the history last synced ------------------------------------------------

    def __len__(self) -> int:
        return len(self.messages)

    def tokens(self, start: int = 0, end: int | None = None) -> int:
        """Local tokens of messages[start:end]."""
        stop = len(self.messages) if end is None else end
        return self.cumulative[stop] - self.cumulative[start]

    def turn_start(self) -> int:
        """Index of the last user prompt (0 when there is none): the current turn runs from there."""
        return self.prompts[-1] if self.prompts else 0

    def assistants_after(self, index: int) -> int:
        """How many assistant messages come after position `index`."""
        return len(self.assistants) - bisect.bisect_right(self.assistants, index)

    def caller_of(self, index: int) -> int:
        """Index of the assistant message before position `index` (-1 if none): for a tool result, the
        message that made its call."""
        position = bisect.bisect_left(self.assistants, index) - 1
        return self.assistants[position] if position >= 0 else -1

    def zone_start(self, keep_tokens: int) -> int:
        """Where the newest `keep_tokens` of the history begin: the newest messages within the budget,
        widened back to the assistant message whose results they would otherwise split, and never
        after the latest assistant message (the model has not seen that step's results yet)."""
        total = len(self.messages)
        start = bisect.bisect_left(self.cumulative, self.cumulative[-1] - keep_tokens, 0, total + 1)
        while 0 < start < total and isinstance(self.messages[start], ToolMessage):
            start -= 1
        return min(start, self.assistants[-1]) if self.assistants else start
