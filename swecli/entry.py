"""The console-script entry point. `swecli --version` answers from here, before typer is imported; every
other command starts with what makes start-up cheaper (the collector off)."""

from __future__ import annotations

import gc
import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv in (["--version"], ["-V"]):
        from swecli import __version__

        print(f"swecli {__version__}")
        return
    # Start-up allocates a few hundred thousand objects (modules, classes, schemas) and frees almost none,
    # so the cyclic collector's passes over them find nothing: ~3% of a -p run's way to its first request.
    # Switched back on once the command is known (`cli`), or for -p when its first request is out
    # (`ui.headless`, which also freezes what start-up built, so later passes skip it).
    gc.disable()
    skip_httpx_cli()
    from swecli.cli import run_app

    try:
        run_app(argv)
    finally:
        leaving()


def leaving() -> None:
    """The command is over (its session closed, its output written): freeze the heap, so the collections the
    interpreter runs while it shuts down skip it. They visit every object the imports and the session built,
    for nothing, since the process is ending: after a REPL session that was ~1.5 s between its last line and
    the shell's prompt on a loaded machine (0.3 s with the heap frozen), ~0.3 s of CPU. Objects are still
    freed as their modules are cleared, and atexit handlers (logging's flush) still run; only garbage left
    in reference cycles is no longer collected at exit, as `os._exit` would not either.
    (-p froze start-up's objects at its first request already: `ui.headless`.)"""
    gc.freeze()


def skip_httpx_cli() -> None:
    """httpx's `__init__` imports its command-line client (`httpx._main`: click, rich.progress, pygments)
    whenever click is installed, and click comes with uvicorn (an `mcp` dependency): ~0.1 s of every start
    for a CLI swecli never runs. A `None` in `sys.modules` makes that import fail, which httpx handles (its
    `main` then only says the CLI's dependencies are missing)."""
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
