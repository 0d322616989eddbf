"""When the cyclic garbage collector runs: not between a model's reply and the next request, but while the
model thinks.

CPython runs a collection whenever enough container objects were allocated since the last one, on whichever
thread allocates. A tool call's path (the reply read, events written, the command run, the next request
built and sent) allocates a few thousand, so a young-generation pass (~0.3 ms) landed on it almost every
call, and now and then an older generation's (tens of ms on a long session's heap). The user waits for
all of that; nobody waits while the model thinks.

So the loop `hold`s the collector when a reply is in and `release`s it when its next request is under way;
while held, automatic collection is off. A release does not collect at once (the request is still being
built and written): the collector's thread waits `ON_THE_WIRE`, and if no reply has come by then, switches
automatic collection back on and allocates one object, which makes CPython run whatever collections are due,
by its own rules (the same generations and thresholds, the old generation's 25% rule included), while the
loop waits for the model. A model that answers before then (no thinking time) resumes automatic
collection at its reply's first event (`resume`), which collects what is due there, on the path as before:
a session that never waits still collects every call. Nothing is ever skipped: allocations made while held are counted,
and the next collection takes them.

Only a collector swecli switched off is switched back on: one that was off already (start-up's, before
`-p`'s first request; a user's `gc.disable()`) is left as it is. Several loops (sub-agents on threads)
share the one collector: it stays held while any of them is between its reply and its next request.
"""

from __future__ import annotations

import gc
import queue
import threading
import time

ON_THE_WIRE = 0.05
"""Seconds after a request starts by which it has been sent (loopback: ~3 ms; a TLS handshake mostly
waits on the network, which leaves the interpreter free): the collector's thread collects then."""


class _Due:
    """One allocation of a container object (a class instance with a `__dict__` is one; lists and dicts come
    from free lists, which CPython does not count): what makes CPython run the collections that are due."""


class Collector:
    """The process's collector schedule (`COLLECTOR`); the loop calls `hold`, `release` and `resume`."""

    def __init__(self, delay: float = ON_THE_WIRE) -> None:
        self.delay = delay
        self._lock = threading.Lock()
        self._holders = 0
        self._switched_off = False
        """Automatic collection is off because of a hold (and is switched on again by this schedule only)."""
        self._epoch = 0
        """Changes at every hold and release: a pending collection whose epoch is not the latest is dropped."""
        self._inbox: queue.SimpleQueue[tuple[int, float]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    @property
    def held(self) -> bool:
        return self._holders > 0

    def hold(self) -> None:
        """A reply is in: no automatic collection until the next request is under way (`release`)."""
        with self._lock:
            self._holders += 1
            self._epoch += 1
            if self._holders == 1 and gc.isenabled():
                gc.disable()
                self._switched_off = True

    def release(self) -> None:
        """A request is under way (or the turn is over): collect what is due once it is out, while the model
        thinks."""
        with self._lock:
            self._holders -= 1
            self._epoch += 1
            if self._holders or not self._switched_off:
                return
            epoch = self._epoch
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="swecli-gc", daemon=True)
                self._thread.start()
        self._inbox.put((epoch, time.monotonic() + self.delay))

    def resume(self) -> None:
        """A reply is streaming in before the pending collection ran (a model that does not think): automatic
        collection is on again, and what is due is collected now, as it would have been without a schedule
        (a reply whose first event is its last would otherwise be read with collection on but nothing
        allocated before the next hold)."""
        if self._switched_off and not self._holders:
            with self._lock:
                switched = self._switch_on()
            if switched:
                _Due()

    def _switch_on(self) -> bool:
        if self._holders or not self._switched_off:
            return False
        self._switched_off = False
        gc.enable()
        return True

    def _serve(self) -> None:
        while True:
            epoch, at = self._inbox.get()
            wait = at - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            with self._lock:
                switched = epoch == self._epoch and self._switch_on()
            if switched:
                _Due()  # CPython's own collections run here, if any is due (outside the lock: finalizers run too)


COLLECTOR = Collector()
"""One per process, as the collector is."""
