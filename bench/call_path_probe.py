"""Run `python -m swecli ARGS...` and note, around every model call of the agent loop, the loop thread's CPU
time and the wall clock: `call_path_bench.py` reads the gap between a reply's return and the next request's
start, which is swecli's own work per tool call on the loop (the command's own processes are not this
thread's CPU). With PROBE_PROFILE set, the loop thread is also profiled inside those gaps only (cProfile),
and the stats are written to PROBE_PROFILE at exit.

    PROBE_LOG=FILE [PROBE_PROFILE=FILE PROBE_CALLS=N] python bench/call_path_probe.py ARGS...

`Agent._stream` is wrapped, nothing else; both the previous release and this tree have it, so one probe
compares them. Lines are JSON: {"what": "send"|"back", "cpu": time.thread_time(), "t": time.monotonic(),
"ins": the loop thread's user-space instructions in millions (None where perf counters are refused), "waits" and
"preempted": its voluntary and involuntary context switches so far (`getrusage(RUSAGE_THREAD)`: a wait for
another thread or process, the GIL included, is a voluntary one)}.
"""

from __future__ import annotations

import atexit
import cProfile
import json
import os
import resource
import runpy
import sys
import time
from typing import Any

from thread_instructions import instruction_counter, millions

LOG = os.environ.pop("PROBE_LOG")
PROFILE = os.environ.pop("PROBE_PROFILE", "")
CALLS = int(os.environ.pop("PROBE_CALLS", "0"))
"""How many replies carry tool calls: the gap after the last one (the answer, then exit) is not profiled."""
SECTIONS = [name for name in os.environ.pop("PROBE_SECTIONS", "").split(",") if name]
"""`module:Class.method` or `module:function` to time on the loop thread (CPU, summed, written to
PROBE_LOG as {"what": "section", ...} lines): where a call's CPU goes without cProfile's inflation."""
MARKS = [name for name in os.environ.pop("PROBE_MARKS", "").split(",") if name]
"""`module:Class.method` or `module:function` whose every call is marked on entry and exit, on any thread
(wall clock and the thread's name, written as {"what": "mark", ...} lines): the step table of one call
(`call_path_bench.py --steps`)."""


def main() -> None:
    from swecli import agent

    stream = agent.Agent._stream
    profile = cProfile.Profile(time.thread_time) if PROFILE else None  # CPU, not wall
    marks: list[dict[str, Any]] = []

    counter: list[int | None] = []

    def note(what: str) -> None:
        if not counter:  # the loop's own thread: the first note is made on it
            counter.append(instruction_counter())
        usage = resource.getrusage(resource.RUSAGE_THREAD)
        marks.append({"what": what, "cpu": time.thread_time(), "t": time.monotonic(), "ins": millions(counter[0]),
                      "waits": usage.ru_nvcsw, "preempted": usage.ru_nivcsw})

    def wrapped(self: Any, request: Any) -> Any:
        note("send")
        if profile is not None:
            profile.disable()
        try:
            return stream(self, request)
        finally:
            note("back")
            _REPLIES[0] += 1
            if profile is not None and sum(m["what"] == "back" for m in marks) <= CALLS:
                profile.enable()

    def dump() -> None:
        if profile is not None:
            profile.disable()
            profile.dump_stats(PROFILE)
        with open(LOG, "w") as log:
            log.writelines(json.dumps(mark) + "\n" for mark in marks)

    agent.Agent._stream = wrapped  # type: ignore[method-assign]
    atexit.register(dump)  # registered first: runs last
    spent = {name: [0.0, 0, 0.0] for name in SECTIONS}
    for name in SECTIONS:
        _time_section(name, spent[name])
    atexit.register(lambda: marks.extend({"what": "section", "name": n, "cpu": c, "n": k, "ins": i}
                                         for n, (c, k, i) in spent.items()))
    for name in MARKS:
        _mark_calls(name, marks)
    if MARKS:
        _mark_collections(marks)
    sys.argv = ["swecli", *sys.argv[1:]]
    runpy.run_module("swecli", run_name="__main__", alter_sys=True)


def _time_section(name: str, total: list[Any]) -> None:
    import functools
    import threading

    owner, last, original = _resolve(name)
    main = threading.main_thread()

    @functools.wraps(original)
    def timed(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is not main or _REPLIES[0] < 2:  # the first call's one-time costs left out
            return original(*args, **kwargs)
        counter = _section_counter()
        start, counted = time.thread_time(), millions(counter)
        try:
            return original(*args, **kwargs)
        finally:
            total[0] += time.thread_time() - start
            total[1] += 1
            if counted is not None:
                total[2] += (millions(counter) or 0.0) - counted

    setattr(owner, last, timed)


_SECTION_COUNTER: list[int | None] = []
_REPLIES = [0]
"""Replies returned so far: sections are timed from the second reply on (the second call, then the rest)."""


def _section_counter() -> int | None:
    """The main thread's instruction counter for the sections (opened on it, at its first section). Each
    reading is a `read` of ~1,500 user-space instructions, counted in the sections around it."""
    if not _SECTION_COUNTER:
        _SECTION_COUNTER.append(instruction_counter())
    return _SECTION_COUNTER[0]


def _mark_calls(name: str, marks: list[dict[str, Any]]) -> None:
    import functools
    import threading

    owner, last, original = _resolve(name)

    @functools.wraps(original)
    def marked(*args: Any, **kwargs: Any) -> Any:
        thread = threading.current_thread().name
        marks.append({"what": "mark", "name": name, "edge": "enter", "t": time.monotonic(), "thread": thread})
        try:
            return original(*args, **kwargs)
        finally:
            marks.append({"what": "mark", "name": name, "edge": "exit", "t": time.monotonic(), "thread": thread})

    setattr(owner, last, marked)


def _mark_collections(marks: list[dict[str, Any]]) -> None:
    """The cyclic collector's passes, as marks named `gc<generation>` (a pass stops every thread)."""
    import gc
    import threading

    def note(phase: str, info: dict[str, Any]) -> None:
        edge = "enter" if phase == "start" else "exit"
        marks.append({"what": "mark", "name": f"gc{info['generation']}", "edge": edge, "t": time.monotonic(),
                      "thread": threading.current_thread().name})

    gc.callbacks.append(note)


def _resolve(name: str) -> tuple[Any, str, Any]:
    import importlib

    module_name, _, attr = name.partition(":")
    owner: Any = importlib.import_module(module_name)
    *path, last = attr.split(".")
    for part in path:
        owner = getattr(owner, part)
    return owner, last, getattr(owner, last)


if __name__ == "__main__":
    main()
