"""bash: run a shell command in the project root, bounded in time and output, killable at any moment.

The command runs in its own session (its own process group), so a timeout or an interrupt can stop
everything it started (pipelines, `&` jobs, subshells) with one signal to the group. Output is read
with `select` in the same thread that watches the clock and the cancel token, so a quiet command and
a flood of output are both interruptible within ~0.1s.

When the call comes with a sandbox (`ToolContext.sandbox`, chosen by the approval policy), the shell
runs under bubblewrap (`swecli/tools/sandbox.py`), still in that process group. A failure the
sandbox caused is said so in the result; when someone may be asked (`ToolContext.escalate`, default
mode), the user can let the command run again outside the sandbox.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any

from pydantic import BaseModel, Field

from swecli.llm.base import CancelToken
from swecli.records import datarecord
from swecli.tools.base import Tool, ToolContext, ToolResult
from swecli.tools.facts import ToolFacts, declare, one_line
from swecli.tools.sandbox import Denial, Launch, Reports, Sandbox
from swecli.tools.spare import SETTLE, SPARES, Spares
from swecli.tools.spool import FullOutput, Spool
from swecli.tools.visible import without_colours

MAX_TIMEOUT = 600.0
POLL_SECONDS = 0.1
TERM_GRACE = 0.5
"""After SIGTERM, how long the process group gets to exit before SIGKILL."""
PIPE_GRACE = 0.5
"""After the shell exits, how long background jobs may keep the output pipe open before being stopped."""

# No pagers or credential prompts: nobody can answer them, and stdin is /dev/null.
_ENV_OVERRIDES = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}


class BashArgs(BaseModel):
    command: str = Field(min_length=1, description="The bash command line to run.")
    timeout: float | None = Field(None, gt=0, le=MAX_TIMEOUT,
                                  description="Seconds before the command is killed (default set by the user).")


class OutputBuffer:
    """Keeps the first and last `limit // 2` bytes of a stream of any size for the model, and the whole
    stream in a spool (`full()`), so the cap limits what the model sees, never what is saved."""

    def __init__(self, limit: int) -> None:
        self.head_limit = max(limit // 2, 1)
        self.tail_limit = max(limit - self.head_limit, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.total_newlines = 0
        self.spool = Spool()

    @property
    def cut(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def full(self) -> FullOutput | None:
        """The whole output when `text()` is a cut of it; None (the spool is dropped) when it is not."""
        if not self.cut:
            self.spool.discard()
            return None
        return self.spool.finish()

    def write(self, data: bytes) -> None:
        self.spool.write(data)
        self.total += len(data)
        self.total_newlines += data.count(b"\n")
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        if len(self.tail) > self.tail_limit:
            del self.tail[: len(self.tail) - self.tail_limit]

    def text(self) -> str:
        if self.total == len(self.head) + len(self.tail):
            return (self.head + self.tail).decode("utf-8", errors="replace")
        head, tail = bytes(self.head), bytes(self.tail)
        # Cut at line boundaries when one is near, so the model never sees half a line.
        newline = head.rfind(b"\n")
        if newline >= len(head) // 2:
            head = head[: newline + 1]
        newline = tail.find(b"\n")
        if 0 <= newline < len(tail) // 2:
            tail = tail[newline + 1:]
        cut = self.total - len(head) - len(tail)
        cut_lines = self.total_newlines - head.count(b"\n") - tail.count(b"\n")
        note = f"\n... [{cut:,} bytes ({cut_lines:,} lines) cut from the middle of the output] ...\n"
        # errors="ignore": a character split by the cut is dropped rather than shown mangled.
        return head.decode("utf-8", errors="ignore") + note + tail.decode("utf-8", errors="ignore")


@datarecord
class _Outcome:
    exit_code: int | None = None
    stopped: str = ""
    """Why swecli stopped the command: "timeout", "cancel", "background" or ""."""
    duration: float = 0.0
    output: OutputBuffer = field(default_factory=lambda: OutputBuffer(30_000))
    notes: list[str] = field(default_factory=list)
    """What the sandbox did after the command (a protected file it created was moved aside)."""


def command_environment(ctx: ToolContext) -> dict[str, str]:
    """The environment a command gets: the allowlist, sandboxed or not, without pagers or prompts; a copy of
    its own for each caller (`CommandEnvironment.build` keeps what it judged while nothing changed)."""
    return {**ctx.environment.build(os.environ), **_ENV_OVERRIDES}


def get_ready(ctx: ToolContext) -> None:
    """While the model thinks: start the sandbox the next command will run in (`swecli/tools/spare.py`),
    and, once, the shell parser the approval policy reads the command with."""
    warm_parser()
    if ctx.sandbox is not None:
        SPARES.prepare(ctx.sandbox, command_environment(ctx), settle=SETTLE)


def stand_down() -> None:
    """The session is over (or its conversation cleared): no sandbox is left waiting for a command."""
    SPARES.close()


_parser_warmed = threading.Event()


def warm_parser() -> None:
    """Load tree-sitter-bash and the guard's modules on a thread of their own, once (~0.1 s of imports and
    grammar load that the first command would otherwise wait for; parsing takes the parser's lock)."""
    if _parser_warmed.is_set():
        return
    _parser_warmed.set()

    def load() -> None:
        from swecli.tools.guard import dangerous_reason
        from swecli.tools.readonly import is_read_only

        dangerous_reason("true")
        is_read_only("true")

    threading.Thread(target=load, name="swecli-shell-parser", daemon=True).start()


