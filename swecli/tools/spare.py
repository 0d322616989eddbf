"""A sandbox started before its command: bubblewrap's start-up off the loop's path.

Starting bwrap costs tens of milliseconds of wall time that are mostly the kernel's (new user, PID, IPC,
network and mount namespaces; detaching the old root waits for an RCU grace period), more on a loaded
machine. While the model thinks, a spare sandbox is started (`Spares.prepare`, called when a request goes
out): bwrap builds the whole sandbox and runs the runner shell inside it, whose child (forked at once)
waits on a pipe. When the command arrives, `Spares.take` checks that the spare is exactly what a fresh
launch would be, hands it the command and lets it go; what is left on the path is that child reading the
command and becoming `bash -c COMMAND` (an exec, no fork). When the command came within `QUICK_ANSWER` of
the request (a model that answers at once leaves no time to start a spare from the request), the next spare
is started at once, so that it builds while this command runs and while the model answers. The session
discards its spare when it closes or its conversation is cleared (`get_ready`'s counterpart, `stand_down`).

Nothing is weakened:
- The spare's bwrap command line is compared with the one a fresh launch would use now (the per-command
  layout is computed again: protected files come and go, placeholders, the environment's toolchains): the
  sandbox and everything else the line is made of (`sandbox.Mounts`: the bwrap found, its isolation flags,
  the layout's mounts, which hidden paths are directories) must be equal, which makes the lines equal argument
  by argument (`Sandbox.command_line` reads nothing else); any difference discards the spare and the command
  starts fresh. The checks that run after the command (a protected file it created, new dot entries of the
  home, submodules) are the fresh layout's, taken just before the command runs, and run once the sandbox's
  last process is gone (`sandbox.Reports.wait_for_namespace`), as for a fresh launch.
- The files and directories the command line mounts are compared too (device and inode of each bind's
  source and target, each tmpfs's target): a protected file replaced by a rename after the spare started
  (an approved `write_file` writes that way) would otherwise have its read-only mount detached in the
  spare's namespace (the kernel drops a mount whose mount point is renamed over elsewhere), leaving the
  new file writable there.
- The command reaches the sandbox through a memfd and a one-byte "go" on a pipe (both closed by the
  waiting subshell before it becomes `bash -c COMMAND`, the runner's child as in a fresh launch,
  `sandbox.Reports`, so the command gets exactly the argv, environment, descriptors, PID and process group
  a fresh launch gives it). A spare that is discarded, or whose swecli
  dies, reads end-of-file on the pipe and exits without running anything; its process group is killed.
- bwrap's `--die-with-parent` is tied to the thread that started it: spares are started by one
  long-lived daemon thread, never by a short-lived one.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import queue
import select
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import field

from swecli.records import datarecord
from swecli.tools import syscalls
from swecli.tools.sandbox import Launch, Mounts, Reports, Sandbox

_WAITER = ('(printf r >&{ready}; exec {ready}>&-; read -r -n 1 go <&{go} || exit 0; IFS= read -r -d "" command '
           '<&{text}; exec {go}<&- {text}<&-; exec /bin/bash -c "$command")')
"""The command a spare's runner runs (`sandbox.Reports.runner`, as in a fresh launch): a subshell forked when
the spare starts, so that no fork is left on the command's path (a fork of bash costs ~0.5-1 ms here;
Python's `posix_spawn` of the fresh launch less). It waits for one byte on the go pipe (end-of-file: it
exits, nothing runs), reads the command from the memfd (seekable, so bash reads it in blocks), closes both
descriptors and becomes `bash -c COMMAND`: the same process (PID 3, the runner's child, the output pipe as
stdout and stderr), argv, environment (bash's `exec` in a `( )` subshell leaves SHLVL as the runner set it),
descriptors and signal dispositions as a fresh launch's command. The runner reports its status as it exits.
Unlike a fresh launch's runner it keeps its own copies of the go pipe's read end (its writer, swecli, has
closed it: end-of-file) and of the memfd (the command's own text) while it waits: closing them means
starting the subshell in the background and `wait`ing for it, which measured 0.3-0.8 ms slower on the
command's path (docs/latency.md, percall4)."""
TAKE_WAIT = 1.0
"""Seconds `take` waits for a spare still being started before it starts the command fresh."""
SETTLE = 0.05
"""Seconds a spare prepared by the loop's `ready` hook (after a reply's calls, as the next request is
built and sent) waits before it is started: its start is ~2-3 ms of Python (the layout, the mounted paths'
identities, Popen) that would take the GIL from the loop while it builds and sends the request. Not while
the model answers at once (the last command came within `QUICK_ANSWER` of its request, or none came yet):
then the spare is needed as soon as possible."""
SWEEP_EVERY = 0.05
"""Seconds between the spare thread's sweeps from the moment a spare's command starts until its sandbox is
reaped and the next spare ordered. The thread is woken as the command starts, while the loop waits for it,
and then neither the command's end (`Spares.reap`) nor the next spare's order with a settle time (`prepare`
from the loop's `ready` hook) wakes it: both come while the loop builds and sends the next request, where a
thread's wake-up takes the GIL from the loop (and its return from `waitpid` took it again). It finds them at
its next sweep instead, mostly while the model thinks."""
QUICK_ANSWER = 0.2
"""A command that comes within this many seconds of the last request going out (a local or cached model
that answers at once) has its successor's spare started at once, as it is handed over; otherwise the next
spare starts when the next request goes out. Started at once, a spare competes with the command and the
loop for the CPU and the GIL (measured: +10-15 ms a call on a loaded machine when the model thinks 0.5 s);
started from a request that is answered at once, it is not ready in time (bwrap's whole start on the path)."""


@datarecord
class Spare:
    """A started sandbox, waiting for its command."""

    sandbox: Sandbox
    env: dict[str, str]
    mounts: Mounts
    """What its bwrap command line was made of besides the sandbox's settings (`Sandbox.command_line`): equal
    ones of an equal sandbox make the same line, so a fresh launch's is compared without building it."""
    mounted: dict[str, tuple[int, int, int] | None]
    """What each path the command line mounts was when the spare started (`_identities`), by path: once
    `mounts` are found the same, these are the paths to look at again."""
    proc: subprocess.Popen[bytes]
    reports: Reports
    text_fd: int
    go_fd: int
    ready_fd: int = -1
    """Read end of a pipe the waiting shell writes one byte to once it waits (bwrap set the sandbox up and ran
    it); end-of-file without it: bwrap failed (a mount it could not make) and nothing waits for the go byte."""
    ready: bool = False
    """The waiting shell's byte came (`waiting`)."""

    def waiting(self, timeout: float) -> bool:
        """Whether the waiting shell is there, waiting up to `timeout` for bwrap to finish setting up (a spare
        is counted started once bwrap has cloned its namespace's init, before it mounts anything)."""
        if self.ready_fd >= 0:
            came = select.select([self.ready_fd], [], [], timeout)[0]
            self.ready = bool(came) and os.read(self.ready_fd, 1) == b"r"
            os.close(self.ready_fd)
            self.ready_fd = -1
        return self.ready

    def release(self, command: str) -> None:
        """Hand the command over and let the shell go."""
        data = os.fsencode(command)
        os.write(self.text_fd, data)
        os.lseek(self.text_fd, 0, os.SEEK_SET)  # the shell shares this descriptor's offset
        os.write(self.go_fd, b"g")
        self._close_fds()

    def discard(self) -> None:
        """Stop it without running anything (the go pipe sees end-of-file; the group is killed)."""
        self._close_fds()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.reports.close()
        self.proc.wait()

    def _close_fds(self) -> None:
        for fd in (self.text_fd, self.go_fd, self.ready_fd):
            if fd >= 0:
                os.close(fd)
        self.text_fd = self.go_fd = self.ready_fd = -1


@datarecord
class _Order:
    sandbox: Sandbox
    env: dict[str, str]
    start_at: float = 0.0
    """`time.monotonic()` before which the worker does not start it (`SETTLE`)."""
    done: threading.Event = field(default_factory=threading.Event)
    spare: Spare | None = None
    claimed: bool = False
    """Taken by a command (set under the lock): the worker no longer discards it as stale."""


class Spares:
    """At most one spare sandbox, started on a long-lived thread of its own."""

    def __init__(self, take_wait: float = TAKE_WAIT, quick_answer: float = QUICK_ANSWER) -> None:
        self.take_wait = take_wait
        self.quick_answer = quick_answer
        self._asked = 0.0
        """When `prepare` was last called (a request went out)."""
        self._quick = True
        """Whether the last command came within `quick_answer` of its request (until one did not: a
        model's first answer may come at once)."""
        self.used = 0
        """Commands that ran in a spare."""
        self.refused = 0
        """Spares that did not fit their command (the layout or the environment changed) and were discarded."""
        self._lock = threading.Lock()
        self._next: _Order | None = None
        self._jobs: queue.SimpleQueue[_Order | Spare | None] = queue.SimpleQueue()
        """Orders to start, spares to discard; None only wakes the thread (`_sweep`)."""
        self._worker: threading.Thread | None = None
        self._ended: list[subprocess.Popen[bytes]] = []
        """Sandboxes whose command has ended, to reap (`reap`)."""
        self._out: list[subprocess.Popen[bytes]] = []
        """Spares handed a command, until `reap` is called for them or their bwrap is reaped otherwise."""
        self._held: list[int] = []
        """Ended sandboxes' mount namespaces (`Reports.mount_ns`), to close: their teardown is this thread's."""
        self._sweeping = False
        """The thread waits at most `SWEEP_EVERY`: what `reap` and `prepare` leave for it is found without
        waking it."""
        self._found: _Order | None = None
        """An order `prepare` left for the sweeping thread."""

    def prepare(self, sandbox: Sandbox, env: Mapping[str, str], settle: float = 0.0) -> None:
        """Start a spare for `sandbox` and `env` (the command's environment, before the sandbox's own
        changes) unless one is there or on its way; `settle` seconds from now at the earliest, unless the
        model answers at once (then every millisecond of the spare's start is on the next command's path)."""
        self._asked = time.monotonic()
        order = _Order(sandbox, dict(env), start_at=self._asked + (0.0 if self._quick else settle))
        with self._lock:
            current = self._next
            if current is not None and current.sandbox == order.sandbox and current.env == order.env:
                return
            self._next = order
            self._start_worker()
            # found at the next sweep, no wake now; not when it replaces an order: that one's discard, queued
            # (and waking the thread anyway), comes first
            left = current is None and self._sweeping and order.start_at > self._asked
            if left:
                self._found = order
        if current is not None:
            self._jobs.put(current)  # discarded once started
        if not left:
            self._jobs.put(order)

    def reap(self, proc: subprocess.Popen[bytes] | None, mount_ns: int = -1) -> None:
        """Reap a sandbox's bwrap off the loop's path: the command's end was learned from its runner
        (`sandbox.Reports`), and its group was killed; bwrap's exit chain need not be waited for. Close its
        held mount namespace there too (the namespace's teardown). The spare thread is not woken for it while
        it sweeps (a spare's command is running: `_handed_over`); it reaps at its next sweep (`SWEEP_EVERY`)."""
        if mount_ns >= 0 and self._quick:  # the next spare is starting beside the command: its sweep before the
            os.close(mount_ns)  # start would put the teardown on the next command's path (measured: +4 ms a call)
            mount_ns = -1
        if proc is None and mount_ns < 0:
            return
        with self._lock:
            self._start_worker()
            if proc is not None:
                self._ended.append(proc)
                self._out = [out for out in self._out if out is not proc]
            if mount_ns >= 0:
                self._held.append(mount_ns)
            wake = not self._sweeping
        if wake:  # a fresh launch's sandbox, with no sweep under way
            self._jobs.put(None)

    def _handed_over(self, proc: subprocess.Popen[bytes]) -> None:
        """A spare's command is running: the thread sweeps until its sandbox is reaped. Woken now, while
        the loop waits for the command, it need not be woken when the command ends."""
        with self._lock:
            self._out.append(proc)
            wake = not self._sweeping
        if wake:
            self._jobs.put(None)

    def _start_worker(self) -> None:
        """Start the long-lived thread (once; with the lock held)."""
        if self._worker is None:
            self._worker = threading.Thread(target=self._work, name="swecli-spare-sandbox", daemon=True)
            self._worker.start()
            atexit.register(self.close)

    def wait_started(self, timeout: float) -> bool:
        """Wait until the prepared spare has been started (or failed to); False if none is prepared."""
        with self._lock:
            order = self._next
        return order is not None and order.done.wait(timeout) and order.spare is not None

    def take(self, sandbox: Sandbox, env: Mapping[str, str],
             argv: list[str]) -> tuple[Launch, subprocess.Popen[bytes]] | None:
        """The prepared spare running `argv` (`["/bin/bash", "-c", COMMAND]`), when it is exactly what
        `sandbox.launch(argv, env)` would start now; None otherwise (then launch fresh)."""
        with self._lock:
            order, self._next = self._next, None
            if order is not None:
                order.claimed = True
        if order is None:
            return None
        quick = self._quick = time.monotonic() - self._asked < self.quick_answer
        try:
            return self._use(order, sandbox, env, argv)
        finally:
            if quick:  # the next command's sandbox starts now, while this one runs and the model answers
                self.prepare(sandbox, env)

    def _use(self, order: _Order, sandbox: Sandbox, env: Mapping[str, str],
             argv: list[str]) -> tuple[Launch, subprocess.Popen[bytes]] | None:
        if not order.done.wait(self.take_wait) or order.spare is None:
            self._jobs.put(order)  # discarded once started
            return None
        spare = order.spare
        inner = sandbox.environment(env)
        layout = sandbox.layout(inner)  # now, just before the command: the checks below are this layout's
        fits = (argv[:2] == ["/bin/bash", "-c"] and len(argv) == 3 and spare.sandbox == sandbox
                and spare.env == env and spare.mounts == sandbox.mounts(layout)
                and spare.mounted == _identities(spare.mounted) and spare.proc.poll() is None
                and spare.waiting(self.take_wait))
        if not fits:
            self.refused += 1
            self._jobs.put(spare)
            return None
        try:
            spare.release(argv[2])
        except BrokenPipeError:  # its shell is gone (bwrap died setting up after the check): launch fresh
            self.refused += 1
            self._jobs.put(spare)
            return None
        self.used += 1
        self._handed_over(spare.proc)
        return Launch(argv, inner, (), sandbox.root, layout.checks, reports=spare.reports), spare.proc

    def close(self) -> None:
        """Discard the spare (at exit, or when the session that prepared it ends or clears its conversation:
        here and now, so no sandbox is left waiting for a command that will not come)."""
        with self._lock:
            order, self._next = self._next, None
            spare = _taken(order) if order is not None and order.done.is_set() else None
        if spare is not None:
            spare.discard()
        elif order is not None:
            self._jobs.put(order)

    def _work(self) -> None:
        while True:
            job = self._next_job()
            self._sweep()
            if job is None:
                continue
            if isinstance(job, Spare):
                job.discard()
            elif job.done.is_set():
                if job.spare is not None:
                    job.spare.discard()
                    job.spare = None
            else:
                self._start(job)

    def _next_job(self) -> _Order | Spare | None:
        """The next job: an order left by `prepare`, or the queue's; None after `SWEEP_EVERY` while a
        sandbox may be waiting to be reaped."""
        with self._lock:
            found, self._found = self._found, None
            if found is not None:
                return found
            self._sweeping = bool(self._ended or self._out or self._held)
        try:
            return self._jobs.get(timeout=SWEEP_EVERY if self._sweeping else None)
        except queue.Empty:
            return None

    def _sweep(self) -> None:
        """Reap the ended sandboxes whose bwrap has exited (never waits: it may be exiting still). A spare
        still out is only dropped once its bwrap was reaped by the command's own path (a timeout, a
        failure): polling it here could reap its pid while that path still watches it (`bash._Stream`)."""
        with self._lock:
            ended, self._ended = self._ended, []
            self._out = [proc for proc in self._out if proc.returncode is None]
            held, self._held = self._held, []
        for fd in held:
            os.close(fd)
        running = [proc for proc in ended if proc.poll() is None]
        if running:
            with self._lock:
                self._ended += running

    def _stale(self, order: _Order) -> bool:
        with self._lock:
            return self._next is not order and not order.claimed

    def _start(self, order: _Order) -> None:
        wait = order.start_at - time.monotonic()
        if wait > 0:
            time.sleep(wait)  # this thread's own pace: nothing waits on it but a command, which take() bounds
            self._sweep()  # the last command's sandbox, killed as this order was given, has exited by now
        if self._stale(order):
            order.done.set()
            return
        try:
            order.spare = _start(order.sandbox, order.env, hold_mounts=not self._quick)
        except Exception:  # any error: this thread must live on (it discards every spare)
            order.spare = None  # take() launches fresh, which reports what goes wrong
        finally:
            order.done.set()
        with self._lock:  # close() may have found it started and be discarding it this very moment
            spare = _taken(order) if self._next is not order and not order.claimed else None
        if spare is not None:
            spare.discard()


def _taken(order: _Order) -> Spare | None:
    """The order's spare, now no longer the order's (whoever takes it discards it, once: with the pool's
    lock held, so close() and the worker's stale check cannot both close its descriptors)."""
    spare, order.spare = order.spare, None
    return spare


def _shape(sandbox: Sandbox, mounts: Mounts) -> list[str]:
    """The bwrap command line without the parts that differ by construction (descriptors, the command)."""
    return sandbox.command_line(["/bin/bash", "-c", "<command>"], mounts)


_MOUNTS_TWO = frozenset({"--bind", "--ro-bind", "--ro-bind-try", "--bind-try", "--dev-bind", "--dev-bind-try"})
_MOUNTS_ONE = frozenset({"--tmpfs", "--remount-ro"})


def _mounted_paths(shape: list[str]) -> list[str]:
    """Every path a bind or tmpfs in `shape` names, once (a bind's source is mostly its target)."""
    paths = [path for i, arg in enumerate(shape) if arg in _MOUNTS_TWO for path in shape[i + 1:i + 3]]
    paths += [shape[i + 1] for i, arg in enumerate(shape) if arg in _MOUNTS_ONE]
    return list(dict.fromkeys(paths))


def _identities(paths: Iterable[str]) -> dict[str, tuple[int, int, int] | None]:
    """(device, inode, a file's change time) of each path, None where there is none. At `take` the paths are
    the spare's own (`Spare.mounted`), looked at again once the command line was found the same
    (`Spare.mounts`): the same paths as reading them out of the new command line, without the scan (one loop:
    ~28 paths, each a `stat`). A file deleted and made again (an editor; an approved `write_file`, which renames
    a new file over it) drops the spare's read-only mount over it (the kernel detaches a mount whose mount point
    is unlinked in another namespace), and ext4 may give the new file the old one's inode number at once: its
    change time tells it apart (measured: same inode, and the spare's command wrote to the protected file).
    Folders keep (device, inode) only: their change time moves with every entry made in them."""
    found: dict[str, tuple[int, int, int] | None] = {}
    for path in paths:
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            found[path] = None
        else:
            found[path] = (info.st_dev, info.st_ino, info.st_ctime_ns if stat.S_ISREG(info.st_mode) else 0)
    return found


def _start(sandbox: Sandbox, env: dict[str, str], hold_mounts: bool = False) -> Spare:
    inner = sandbox.environment(env)
    layout = sandbox.layout(inner)
    mounts = sandbox.mounts(layout)
    # before bwrap mounts anything: what a fresh launch would mount
    mounted = _identities(_mounted_paths(_shape(sandbox, mounts)))
    seccomp = syscalls.filter_fd(network=sandbox.network)
    text_fd = os.memfd_create("swecli-command")
    go_read, go_write = os.pipe()
    ready_read, ready_write = os.pipe()
    reports = Reports.open()
    try:
        waiter = ["/bin/bash", "-c", reports.runner(_WAITER.format(go=go_read, text=text_fd, ready=ready_write))]
        fds = (go_read, text_fd, ready_write, *reports.passed) + (() if seccomp is None else (seccomp,))
        line = sandbox.command_line(waiter, mounts, seccomp, reports.info_fd)
        proc = subprocess.Popen(line, cwd=sandbox.root, env=inner, stdin=subprocess.DEVNULL, stdout=reports.messages,
                                stderr=subprocess.STDOUT, start_new_session=True, pass_fds=fds)
    except BaseException:  # whatever failed (a NUL in a path is a ValueError): no descriptor is left open
        os.close(text_fd)
        os.close(go_write)
        os.close(ready_read)
        reports.close()
        raise
    finally:
        os.close(go_read)
        os.close(ready_write)
        if seccomp is not None:
            os.close(seccomp)
    reports.started()
    reports.learn_init(hold_mounts=hold_mounts)  # off the command's path: bwrap writes it as it clones the init
    return Spare(sandbox, env, mounts, mounted, proc, reports, text_fd, go_write, ready_read)


SPARES = Spares()
"""The process's spare: one loop runs bash at a time (a sub-agent's command may simply start fresh)."""
