"""When the cyclic garbage collector runs: not between a model's reply and the next request, but while the
model thinks.

CPython runs a collection whenever enough container objects were allocated since the last one (700 by
default), on whichever thread allocates. A tool call's path (the reply read, events written, the command
run, the next request built and sent) allocates a few hundred to a few thousand, so a young-generation pass
(~0.3 ms here) landed on it every call or two, and now and then an older generation's (milliseconds on a
long session's heap). The user waits for all of that; nobody waits while the model thinks.

So the loop `hold`s the collector when a reply is in and `release`s it when its next request is under way.
While held, the young generation's threshold is `HELD_FACTOR` times higher: a call's own allocations never
reach it, and a long hold (a command that runs for minutes, a sub-agent working under a `task` call) still
collects, every `HELD_FACTOR` times as many allocations, so garbage stays bounded. A release does not
collect at once (the request is still being built and written): the collector's thread (which looks every
`TICK`, and is never woken on the path) finds it `ON_THE_WIRE` or more later and, if no reply has come by
then, puts the threshold back and allocates one object, which makes CPython run whatever collections are
due, by its own rules (the same generations and thresholds, the old generation's 25% rule included), and
collects the young generation if nothing was due, so that the next reply is read
with the whole threshold ahead of it; all while the loop waits for the model. A model that answers before
then (no thinking time) puts it back at its reply's first event (`resume`), which collects what is due
there, on the path as before: a session that never waits still collects every call. Nothing is skipped:
allocations made while held are counted, and the next collection takes them.

A collector that is off (`gc.disable()`: start-up's, before `-p`'s first request, or a user's) or whose
threshold is 0 is left alone. Several loops (sub-agents on threads) share the one collector: it stays held
while any of them is between its reply and its next request.
"""

from __future__ import annotations

import gc
import threading
import time

ON_THE_WIRE = 0.05
"""Seconds after a request starts by which it has been sent (loopback: ~3 ms; a TLS handshake mostly
waits on the network, which leaves the interpreter free): the collector's thread collects then."""
HELD_FACTOR = 20
"""How many times the young generation's threshold a hold allows (14,000 allocations at CPython's 700)."""
TICK = 0.1
"""How often the collector's thread looks for a release to act on, while a session works: a look that lands
between a reply and its next request costs the loop a GIL handoff (~tens of us), so rarely is better; a
release is acted on 50-150 ms after it, well inside a model's thinking."""
PARK_AFTER = 1.0
"""Seconds with nothing to act on after which the collector's thread stops looking until rung."""


class _Due:
    """One allocation of a container object (a class instance with a `__dict__` is one; lists and dicts come
    from free lists, which CPython does not count): what makes CPython run the collections that are due."""


class Collector:
    """The process's collector schedule (`COLLECTOR`); the loop calls `hold`, `release` and `resume`.

    Its thread is never woken on a call's path: a release only notes the time, and the thread, which looks
    every `TICK` seconds while a session works, finds it there. A thread blocked on a queue would have to
    be woken by the release itself, just as the request is built and sent: one more thread wanting the GIL
    and a core there (measured under load: 1.5-2.8 ms between the request's start and its body's encoding,
    against 0.04-0.17 ms without). It parks when it has had nothing to do for `PARK_AFTER` seconds (between
    turns; a command or a sub-agent that runs long); the hold or release that finds it parked rings it."""

    def __init__(self, delay: float = ON_THE_WIRE, tick: float = TICK, park_after: float = PARK_AFTER) -> None:
        self.delay = delay
        self.tick = tick
        self.park_after = park_after
        self._lock = threading.Lock()
        self._holders = 0
        self._raised: tuple[int, int, int] | None = None
        """The thresholds a hold raised (to put back), while they are raised."""
        self._released: float | None = None
        """When the last hold was released with the threshold raised (None: nothing pending)."""
        self._busy = 0.0
        """When the thread last had something to watch."""
        self._parked = False
        self._bell = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def parked(self) -> bool:
        """Its thread waits to be rung (nothing to act on for `park_after` seconds)."""
        return self._parked

    def hold(self) -> None:
        """A reply is in: no collection for the call's own allocations until the next request is under way."""
        with self._lock:
            self._holders += 1
            self._released = None
            ring = self._watch()
            if self._holders == 1 and self._raised is None and gc.isenabled():
                thresholds = gc.get_threshold()
                if thresholds[0]:
                    self._raised = thresholds
                    gc.set_threshold(thresholds[0] * HELD_FACTOR, *thresholds[1:])
        if ring:
            self._bell.set()

    def release(self) -> None:
        """A request is under way (or the turn is over): collect what is due once it is out, while the model
        thinks."""
        with self._lock:
            self._holders -= 1
            ring = False
            if not self._holders and self._raised is not None:
                self._released = time.monotonic()
                ring = self._watch()
        if ring:
            self._bell.set()

    def resume(self) -> None:
        """A reply is streaming in before the pending collection ran (a model that does not think): the
        threshold is put back and what is due collected now, as it would have been without a schedule."""
        if self._raised is not None and not self._holders:
            self._lower(pending=False)

    def _watch(self) -> bool:
        """The thread is to look (started the first time); True when it is parked and must be rung."""
        self._busy = time.monotonic()
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="swecli-gc", daemon=True)
            self._thread.start()
        parked, self._parked = self._parked, False
        return parked

    def _lower(self, pending: bool) -> bool:
        """Put the threshold back and collect what is due (outside the lock: finalizers run too), unless held
        again, or (`pending`) the release is less than `delay` old. False when it was not put back."""
        with self._lock:
            raised = self._raised
            if raised is None or self._holders:
                return False
            if pending and (self._released is None or time.monotonic() - self._released < self.delay):
                return False
            self._raised, self._released = None, None
            gc.set_threshold(*raised)
        _Due()
        return True

    def _serve(self) -> None:
        while True:
            time.sleep(self.tick)
            if self._lower(pending=True) and gc.isenabled() and gc.get_count()[0]:
                # Nothing was due, but what the call left in the young generation is collected now all the
                # same: the reply that comes next then has the whole threshold before its own end (its hold),
                # instead of tipping a collection in while it is read (a path step, measured: 0.4 ms).
                gc.collect(0)
            with self._lock:
                idle = self._released is None and time.monotonic() - self._busy >= self.park_after
                if idle:
                    self._parked = True
                    self._bell.clear()
            if idle:
                self._bell.wait()


COLLECTOR = Collector()
"""One per process, as the collector is."""
