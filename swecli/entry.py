"""The console-script entry point. `swecli --version` answers from here, before typer is imported; every
other command starts with what makes start-up cheaper (the collector off)."""

from __future__ import annotations

import gc
import sys
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import types
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec


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
    from swecli import compiled

    compiled.install()  # before typer, pydantic and swecli make their dataclasses
    skip_httpx_cli()
    skip_pydantic_plugins()
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
    (-p froze start-up's objects at its first request already: `ui.headless`.)
    What start-up compiled that the kept code (`swecli.compiled`) did not have is written for the next start."""
    gc.freeze()
    compiled = sys.modules.get("swecli.compiled")
    if compiled is not None:
        compiled.save()


def skip_httpx_cli() -> None:
    """httpx's `__init__` imports its command-line client (`httpx._main`: click, rich.progress, pygments)
    whenever click is installed, and click comes with uvicorn (an `mcp` dependency): ~0.1 s of every start
    for a CLI swecli never runs. A `None` in `sys.modules` makes that import fail, which httpx handles (its
    `main` then only says the CLI's dependencies are missing)."""
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


def skip_pydantic_plugins() -> None:
    """pydantic looks for plugins in every installed distribution's entry points when it builds its first
    validator (`pydantic.plugin._loader`: `importlib.metadata`, with email, csv and zipfile, then a read of every
    `*.dist-info` in the environment): ~20 ms of the main thread on every start, before the first request. swecli
    has no plugin and wants none: a plugin is called with every value swecli validates (settings with API keys,
    the conversation, tool arguments), so any package installed beside it (an observability plugin configured
    for another program) would see them. typer already builds its adapters without plugins
    (`typer._adapters.disabled_pydantic_plugins`). When pydantic imports its loader (`plugin._schema_validator`,
    by name, as it builds a validator), it gets one that finds none. Not through the environment
    (`PYDANTIC_DISABLE_PLUGINS`): the commands swecli runs would inherit it."""
    sys.meta_path.insert(0, _PluginFreeLoader())


class _PluginFreeLoader:
    """Finds `pydantic.plugin._loader`, and nothing else, as a module whose `get_plugins` returns none."""

    NAME = "pydantic.plugin._loader"

    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if name != self.NAME:
            return None
        from importlib.machinery import ModuleSpec

        return ModuleSpec(name, cast("Loader", self))

    def create_module(self, spec: ModuleSpec) -> None:
        return None  # the default module

    def exec_module(self, module: types.ModuleType) -> None:
        vars(module)["get_plugins"] = _no_plugins


def _no_plugins() -> tuple[()]:
    return ()
