"""Per-thread user-space instruction counters for the start-up probes (`first_request_probe.py`,
`start_probe.py`): Linux `perf_event_open`, user space only, as `perf stat -e instructions:u` counts them.
Standard library only, so an older tree's interpreter runs the probes unchanged."""

from __future__ import annotations

import ctypes
import os
import struct
import threading

PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}.get(os.uname().machine)
THREADS: list[tuple[str, int | None]] = []
"""(name, counter) of every thread started since `count_threads()`."""


def instruction_counter() -> int | None:
    """A file descriptor counting the calling thread's user-space instructions, or None where the kernel
    refuses it (e.g. perf_event_paranoid 3) or the machine is not one of PERF_EVENT_OPEN's."""
    if PERF_EVENT_OPEN is None:
        return None
    attr = bytearray(64)  # struct perf_event_attr, PERF_ATTR_SIZE_VER0
    struct.pack_into("IIQ", attr, 0, 0, 64, 1)  # PERF_TYPE_HARDWARE, size, PERF_COUNT_HW_INSTRUCTIONS
    struct.pack_into("Q", attr, 40, (1 << 5) | (1 << 6))  # exclude_kernel, exclude_hv
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(PERF_EVENT_OPEN, (ctypes.c_char * 64).from_buffer(attr), 0, -1, -1, 0)
    return fd if fd >= 0 else None


def millions(fd: int | None) -> float | None:
    """Millions of instructions counted so far, or None without a counter."""
    return struct.unpack("q", os.read(fd, 8))[0] / 1e6 if fd is not None else None


def count_threads() -> None:
    """Give every thread started from now on a counter of its own (in THREADS)."""
    run = threading.Thread.run

    def counted(self: threading.Thread) -> None:
        THREADS.append((self.name, instruction_counter()))
        run(self)

    threading.Thread.run = counted  # type: ignore[method-assign]


def per_thread() -> dict[str, float]:
    """Millions of instructions of each counted thread so far, summed by name."""
    threads: dict[str, float] = {}
    for name, fd in list(THREADS):
        value = millions(fd)
        if value is not None:
            threads[name] = round(threads.get(name, 0.0) + value, 1)
    return threads