def run_command(command: str, ctx: ToolContext, timeout: float, sandbox: Sandbox | None = None,
                spares: Spares = SPARES) -> _Outcome:
    outcome = _Outcome(output=OutputBuffer(ctx.max_output_chars))
    start = time.monotonic()
    argv = ["/bin/bash", "-c", command]
    env = command_environment(ctx)
    started = spares.take(sandbox, env, argv) if sandbox is not None else None
    launch = started[0] if started else sandbox.launch(argv, env) if sandbox is not None else None
    try:
        proc = started[1] if started else _start_sandboxed(launch, ctx) if launch else _start(argv, env, (), ctx)
        _run(proc, ctx, outcome, start + timeout, launch.reports if launch else None, spares)
    finally:
        if launch is not None:  # the checks, after the namespace's end (or its note)
            outcome.notes += launch.close()
    outcome.duration = time.monotonic() - start
    return outcome


def _start(argv: list[str], env: dict[str, str], pass_fds: tuple[int, ...], ctx: ToolContext,
           stdout: int = subprocess.PIPE) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv, cwd=ctx.root, stdin=subprocess.DEVNULL, stdout=stdout,
        stderr=subprocess.STDOUT, start_new_session=True, env=env, pass_fds=pass_fds,
    )


def _start_sandboxed(launch: Launch, ctx: ToolContext) -> subprocess.Popen[bytes]:
    reports = launch.reports
    stdout = reports.messages if reports is not None else subprocess.PIPE
    proc = _start(launch.argv, launch.env, launch.descriptors, ctx, stdout)
    if reports is not None:
        reports.started()
        reports.learn_init()
    return proc


def _run(proc: subprocess.Popen[bytes], ctx: ToolContext, outcome: _Outcome, deadline: float,
         reports: Reports | None = None, spares: Spares = SPARES) -> None:
    """Pump the command's output until it is done or must be stopped. A sandboxed command's end is its
    runner's report (`sandbox.Reports`): then its group is killed (what the command left running ends with
    it, as bwrap's exit would end it a moment later) and bwrap is reaped off the path."""
    fd = reports.output if reports is not None else _stdout(proc)
    stream = _Stream(proc, fd, outcome.output, _live_listener(ctx.on_output),
                     status_fd=reports.status if reports is not None else -1)
    try:
        outcome.stopped = _supervise(stream, ctx.cancel, deadline)
        if outcome.stopped:
            _kill_group(stream)
    finally:
        stream.close()
        if proc.stdout is not None:
            proc.stdout.close()
        # a command stopped by a timeout or Esc keeps bwrap's exit status, as before the runner reported; a
        # report read is the command's status even when bwrap's exit was seen (and reaped) first
        reported = stream.status is not None and outcome.stopped in ("", "background")
        running = proc.poll() is None  # reported, or something above failed: never leave the group running
        if running or reports is not None:  # a sandbox's init (in the group) may outlive bwrap
            _signal_group(proc.pid, signal.SIGKILL)
        if reports is not None and not reports.wait_for_namespace():  # the checks must not race with what it
            outcome.notes.append(reports.end_namespace())  # left running: kill it, and say so if it lingered
        # bwrap's exit chain, and the mount namespace's teardown, are waited for off the path
        spares.reap(proc if running and reported else None, reports.release_mounts() if reports is not None else -1)
        outcome.exit_code = stream.status if reported else proc.wait()
        said = reports.said() if reports is not None else b""
        if said:  # bwrap could not set the sandbox up (or the runner failed): the reason is the output
            outcome.output.write(said)


