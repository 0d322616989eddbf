"""The digests a fold at the hard limit would write, made ahead on a worker thread.

When the prompt reaches the hard limit before the background summary is ready, `Compactor.fold` replaces
every tool output older than the newest zone with a one-line digest naming a file that holds it. Made
there and then, that is one file written (secrets masked, atomically) and one digest counted per output:
75 outputs at a 128k window, a quarter of a second of the loop's CPU at the very step the user would
otherwise not wait at all. So while a summary is on its way (the only time a fold can happen), each output
that leaves the newest zone is handed to one worker thread as it does: the worker saves it and builds its
digest, and the fold then only swaps messages. An output the worker has not reached (or one from the
newer zone that a fold reaches when it must halve the zone) is folded on the spot, as before.

The digests are keyed on the message object (messages are frozen, `IdentityCache`): a digest made for an
output is the digest of that very text. What the worker writes is what the fold would have written: the
same `.swecli/tool_results/` file, under the same name; an output saved ahead but never folded (the
summary came first) keeps its file, as an offloaded output does.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from swecli.context.decay import Candidate, ReferenceFor, fold
from swecli.context.tokens import IdentityCache, TokenCounter
from swecli.messages import ToolMessage


class FoldsAhead:
    """Digests made ahead for the outputs a fold would replace (`made`), by one worker thread."""

    def __init__(self, counter: TokenCounter, reference_for: ReferenceFor) -> None:
        self.counter = counter
        self.reference_for = reference_for
        self._made = IdentityCache[ToolMessage]()
        self._queued = IdentityCache[bool]()
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, candidates: Sequence[Candidate]) -> int:
        """Queue the candidates not queued yet (each output is looked at once); returns how many were."""
        fresh = [c for c in candidates if self._queued.get(c.message) is None]
        if not fresh:
            return 0
        with self._lock:
            if self._closed:
                return 0
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="swecli-fold")
            for candidate in fresh:
                self._queued.put(candidate.message, True)
                self._pool.submit(self._make, candidate)
        return len(fresh)

    def made(self, message: ToolMessage) -> ToolMessage | None:
        """The digest made ahead for `message`, if the worker has made it."""
        return self._made.get(message)

    def close(self) -> None:
        """Stop taking work; what is queued is dropped (a fold makes what it needs on the spot)."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _make(self, candidate: Candidate) -> None:
        digest = fold(candidate.message, candidate.call, self.reference_for(candidate.message), self.counter)
        self.counter.message(digest)  # counted here, so the fold's own count is a cache hit
        self._made.put(candidate.message, digest)
