"""What the context engine talks to besides the requests it builds, given whole to its constructor.

`Wiring` gathers the session's parts the engine calls out to: where its events go, the loop's cancel
token, the provider a background summary uses, the library PreCompact hook, where compactions save what
they remove, what they keep verbatim besides the prompts (loaded skills), the todo list the recitation
reads and the token counter (shared with whoever budgeted the memory block). `Reporter` sends events and
notices on (to the log when nobody listens).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from swecli.events import Event, Notice
from swecli.records import datarecord

if TYPE_CHECKING:  # annotations only: the compaction stack is imported at the first compaction
    from swecli.context.archive import Archive
    from swecli.context.compaction_params import Pin
    from swecli.context.hooks import PreCompactCallback
    from swecli.context.todo import TodoState
    from swecli.context.tokens import TokenCounter
    from swecli.llm.base import CancelToken, Provider

log = logging.getLogger(__name__)


@datarecord(frozen=True)
class Wiring:
    """How the context engine reaches the rest of the session (events, cancel, the summary's provider)."""

    on_event: Callable[[Event], None] | None = None
    cancel: CancelToken | None = None
    """The loop's cancel token: Esc during a summary request falls back to truncation at once."""
    summary_provider: Callable[[], Provider] | None = None
    """Makes the background summary's own provider (its own HTTP client), closed after use. None: the
    loop's provider is used from the summary's thread (httpx clients may be shared between threads)."""
    pre_compact: PreCompactCallback | None = None
    """Library PreCompact hook, run after the configured command."""
    archive: Archive | None = None
    """Where compaction saves what it removes; a fresh `DiskArchive(root)` per compaction when None."""
    pin: Pin | None = None
    """Messages compaction keeps verbatim besides the prompts (loaded skills), see `compaction.Pin`."""
    todo: TodoState | None = None
    """The todo list the recitation shows (shared with the todo tool)."""
    counter: TokenCounter | None = None
    """The token counter to use (one for the model is made when None)."""


@datarecord
class Reporter:
    """Emits the engine's events to whoever listens (nobody in a bare engine)."""

    on_event: Callable[[Event], None] | None = None

    def emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def notice(self, level: str, text: str) -> None:
        if self.on_event is not None:
            self.on_event(Notice(level, text))
        else:
            log.warning("%s", text)
