"""Run `python -m swecli ARGS...` and note, around every model call of the agent loop, the loop thread's CPU
time and the wall clock: `call_path_bench.py` reads the gap between a reply's return and the next request's
start, which is swecli's own work per tool call on the loop (the command's own processes are not this
thread's CPU). With PROBE_PROFILE set, the loop thread is also profiled inside those gaps only (cProfile),
and the stats are written to PROBE_PROFILE at exit.

    PROBE_LOG=FILE [PROBE_PROFILE=FILE PROBE_CALLS=N] python bench/call_path_probe.py ARGS...

`Agent._stream` is wrapped, nothing else; both the previous release and this tree have it, so one probe
compares them. Lines are JSON: {"what": "send"|"back", "cpu": time.thread_time(), "t": time.monotonic()}.
"""

from __future__ import annotations

import atexit
import cProfile
import json
import os
import runpy
import sys
import time
from typing import Any

LOG = os.environ.pop("PROBE_LOG")
PROFILE = os.environ.pop("PROBE_PROFILE", "")
CALLS = int(os.environ.pop("PROBE_CALLS", "0"))
"""How many replies carry tool calls: the gap after the last one (the answer, then exit) is not profiled."""


def main() -> None:
    from swecli import agent

    stream = agent.Agent._stream
    profile = cProfile.Profile(time.thread_time) if PROFILE else None  # CPU, not wall
    marks: list[dict[str, Any]] = []

    def note(what: str) -> None:
        marks.append({"what": what, "cpu": time.thread_time(), "t": time.monotonic()})

    def wrapped(self: Any, request: Any) -> Any:
        note("send")
        if profile is not None:
            profile.disable()
        try:
            return stream(self, request)
        finally:
            note("back")
            if profile is not None and sum(m["what"] == "back" for m in marks) <= CALLS:
                profile.enable()

    def dump() -> None:
        if profile is not None:
            profile.disable()
            profile.dump_stats(PROFILE)
        with open(LOG, "w") as log:
            log.writelines(json.dumps(mark) + "\n" for mark in marks)

    agent.Agent._stream = wrapped  # type: ignore[method-assign]
    atexit.register(dump)
    sys.argv = ["swecli", *sys.argv[1:]]
    runpy.run_module("swecli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
