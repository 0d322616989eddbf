"""Which files under the project a shell command changed, at a cost that grows with the change, not the tree.

The session notes record the files a bash call changed (`sed -i`, formatters, `rm`). Listing the tree
before and after every call (`git status` twice, as earlier versions did) cost 26-102 ms a call on the
loop and ran the repository's git configuration (`core.fsmonitor` and the like) with swecli's own
environment. Here nothing is spawned at all:

- `InotifyTracker` (Linux) watches every directory that is not ignored, set up once in a background
  thread; the kernel queues an event for each file written, created, deleted or renamed, and `end()`
  reads the queue: what a call costs is the number of files it touched. Events are attached to the
  inode, so writes made inside the sandbox (bubblewrap's bind mounts) are seen too. A directory the
  command creates is watched and read at once (files made in it before the watch count as created).
- `ScanTracker` is the fallback (no inotify: another OS, the watch limit reached): a stat of every
  file that is not ignored, before and after, compared by size and modification time.

Both see the tree as the tools do (tools/walk.py: `.gitignore` honoured, `.git` and `.swecli` never
entered) and only inside a git work tree, as before. A file created and removed by the same command (a
temporary file, `sed -i`'s own) is no change; one written with its old content is (it was written).
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from swecli.errors import ControlFlow
from swecli.records import datarecord
from swecli.tools.walk import ALWAYS_SKIP, IgnoreRules, work_tree_top

if TYPE_CHECKING:
    from inotify_simple import INotify

MAX_WATCHED_DIRS = 20_000
"""Directories watched at most; a larger tree falls back to scanning (or to nothing past MAX_SCANNED_FILES)."""
MAX_SCANNED_FILES = 20_000
"""Files the fallback stats around a call at most; beyond, shell changes are not recorded."""
SETUP_WAIT = 2.0
"""Seconds a bash call waits for the watches to be in place before it runs untracked (its changes then go
unrecorded: a lost line in the notes costs less than a call held up on a huge tree)."""

# inotify(7) event bits (linux/inotify.h), so the module need not import inotify_simple to name them.
IN_MODIFY, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x2, 0x40, 0x80, 0x100, 0x200
IN_Q_OVERFLOW, IN_IGNORED, IN_ONLYDIR, IN_DONT_FOLLOW, IN_ISDIR = 0x4000, 0x8000, 0x1000000, 0x2000000, 0x40000000
WATCH_MASK = IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_ONLYDIR | IN_DONT_FOLLOW
"""Content writes, creations, deletions and renames; not attribute changes (`touch`, `chmod`) or reads."""


@datarecord(frozen=True)
class Changes:
    """The files one command changed."""

    paths: list[tuple[str, bool]]
    """(root-relative path, still exists), sorted."""
    complete: bool = True
    """False when the kernel's queue overflowed during the call: more changed than `paths` lists."""


class ChangeTracker(Protocol):
    def begin(self, key: str) -> None:
        """A command identified by `key` is about to run."""

    def end(self, key: str) -> Changes | None:
        """What changed since `begin(key)`; None when it could not be known."""

    def close(self) -> None: ...


def track_changes(root: Path, delay: float = 0.0) -> ChangeTracker | None:
    """A tracker for `root`, None outside a git work tree. Watching starts in the background, `delay` seconds
    from now or at the first command, whichever comes first."""
    if work_tree_top(root.resolve()) is None:
        return None
    return InotifyTracker(root, delay=delay)


class _TooLarge(ControlFlow):
    """More directories than inotify may watch: the tracker falls back to scanning."""


def _inotify() -> INotify:
    """An inotify instance. inotify_simple finds libc with `ctypes.util.find_library("c")`, which runs
    `ldconfig -p` (a child process on every start, on Linux); its module-level `_libc`, when set, is used
    instead, and this process's own symbols (`CDLL(None)`) are libc's: the same functions, nothing run."""
    import ctypes

    import inotify_simple

    if getattr(inotify_simple, "_libc", False) is None:  # not yet found (a later version may not have it)
        inotify_simple._libc = ctypes.CDLL(None, use_errno=True)
    return inotify_simple.INotify()


