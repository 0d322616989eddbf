"""Run `python -m swecli ARGS...` and note, at every socket connect, the wall clock and the CPU the process
has used so far: `latency_bench.py` matches the connect to the server's arrival of the first chat request,
which gives the CPU time to the first request (what a loaded machine inflates far less than wall time).

    PROBE_LOG=FILE python bench/first_request_probe.py ARGS...

Standard library only, so the previous release's interpreter runs it unchanged. An audit hook, not a patch:
nothing in swecli is replaced. Lines are JSON: {"t": time.monotonic(), "cpu": time.process_time(),
"modules": len(sys.modules), "main": ..., "threads": ..., "phases": ...} (the monotonic clock is the
machine's, shared with the bench's server).

Instructions, which no load changes (Linux `perf_event_open`, user space only, the way
`perf stat -e instructions:u` counts them; null where the kernel refuses it, e.g. perf_event_paranoid 3):
- "main": millions of instructions the main thread has run since this probe started (the interpreter's
  own start before it, ~60 M, is not counted): the critical path of a `-p` run;
- "threads": the same for each other thread, by name (they hold the GIL for part of it, so they slow the
  main thread down on an idle machine as well);
- "phases": the main thread's count when each module of PHASES was first imported: where the path goes.
"""

from __future__ import annotations

import ctypes
import json
import os
import runpy
import struct
import sys
import threading
import time

LOG = os.environ.pop("PROBE_LOG")
PHASES = ("typer", "pydantic", "swecli.config", "httpx", "swecli.llm.transport", "swecli.assembly",
          "swecli.ui.headless", "swecli.tools.builtin", "swecli.retrieval.retrieval")
"""First imports that mark a step of the path: arguments (typer), settings (pydantic, config), the provider
(transport), the session (assembly, headless), its tools, just-in-time retrieval."""
PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}.get(os.uname().machine)


def instruction_counter() -> int | None:
    """A file descriptor counting the calling thread's user-space instructions, or None."""
    if PERF_EVENT_OPEN is None:
        return None
    attr = bytearray(64)  # struct perf_event_attr, PERF_ATTR_SIZE_VER0
    struct.pack_into("IIQ", attr, 0, 0, 64, 1)  # PERF_TYPE_HARDWARE, size, PERF_COUNT_HW_INSTRUCTIONS
    struct.pack_into("Q", attr, 40, (1 << 5) | (1 << 6))  # exclude_kernel, exclude_hv
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(PERF_EVENT_OPEN, (ctypes.c_char * 64).from_buffer(attr), 0, -1, -1, 0)
    return fd if fd >= 0 else None


def millions(fd: int | None) -> float | None:
    return struct.unpack("q", os.read(fd, 8))[0] / 1e6 if fd is not None else None


MAIN = instruction_counter()
THREADS: list[tuple[str, int | None]] = []
phases: dict[str, float | None] = {}


def count_threads() -> None:
    """Give every thread started from now on a counter of its own."""
    run = threading.Thread.run

    def counted(self: threading.Thread) -> None:
        THREADS.append((self.name, instruction_counter()))
        run(self)

    threading.Thread.run = counted  # type: ignore[method-assign]


def note(event: str, args: tuple[object, ...]) -> None:
    if event == "import" and args[0] in PHASES and args[0] not in phases:
        if threading.current_thread() is threading.main_thread():
            phases[str(args[0])] = millions(MAIN)
    elif event == "socket.connect":
        threads: dict[str, float] = {}
        for name, fd in list(THREADS):
            value = millions(fd)
            if value is not None:
                threads[name] = round(threads.get(name, 0.0) + value, 1)
        line = json.dumps({"t": time.monotonic(), "cpu": time.process_time(), "modules": len(sys.modules),
                           "main": millions(MAIN), "threads": threads, "phases": dict(phases)})
        with open(LOG, "a") as log:
            log.write(line + "\n")


if __name__ == "__main__":
    count_threads()
    sys.addaudithook(note)
    sys.argv = ["swecli", *sys.argv[1:]]
    runpy.run_module("swecli", run_name="__main__", alter_sys=True)
