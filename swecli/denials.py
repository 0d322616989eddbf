"""When no one can approve a tool call, a model that keeps asking for refused calls is stopped.

In `-p` without a terminal (or a REPL's sub-agent) a refused call is answered with an error the model
reads; a capable model then does something else, but a small local model often repeats the same call
until `max_iterations` (200 by default: hours on a local server, and nothing gained). The turn ends
instead when
- the same call (tool and arguments) was refused `SAME_CALL_LIMIT` times in the turn, or
- `STREAK_LIMIT` calls in a row were refused (any calls: nothing else was done in between),
with a sentence saying why; `-p` reports it as stop reason `denied` and exits 3, the exit status of
calls refused for want of approval. A person who answers "no" is not second-guessed: with an
approver, nothing is watched (the person can interrupt).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import field

from swecli.messages import ToolCall
from swecli.records import datarecord

SAME_CALL_LIMIT = 3
STREAK_LIMIT = 5


@datarecord
class DenialWatch:
    """Refused calls of the current turn (`reset` at its start)."""

    refused: Counter[str] = field(default_factory=Counter)
    streak: int = 0

    def reset(self) -> None:
        self.refused.clear()
        self.streak = 0

    def saw(self, call: ToolCall, approved: bool) -> str:
        """Record one call; the reason to stop the turn now, or ""."""
        if approved:
            self.streak = 0
            return ""
        self.streak += 1
        key = f"{call.name} {_canonical(call.arguments)}"
        self.refused[key] += 1
        if self.refused[key] >= SAME_CALL_LIMIT:
            return (f"stopped: the model asked {self.refused[key]} times for the same {call.name} call, and it was "
                    "refused each time because no one was there to approve it")
        if self.streak >= STREAK_LIMIT:
            return (f"stopped: the model's last {self.streak} tool calls were all refused because no one was there "
                    "to approve them")
        return ""


def _canonical(arguments: str) -> str:
    """The same arguments in another key order or spacing are the same call."""
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return arguments.strip()