class InotifyTracker:
    """Watches the tree with inotify; falls back to a `ScanTracker` when inotify cannot be used."""

    def __init__(self, root: Path, max_dirs: int = MAX_WATCHED_DIRS, delay: float = 0.0) -> None:
        self.root = root.resolve()
        self.max_dirs = max_dirs
        self.fallback: ChangeTracker | None = None
        """Set when inotify could not watch the tree (why: `unavailable`)."""
        self.unavailable = ""
        self._inotify: INotify | None = None
        self._dirs: dict[int, str] = {}
        """watch descriptor -> root-relative directory ("" for the root)."""
        self._calls: dict[str, dict[str, bool]] = {}
        """Running commands: path -> whether it existed before the command (its first event says)."""
        self._overflowed: set[str] = set()
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._needed = threading.Event()
        self._closed = False
        threading.Thread(target=self._setup, args=(delay,), name="swecli-changes", daemon=True).start()

    def _setup(self, delay: float) -> None:
        self._needed.wait(delay)  # (a request being sent: the walk would hold the interpreter in its way)
        if self._closed:
            self._ready.set()
            return
        try:
            self._inotify = _inotify()
            with self._lock:
                self._watch_tree("", IgnoreRules(self.root), record=False)
        except _TooLarge as exc:
            self.unavailable = str(exc)  # scanning it around every call would cost more: not tracked
            self._release()
        except (ImportError, OSError) as exc:  # no inotify here, or the user's watch limit is reached
            self.unavailable = str(exc) or type(exc).__name__
            self._release()
            self.fallback = ScanTracker(self.root)
        finally:
            self._ready.set()
            if self._closed:
                self.close()

    def begin(self, key: str) -> None:
        self._needed.set()
        if not self._ready.wait(SETUP_WAIT):
            return  # still setting up a huge tree: this call runs untracked (end() says None)
        if self.fallback is not None:
            self.fallback.begin(key)
            return
        with self._lock:
            if self._inotify is None:
                return  # not tracked (too large, or closed)
            self._drain()  # what changed before the command is not the command's
            self._calls[key] = {}

    def end(self, key: str) -> Changes | None:
        if self.fallback is not None:
            return self.fallback.end(key)
        with self._lock:
            if key not in self._calls:
                return None
            self._drain()
            touched = self._calls.pop(key)
            complete = key not in self._overflowed
            self._overflowed.discard(key)
        if not touched:
            return Changes([], complete)  # most commands write nothing: no ignore rules to read
        rules = IgnoreRules(self.root)  # fresh: the command may have edited a .gitignore
        paths = []
        for rel in sorted(touched):
            exists = os.path.lexists(self.root / rel)
            if (exists or touched[rel]) and not rules.ignored(self.root / rel, is_dir=False):
                paths.append((rel, exists))
        return Changes(paths, complete)

    def close(self) -> None:
        self._closed = True
        self._needed.set()
        if self._ready.is_set():
            with self._lock:
                self._release()

    def _release(self) -> None:
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None
        self._dirs.clear()

    # -- under the lock ------------------------------------------------------------------------------

    def _watch_tree(self, start: str, rules: IgnoreRules, record: bool) -> None:
        """Watch `start` and every directory below it that is not ignored; with `record`, count the files
        found as created (a new directory's contents, made before its watch existed)."""
        assert self._inotify is not None
        stack = [start]
        while stack:
            rel = stack.pop()
            path = self.root / rel if rel else self.root
            try:
                self._dirs[self._inotify.add_watch(path, WATCH_MASK)] = rel
                entries = list(os.scandir(path))
            except FileNotFoundError:
                continue  # gone again already
            except NotADirectoryError:
                continue
            if len(self._dirs) > self.max_dirs:
                raise _TooLarge(f"more than {self.max_dirs:,} directories to watch")
            for entry in entries:
                child = f"{rel}/{entry.name}" if rel else entry.name
                if _is_dir(entry):
                    if entry.name not in ALWAYS_SKIP and not rules.ignored(Path(entry.path), is_dir=True):
                        stack.append(child)
                elif record:
                    self._record(child, existed=False)

    def _drain(self) -> None:
        if self._inotify is None:
            return
        while events := self._inotify.read(timeout=0):
            for event in events:
                self._handle(event.wd, event.mask, event.name)

    def _handle(self, wd: int, mask: int, name: str) -> None:
        if mask & IN_Q_OVERFLOW:
            self._overflowed.update(self._calls)
            return
        if mask & IN_IGNORED:
            self._dirs.pop(wd, None)  # the directory is gone (or unwatched)
            return
        parent = self._dirs.get(wd)
        if parent is None or not name:
            return
        rel = f"{parent}/{name}" if parent else name
        if not mask & IN_ISDIR:
            self._record(rel, existed=not mask & (IN_CREATE | IN_MOVED_TO))
        elif mask & (IN_CREATE | IN_MOVED_TO) and name not in ALWAYS_SKIP:
            rules = IgnoreRules(self.root)
            if not rules.ignored(self.root / rel, is_dir=True):
                try:
                    self._watch_tree(rel, rules, record=True)
                except (OSError, _TooLarge):
                    self._overflowed.update(self._calls)  # cannot follow it: say the record is partial
        elif mask & IN_MOVED_FROM:
            self._unwatch(rel)  # its watches would report under the old name
            self._record(rel, existed=True)

    def _unwatch(self, rel: str) -> None:
        assert self._inotify is not None
        for wd, path in list(self._dirs.items()):
            if path == rel or path.startswith(rel + "/"):
                del self._dirs[wd]
                with contextlib.suppress(OSError):
                    self._inotify.rm_watch(wd)

    def _record(self, rel: str, existed: bool) -> None:
        for touched in self._calls.values():
            touched.setdefault(rel, existed)


