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

    run_app(argv)


def skip_httpx_cli() -> None:
    """httpx's `__init__` imports its command-line client (`httpx._main`: click, rich.progress, pygments)
    whenever click is installed, and click comes with uvicorn (an `mcp` dependency): ~0.1 s of every start
    for a CLI swecli never runs. A `None` in `sys.modules` makes that import fail, which httpx handles (its
    `main` then only says the CLI's dependencies are missing)."""
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
