"""Run `python -m swecli ARGS...` (or a script: PROBE_SCRIPT) and end it at a point of its start, writing the
user-space instructions of its main thread and of every other thread so far (millions, Linux
`perf_event_open`, as `perf stat -e instructions:u` counts them; from this probe's start, without the
interpreter's own ~60 M) to PROBE_LOG as JSON. Used by `start_instructions.py`.

    PROBE_LOG=FILE PROBE_UNTIL=request|prompt python bench/start_probe.py ARGS...

- `request`: the connect that sends the first chat request (a thread named `swecli-*-stream`; with
  PROBE_SCRIPT, the first connect of any thread);
- `prompt`: the REPL's prompt, once prompt-toolkit has drawn it the first time (its `Renderer.render`
  is wrapped when its module loads: the one thing this probe changes, and only to know when to stop);
- `exit`: the process's end (the last exit handler: after the session closed and its handlers ran).

Standard library only, so an older tree's interpreter runs it unchanged.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import json
import os
import runpy
import sys
import threading
from types import ModuleType
from typing import Any

from thread_instructions import count_threads, instruction_counter, millions, per_thread

LOG = os.environ.pop("PROBE_LOG")
UNTIL = os.environ.pop("PROBE_UNTIL", "request")
SCRIPT = os.environ.pop("PROBE_SCRIPT", "")
MAIN = instruction_counter()
if MAIN is None:
    raise SystemExit("start_probe: the kernel refuses to count instructions (perf_event_paranoid?)")


def finish() -> None:
    with open(LOG, "w") as log:
        json.dump({"main": millions(MAIN), "threads": per_thread(), "modules": len(sys.modules)}, log)
    os._exit(0)


def at_connect(event: str, args: tuple[Any, ...]) -> None:
    if event == "socket.connect" and (SCRIPT or threading.current_thread().name.endswith("-stream")):
        finish()


class PromptDrawn(importlib.abc.MetaPathFinder):
    """Loads `prompt_toolkit.renderer` as usual, then ends the process after its first `Renderer.render`."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name != "prompt_toolkit.renderer":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            load(module)
            render = module.Renderer.render

            def render_then_finish(self: Any, *args: Any, **kwargs: Any) -> None:
                render(self, *args, **kwargs)
                finish()

            module.Renderer.render = render_then_finish

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if __name__ == "__main__":
    count_threads()
    if UNTIL == "prompt":
        sys.meta_path.insert(0, PromptDrawn())
    elif UNTIL == "exit":
        atexit.register(finish)  # registered first, so it runs last
    else:
        sys.addaudithook(at_connect)
    if SCRIPT:
        sys.argv = [SCRIPT, *sys.argv[1:]]
        runpy.run_path(SCRIPT, run_name="__main__")
    else:
        sys.argv = ["swecli", *sys.argv[1:]]
        runpy.run_module("swecli", run_name="__main__", alter_sys=True)
