"""The console-script entry point. `swecli --version` answers from here, before typer is imported."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv in (["--version"], ["-V"]):
        from swecli import __version__

        print(f"swecli {__version__}")
        return
    from swecli.cli import run_app

    run_app(argv)
