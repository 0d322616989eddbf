"""The digests a fold at the hard limit would write, made ahead on a worker thread.

When the prompt reaches the hard limit before the background summary is ready, `Compactor.fold` replaces
every tool output older than the newest zone with a one-line digest naming a file that holds it. Made
there and then, that is one file written (secrets masked, atomically) and one digest counted per output:
75 outputs at a 128k window, a quarter of a second of the loop's CPU at the very step the user would
otherwise not wait at all. So while a summary is on its way (the only time a fold can happen), each output
that leaves the newest zone is handed to one worker thread as it does: the worker writes its bytes to a
staging folder (`offload.stage_output`) and builds its digest, and the fold then only swaps messages and
renames each staged file to the file its digest names. An output the worker has not reached (or one from
the newer zone that a fold reaches when it must halve the zone) is folded on the spot, as before.

What is staged is not saved: nothing names it, so it is not listed among the saved outputs a compaction's
index must keep one read away, and `close` removes what was never published (the summary came first).
The digests are keyed on the message object (messages are frozen, `IdentityCache`): a digest made for an
output is the digest of that very text.

The worker also reads each output as a compaction without a model call would (`warm`): when folding is not
enough, `Compactor.truncate` drops the oldest turns and writes their facts and references on the loop, and
scanning ~100 outputs there (the diagnostics' line rules, compiled on first use) was most of the loop's
CPU in the longest pause (0.1-0.2 s at 32k). The scans are cached (`diagnostics.scan`), so the truncation
then only merges.
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from swecli.context.decay import Candidate, ReferenceFor, fold, saving_reference
from swecli.context.offload import OffloadError, StagedOutput, offload_path_in, stage_output
from swecli.context.references import extract_references
from swecli.context.tokens import IdentityCache, TokenCounter
from swecli.lazy import compile_patterns
from swecli.messages import AssistantMessage, Message, ToolMessage
from swecli.session.secrets import Redactor

PATTERN_MODULES = ("swecli.context.extract", "swecli.context.references", "swecli.context.diagnostics",
                   "swecli.context.compaction", "swecli.context.engineering", "swecli.context.decay",
                   "swecli.context.offload", "swecli.tools.facts")
"""Whose patterns (compiled on first use) a fold or a truncation uses: compiled by the worker first."""


class FoldsAhead:
    """Digests made ahead for the outputs a fold would replace (`made`), by one worker thread."""

    def __init__(self, counter: TokenCounter, root: Path, redactor: Redactor | None = None,
                 loop_free: threading.Event | None = None) -> None:
        self.counter, self.root = counter, root
        self.loop_free = loop_free if loop_free is not None else threading.Event()
        """Each piece of work waits for it (`Compactor.loop_compacting` clears it while the loop compacts)."""
        if loop_free is None:
            self.loop_free.set()
        self.redactor = redactor if redactor is not None else Redactor.from_environment()
        self.reference_for: ReferenceFor = saving_reference(root, self.redactor)
        """What a fold on the spot names (and saves) for an output that was not made ahead."""
        self._made = IdentityCache[tuple[ToolMessage, StagedOutput | None]]()
        self._queued = IdentityCache[bool]()
        self._staged: list[StagedOutput] = []
        self._unique = itertools.count()
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, candidates: Sequence[Candidate], older: Sequence[Message] = ()) -> int:
        """Queue the candidates not queued yet (each output is looked at once), and the other `older`
        messages (prompts, the assistant's text, digests: what a truncation would also read) for `warm`;
        returns how many candidates were queued."""
        fresh = [c for c in candidates if self._queued.get(c.message) is None]
        with self._lock:
            if self._closed:
                return 0
            for candidate in fresh:
                self._queued.put(candidate.message, True)
            cold = [m for m in older if self._queued.get(m) is None]
            for message in cold:
                self._queued.put(message, True)
            if not fresh and not cold:
                return 0
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="swecli-fold")
                self._pool.submit(self._compile)
            for candidate in fresh:
                self._pool.submit(self._make, candidate)
            if cold:
                self._pool.submit(self._warm, cold)
        return len(fresh)

    def settled(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for every piece of work queued so far to be done (one worker: a
        marker queued now runs after them); True when it is. For whoever must see them made (a test)."""
        with self._lock:
            pool = self._pool
            marker = pool.submit(lambda: None) if pool is not None and not self._closed else None
        if marker is None:
            return True
        try:
            marker.result(timeout)
        except TimeoutError:
            return False
        return True

    def made(self, message: ToolMessage) -> ToolMessage | None:
        """The digest made ahead for `message`, its file saved now (a rename); None when there is none yet,
        or its file could not be moved (the fold then makes it on the spot)."""
        entry = self._made.get(message)
        if entry is None:
            return None
        digest, staged = entry
        if staged is not None:
            try:
                staged.publish()
            except OffloadError:
                return None
        return digest

    def close(self) -> None:
        """Stop the worker (an output it is writing is finished first) and remove what was staged but never
        published."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        for staged in self._staged:
            staged.discard()
        self._staged.clear()

    def _my_turn(self) -> bool:
        """Wait while the loop compacts; False once closed (a close from inside a compaction, when the counter
        changed, must not wait for a worker that waits for the compaction)."""
        while not self.loop_free.wait(0.05):
            if self._closed:
                return False
        return not self._closed

    def _compile(self) -> None:
        if self._my_turn():
            compile_patterns_of(PATTERN_MODULES)

    def _warm(self, messages: Sequence[Message]) -> None:
        if self._my_turn():
            warm_messages(messages)

    def _make(self, candidate: Candidate) -> None:
        if not self._my_turn():
            return
        digest = self._make_digest(candidate)
        warm(candidate)
        if digest is not None:
            warm_messages([digest])

    def _make_digest(self, candidate: Candidate) -> ToolMessage | None:
        message = candidate.message
        staged: StagedOutput | None = None
        reference = offload_path_in(message.content)  # an offloaded output's file already holds it
        if not reference:
            try:
                staged = stage_output(self.root, message.tool_call_id, message.content, self.redactor,
                                      unique=f"{next(self._unique)}-")
            except OffloadError:
                return None  # the fold tries again on the spot, and says so in the digest if it fails there too
            reference = staged.reference
            self._staged.append(staged)
        digest = fold(message, candidate.call, reference, self.counter)
        self.counter.message(digest)  # counted here, so the fold's own count is a cache hit
        self._made.put(message, (digest, staged))
        return digest


def warm(candidate: Candidate) -> None:
    """Read the output (and its call) as a compaction's facts and references would, for the caches they
    read through (`diagnostics.scan`; the lazily compiled patterns, the first time): a truncation that drops
    it later does not scan it on the loop."""
    span: list[Message] = [candidate.message]
    if candidate.call is not None:
        span.insert(0, AssistantMessage(tool_calls=(candidate.call,)))
    extract_references(span)


def warm_messages(messages: Sequence[Message]) -> None:
    """`warm` for messages that are not outputs a fold would take: each read on its own, as a truncation's
    references read a prompt or the assistant's text."""
    for message in messages:
        extract_references([message])


def compile_patterns_of(modules: Sequence[str]) -> int:
    """`lazy.compile_patterns` for each of `modules` that is imported (none is imported here)."""
    return sum(compile_patterns(sys.modules[name]) for name in modules if name in sys.modules)