def _stdout(proc: subprocess.Popen[bytes]) -> int:
    assert proc.stdout is not None
    return proc.stdout.fileno()


@datarecord
class _Stream:
    """The running shell and its output pipe."""

    proc: subprocess.Popen[bytes]
    fd: int
    out: OutputBuffer
    notify: Callable[[bytes], None] | None = None
    """Sees each chunk as it arrives (the live view of a running command)."""
    status_fd: int = -1
    """The runner's status pipe (`sandbox.Reports.status`, which closes it), -1 when there is none or once
    it has been read."""
    status: int | None = None
    """The command's exit status as its runner reported it."""
    status_read: bytes = b""
    eof: bool = False
    exited: int = -1
    """Once the output has ended: a descriptor (Linux's pidfd) that becomes readable when the shell exits,
    so its exit is seen as it happens rather than at the next step of `Popen.wait`'s sleep-and-poll loop
    (1, 2, 4 ms...: the sandbox's bwrap often exits just after the output ends)."""

    @property
    def ended(self) -> bool:
        """The command has ended: its runner reported its status, or the shell (or bwrap) has exited."""
        return self.status is not None or self.proc.poll() is not None

    @property
    def finished(self) -> bool:
        """The command has ended and nothing holds its output open any more."""
        return self.eof and self.ended

    def wait(self, seconds: float) -> None:
        """Read whatever output (or status) arrives within `seconds`; once output ended, wait for the end."""
        if self.eof:
            self._wait_exit(seconds)
            return
        watched = [self.fd] if self.status_fd < 0 else [self.fd, self.status_fd]
        ready, _, _ = select.select(watched, [], [], seconds)
        if self.status_fd in ready:
            self._read_status()
        if self.fd in ready:
            data = os.read(self.fd, 65536)
            self.eof = not data
            self.out.write(data)
            if data and self.notify is not None:
                self.notify(data)

    def _read_status(self) -> None:
        """One decimal line (the runner writes it with one `write`); end-of-file without one (the runner was
        killed, bwrap failed) or anything else leaves the exit status to the process's own."""
        data = os.read(self.status_fd, 64)
        self.status_read += data
        line, newline, _ = self.status_read.partition(b"\n")
        if newline or not data or len(self.status_read) > 16:
            self.status = int(line) if newline and line.isdigit() and int(line) < 256 else None
            self.status_fd = -1

    def _wait_exit(self, seconds: float) -> None:
        if self.exited < 0 and self.proc.returncode is None:  # not reaped: the pid is still this child's
            self.exited = _exit_descriptor(self.proc.pid)
        watched = [fd for fd in (self.status_fd, self.exited) if fd >= 0]
        if watched:
            ready, _, _ = select.select(watched, [], [], seconds)
            if self.status_fd in ready:
                self._read_status()
            if self.exited in ready:
                self.proc.poll()
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(seconds)

    def close(self) -> None:
        if self.exited >= 0:
            os.close(self.exited)
            self.exited = -1


def _exit_descriptor(pid: int) -> int:
    """A pidfd for `pid`, or -1 where there is none (not Linux, a kernel before 5.3): then `Popen.wait` polls."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return -1
    try:
        return int(opener(pid))
    except OSError:
        return -1


def _live_listener(on_output: Callable[[str], None] | None) -> Callable[[bytes], None] | None:
    """Decode chunks for `ToolContext.on_output` (a character split across two reads stays whole)."""
    if on_output is None:
        return None
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return lambda data: on_output(decoder.decode(data))


def _supervise(stream: _Stream, cancel: CancelToken, deadline: float) -> str:
    """Pump output until the command is done; returns why it must be stopped instead, or ""."""
    exited_at: float | None = None
    while True:
        stream.wait(POLL_SECONDS)
        if stream.finished:
            return ""
        now = time.monotonic()
        if cancel.cancelled:
            return "cancel"
        if now >= deadline:
            return "timeout"
        if exited_at is None and stream.ended:
            exited_at = now
        if exited_at is not None and now - exited_at >= PIPE_GRACE:
            return "background"  # the shell is done, but jobs it left behind still hold the output open


def _kill_group(stream: _Stream) -> None:
    """SIGTERM the whole group, then SIGKILL whatever ignored it; keep reading their last words."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _signal_group(stream.proc.pid, sig):
            return
        deadline = time.monotonic() + TERM_GRACE
        while time.monotonic() < deadline and not stream.finished:
            stream.wait(POLL_SECONDS)


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Signal every process in the group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # a member changed identity (setuid); keep trying the rest of the escalation
    return True