Stat = tuple[int, int]


class ScanTracker:
    """Stats every file that is not ignored before and after a command (no inotify here)."""

    def __init__(self, root: Path, max_files: int = MAX_SCANNED_FILES) -> None:
        self.root = root.resolve()
        self.max_files = max_files
        self._before: dict[str, dict[str, Stat]] = {}
        self.too_large = False

    def begin(self, key: str) -> None:
        snapshot = None if self.too_large else self.snapshot()
        if snapshot is not None:
            self._before[key] = snapshot
        self.too_large = snapshot is None  # found once: not paid for again around every call

    def end(self, key: str) -> Changes | None:
        before = self._before.pop(key, None)
        if before is None:
            return None
        after = self.snapshot()
        if after is None:
            self.too_large = True
            return None
        every = sorted(before.keys() | after.keys())
        paths = [(rel, rel in after) for rel in every if before.get(rel) != after.get(rel)]
        return Changes(paths)

    def close(self) -> None:
        self._before.clear()

    def snapshot(self) -> dict[str, Stat] | None:
        """(mtime in ns, size) of every file that is not ignored; None past `max_files`."""
        rules = IgnoreRules(self.root)
        files: dict[str, Stat] = {}
        stack = [(self.root, "")]
        while stack:
            path, rel = stack.pop()
            try:
                entries = list(os.scandir(path))
            except OSError:
                continue
            for entry in entries:
                child = f"{rel}/{entry.name}" if rel else entry.name
                if _is_dir(entry):
                    if entry.name not in ALWAYS_SKIP and not rules.ignored(Path(entry.path), is_dir=True):
                        stack.append((Path(entry.path), child))
                elif not rules.ignored(Path(entry.path), is_dir=False):
                    files[child] = _stat(entry)
            if len(files) > self.max_files:
                return None
        return files


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _stat(entry: os.DirEntry[str]) -> Stat:
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return -1, -1
    return info.st_mtime_ns, info.st_size
