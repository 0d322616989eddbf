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

import json
import os
import runpy
import sys
import threading
import time

from thread_instructions import count_threads, instruction_counter, millions, per_thread

LOG = os.environ.pop("PROBE_LOG")
PHASES = ("typer", "pydantic", "swecli.config", "httpx", "swecli.llm.transport", "swecli.assembly",
          "swecli.ui.headless", "swecli.tools.builtin", "swecli.retrieval.retrieval")
"""First imports that mark a step of the path: arguments (typer), settings (pydantic, config), the provider
(transport), the session (assembly, headless), its tools, just-in-time retrieval."""
MAIN = instruction_counter()
phases: dict[str, float | None] = {}


def note(event: str, args: tuple[object, ...]) -> None:
    if event == "import" and args[0] in PHASES and args[0] not in phases:
        if threading.current_thread() is threading.main_thread():
            phases[str(args[0])] = millions(MAIN)
    elif event == "socket.connect":
        line = json.dumps({"t": time.monotonic(), "cpu": time.process_time(), "modules": len(sys.modules),
                           "main": millions(MAIN), "threads": per_thread(), "phases": dict(phases)})
        with open(LOG, "a") as log:
            log.write(line + "\n")


if __name__ == "__main__":
    count_threads()
    sys.addaudithook(note)
    sys.argv = ["swecli", *sys.argv[1:]]
    runpy.run_module("swecli", run_name="__main__", alter_sys=True)