def _format(outcome: _Outcome, timeout: float) -> tuple[str, str]:
    """(content for the model, one-line summary for the person)."""
    output = without_colours(outcome.output.text()).rstrip("\n")  # the rest is escaped by the registry
    elapsed = f"{outcome.duration:.1f}s"
    label = {"timeout": "timed out", "cancel": "interrupted"}.get(outcome.stopped, f"exit {outcome.exit_code}")
    return "\n".join([output or "(no output)", *_status(outcome, timeout)]), f"{label} · {elapsed}"


def _status(outcome: _Outcome, timeout: float) -> list[str]:
    """The lines after the output: why it stopped, and the exit code."""
    status = []
    if outcome.stopped == "timeout":
        status.append(f"timed out after {timeout:g}s (the command and everything it started were killed)")
    elif outcome.stopped == "cancel":
        status.append("interrupted by user")
    elif outcome.stopped == "background":
        status.append("background jobs still holding the output were stopped; redirect their output (e.g. "
                      "`cmd > log 2>&1 &`) to keep them running")
    status.append(f"exit code {outcome.exit_code}")
    return status


def bash(args: BashArgs, ctx: ToolContext) -> ToolResult:
    timeout = args.timeout if args.timeout is not None else ctx.bash_timeout
    sandbox = ctx.sandbox
    outcome = run_command(args.command, ctx, timeout, sandbox)
    denial = _denial(outcome, sandbox)
    note = ""
    if sandbox is not None and denial is not None:
        why = f"it failed in the sandbox ({denial.kind}: {denial.evidence})"
        if ctx.escalate is not None and not ctx.cancel.cancelled and ctx.escalate(why):
            note = f"[sandbox] {why}; the user allowed running it again outside the sandbox, which gave:\n"
            sandbox, denial = None, None
            outcome.output.spool.discard()  # the blocked run's output is superseded
            outcome = run_command(args.command, ctx, timeout)
    content, summary = _format(outcome, timeout)
    if outcome.notes:
        content += "\n" + "\n".join(outcome.notes)
    advice = ""
    if sandbox is not None and denial is not None:
        advice = sandbox.advice(denial)
        content += "\n" + advice
        summary += " · blocked by the sandbox"
    failed = outcome.exit_code != 0 or outcome.stopped in ("timeout", "cancel")
    meta = {"exit_code": outcome.exit_code, "duration": round(outcome.duration, 3), "command": args.command,
            "timed_out": outcome.stopped == "timeout", "interrupted": outcome.stopped == "cancel",
            "output_bytes": outcome.output.total, "output_lines": outcome.output.spool.lines,
            "sandbox": sandbox.mode if sandbox is not None else "off"}
    if denial is not None:
        meta["sandbox_denied"] = denial.kind
    full = outcome.output.full()
    if full is not None:  # every view of the whole output ends with what the model must not miss
        full.status = "\n".join(line for line in (note.strip(), *_status(outcome, timeout), advice) if line)
    return ToolResult(note + content, is_error=failed, summary=summary, meta=meta, full=full)


def _denial(outcome: _Outcome, sandbox: Sandbox | None) -> Denial | None:
    """The sandbox restriction that made the command fail, if that is what happened."""
    if sandbox is None or outcome.stopped or outcome.exit_code == 0:
        return None
    return sandbox.explain_failure(outcome.output.text())


def preview_bash(args: BashArgs, ctx: ToolContext) -> str:
    return args.command


def describe_command(args: Mapping[str, Any]) -> str:
    return one_line(args.get("command", ""), 160)


BASH_FACTS = ToolFacts(kind="shell", icon="⚡", verb="bash", describe=describe_command, key_args=("command",),
                       preview="tail", fold_after=4)
"""A command's verdict is at the end of its output; a test run stays verbatim a few steps (the fix follows)."""

BASH = Tool(
    name="bash",
    description=(
        "Run a command with /bin/bash -c in the project root and return its combined stdout+stderr and exit "
        "code. No stdin and no terminal: use non-interactive flags (e.g. `-y`, `--no-pager`). Each call is a "
        "fresh shell (cd and variables do not persist). Killed after `timeout` seconds (max "
        f"{MAX_TIMEOUT:g}). Long output keeps its head and tail. Prefer read_file/grep/list_files for "
        "reading and searching, and edit_file/write_file for changing files."
    ),
    args=BashArgs,
    fn=bash,
    mutating=True,
    preview=preview_bash,
    facts=BASH_FACTS,
    ready=get_ready,
    stand_down=stand_down,
)
declare(BASH.name, BASH.facts)
