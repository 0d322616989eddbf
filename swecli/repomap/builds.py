"""Builds that run on a daemon thread, one per project at a time, shared by every caller in the process:
the repository map (`repomap.background`) and its BM25 index (`lexical.lexical_background`).

A caller that cannot wait takes `latest(root)` (the newest finished result, possibly a few seconds stale)
and asks for `background(root)` to refresh it for next time; a build that finished more than `max_age`
seconds ago starts again (cheap when warm: files may have changed).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from swecli.errors import SwecliError

T = TypeVar("T")


class BuildFailed(SwecliError):
    """A build that could not be made; `str()` says why, as the notice shows it."""


class Pending(Generic[T]):
    """One build running (or finished) on a daemon thread."""

    def __init__(self, build: Callable[[], T], name: str) -> None:
        self.done = threading.Event()
        self.result: T | None = None
        self.error = ""
        self.finished_at = 0.0
        threading.Thread(target=self._run, args=(build,), name=name, daemon=True).start()

    def wait(self, seconds: float | None = None) -> T | None:
        """The result if it is ready within `seconds` (None: wait until it is), else None."""
        self.done.wait(seconds)
        return self.result

    def _run(self, build: Callable[[], T]) -> None:
        try:
            self.result = build()
        except BuildFailed as exc:
            self.error = str(exc)
        except Exception as exc:  # the map and index are aids: a failure must not take the session down
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.finished_at = time.monotonic()
            self.done.set()


class Builds(Generic[T]):
    """Per-project builds of one kind. `build(root, previous)` makes a fresh result; it may return
    `previous` (the newest finished one) when nothing changed, so indexes built on it are kept."""

    def __init__(self, build: Callable[[Path, T | None], T], name: str) -> None:
        self._build, self._name = build, name
        self._pending: dict[Path, Pending[T]] = {}
        self._latest: dict[Path, T] = {}
        self._lock = threading.Lock()

    def latest(self, root: Path) -> T | None:
        """The newest result built in this process, at once (None when none has finished)."""
        return self._latest.get(root.resolve())

    def background(self, root: Path, max_age: float = 5.0) -> Pending[T]:
        root = root.resolve()
        with self._lock:
            pending = self._pending.get(root)
            if pending is None or (pending.done.is_set() and time.monotonic() - pending.finished_at > max_age):
                pending = self._pending[root] = Pending(lambda: self._finish(root), self._name)
            return pending

    def _finish(self, root: Path) -> T:
        result = self._latest[root] = self._build(root, self._latest.get(root))
        return result
