"""Run `python -m swecli ARGS...` and note, at every socket connect, the wall clock and the CPU the process
has used so far: `latency_bench.py` matches the connect to the server's arrival of the first chat request,
which gives the CPU time to the first request (what a loaded machine inflates far less than wall time).

    PROBE_LOG=FILE python bench/first_request_probe.py ARGS...

Standard library only, so the previous release's interpreter runs it unchanged. An audit hook, not a patch:
nothing in swecli is replaced. Lines are JSON: {"t": time.monotonic(), "cpu": time.process_time(),
"modules": len(sys.modules)} (the monotonic clock is the machine's, shared with the bench's server)."""

from __future__ import annotations

import json
import os
import runpy
import sys
import time

LOG = os.environ.pop("PROBE_LOG")


def note_connect(event: str, args: tuple[object, ...]) -> None:
    if event == "socket.connect":
        line = json.dumps({"t": time.monotonic(), "cpu": time.process_time(), "modules": len(sys.modules)})
        with open(LOG, "a") as log:
            log.write(line + "\n")


if __name__ == "__main__":
    sys.addaudithook(note_connect)
    sys.argv = ["swecli", *sys.argv[1:]]
    runpy.run_module("swecli", run_name="__main__", alter_sys=True)
