"""The console-script entry point. `swecli --version` answers from here, before typer is imported; every
other command starts with what makes start-up cheaper (the collector off, dataclass code kept)."""

from __future__ import annotations

import gc
import os
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
    keep_dataclass_code()
    skip_httpx_cli()
    from swecli.cli import run_app

    run_app(argv)


def skip_httpx_cli() -> None:
    """httpx's `__init__` imports its command-line client (`httpx._main`: click, rich.progress, pygments)
    whenever click is installed, and click comes with uvicorn (an `mcp` dependency): ~0.1 s of every start
    for a CLI swecli never runs. A `None` in `sys.modules` makes that import fail, which httpx handles (its
    `main` then only says the CLI's dependencies are missing)."""
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


DATACLASS_CODE_ENTRIES = 6_000
"""Past this many kept functions (old code's, after upgrades), the file is rewritten with this run's only."""


def dataclass_code_path(env: dict[str, str] | os._Environ[str] = os.environ) -> str:
    """`$XDG_CACHE_HOME/swecli/dataclasses-TAG.marshal`: per user and per interpreter (marshal's format)."""
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser(env.get("HOME", "~")), ".cache")
    return os.path.join(base, "swecli", f"dataclasses-{sys.implementation.cache_tag}.marshal")


def keep_dataclass_code(path: str | None = None) -> None:
    """Compile the functions `@dataclass` writes (`__init__`, `__repr__`, `__eq__`, ...) once per user, not
    in every process. Python 3.11's dataclasses generate each one as source and `exec` it: ~150 dataclasses
    on a -p run's path, ~6 functions each, were ~17% of its instructions before the first request, nearly
    all in the compiler. The module's `exec` is given code objects compiled from the same text (kept with
    `marshal`, keyed by that text, so a changed class simply misses), which `exec` runs as it would the
    text. New entries are written at exit, atomically; a missing or damaged file is an empty cache."""
    import atexit
    import builtins
    import dataclasses
    import marshal
    from collections.abc import Mapping
    from types import CodeType

    path = path or dataclass_code_path()
    try:
        with open(path, "rb") as handle:
            kept: dict[str, CodeType] = marshal.load(handle)
    except (OSError, EOFError, ValueError, TypeError):
        kept = {}
    used: dict[str, CodeType] = {}
    compiled: dict[str, CodeType] = {}

    def cached_exec(text: str, globals_: dict[str, object] | None = None,
                    locals_: Mapping[str, object] | None = None) -> None:
        code = used.get(text) or kept.get(text)
        if code is None:  # dont_inherit: compiled as dataclasses' own exec would (no __future__ of ours)
            code = compiled[text] = compile(text, "<string>", "exec", dont_inherit=True)
        used[text] = code
        builtins.exec(code, globals_, locals_)

    def save() -> None:
        if not compiled:
            return
        entries = {**kept, **used} if len(kept) + len(compiled) <= DATACLASS_CODE_ENTRIES else used
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            partial = f"{path}.{os.getpid()}.tmp"
            with open(partial, "wb") as handle:
                marshal.dump(entries, handle)
            os.replace(partial, path)
        except OSError:  # a read-only home: every run compiles, as before
            pass

    dataclasses.exec = cached_exec  # type: ignore[attr-defined]  # its module global, looked up before builtins
    atexit.register(save)
