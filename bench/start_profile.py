"""Where `swecli -p`'s main thread goes before its first chat request, in instructions (no load changes them):
each module's import, inclusive and exclusive (what its own top level ran: its classes, pydantic models and
dataclasses), grouped by package, and the main thread's count when each step of the start begins. The 2-file
sample project of `latency_bench.py`, warm; the scripted server on loopback; one run (counts repeat to ~0.5%).

    python bench/start_profile.py [--tree DIR] [--top 40] [--closure-frozen]

A tree is a checkout with its own `.venv` (default: this one). Run as `PROFILE_LOG=FILE python
start_profile.py ARGS...` it is the probe instead (standard library only, so an older tree runs it): it wraps
`importlib._bootstrap._load_unlocked` to time each import on the main thread, and the STEPS functions when
their modules load, and ends the process at the connect that sends the first chat request.

`--closure-frozen` measures what Python 3.11's frozen dataclasses cost: in the probed process only, each frozen
class's `__setattr__`/`__delattr__` are closures with the same test and errors instead of source compiled per
class (`dataclasses._frozen_get_del_attr`). A measurement, not a proposal to patch the standard library.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import json
import os
import runpy
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

STEPS = (
    ("swecli.cli", "run", "arguments parsed"),
    ("swecli.cli", "_settings_beside", "project trust done, settings"),
    ("swecli.cli", "_run_print", "session's modules imported"),
    ("swecli.assembly", "open_subsystems", "recorder open, subsystems"),
    ("swecli.assembly", "build_agent", "provider made, agent"),
    ("swecli.assembly", "build_policy", "policy and sandbox"),
    ("swecli.assembly", "build_tools", "tools"),
    ("swecli.assembly", "memory_blocks", "memory"),
    ("swecli.context.manager", "ContextManager.from_settings", "tool schemas done, context engine"),
    ("swecli.assembly", "AgentSession._attach_named_context", "just-in-time retrieval"),
    ("swecli.agent", "Agent.run", "the loop"),
    ("swecli.agent", "Agent._ready_tools", "tools readied (spare sandbox, shell parser)"),
    ("swecli.agent", "Agent._stream", "the request streamed"),
)
"""(module, function, what begins there): the main thread's count is noted at each one's first call."""


# --- the probe (inside the measured process) -----------------------------------------------------------


class _Probe:
    """The measured process's counts: each import on the main thread, and the main thread at each step."""

    def __init__(self, log: str) -> None:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from thread_instructions import instruction_counter, millions

        self.log = log
        self.counter = instruction_counter()
        self.millions: Callable[[int | None], float | None] = millions
        self.stack: list[list[Any]] = []
        self.imports: dict[str, tuple[float, float, int, str]] = {}
        self.steps: list[tuple[str, float]] = []

    def now(self) -> float:
        return self.millions(self.counter) or 0.0

    def timed(self, load: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """`importlib._bootstrap._load_unlocked`, noting each main-thread import's count, with and without
        the imports it made."""

        def timed_load(spec: Any) -> Any:
            if threading.current_thread() is not threading.main_thread():
                return load(spec)
            self.stack.append([spec.name, self.now(), 0.0])
            try:
                return load(spec)
            finally:
                name, start, children = self.stack.pop()
                inclusive = self.now() - start
                parent = self.stack[-1][0] if self.stack else ""
                self.imports[name] = (round(inclusive, 2), round(inclusive - children, 2), len(self.imports), parent)
                if self.stack:
                    self.stack[-1][2] += inclusive

        return timed_load

    def noted(self, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is threading.main_thread() and label not in dict(self.steps):
                self.steps.append((label, round(self.now(), 1)))
            return function(*args, **kwargs)

        return call

    def at_connect(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "socket.connect" and threading.current_thread().name.endswith("-stream"):
            from thread_instructions import per_thread

            with open(self.log, "w") as out:
                json.dump({"main": self.now(), "threads": per_thread(), "imports": self.imports,
                           "steps": self.steps}, out)
            os._exit(0)


class _Steps(importlib.abc.MetaPathFinder):
    """Loads the modules of STEPS as usual, then wraps their step functions (`_Probe.noted`)."""

    def __init__(self, probe: _Probe) -> None:
        self.probe = probe

    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        wanted = [(qualname, label) for module, qualname, label in STEPS if module == name]
        spec = importlib.machinery.PathFinder.find_spec(name, path) if wanted else None
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            for qualname, label in wanted:
                *owners, attribute = qualname.split(".")
                owner: Any = functools.reduce(getattr, owners, module)
                setattr(owner, attribute, self.probe.noted(label, getattr(owner, attribute)))

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _closure_frozen_methods() -> None:
    """`dataclasses._frozen_get_del_attr` as closures: what dataclasses compiles for every frozen class."""
    import dataclasses

    def frozen_methods(cls: Any, fields: list[Any], globals: Any) -> tuple[Callable[..., None], ...]:
        names = frozenset(f.name for f in fields)

        def __setattr__(self: Any, name: str, value: Any) -> None:
            if type(self) is cls or name in names:
                raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
            super(cls, self).__setattr__(name, value)

        def __delattr__(self: Any, name: str) -> None:
            if type(self) is cls or name in names:
                raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
            super(cls, self).__delattr__(name)

        return __setattr__, __delattr__

    dataclasses._frozen_get_del_attr = frozen_methods  # type: ignore[attr-defined]


def _probe(log: str) -> None:
    import importlib._bootstrap as bootstrap

    if os.environ.pop("PROFILE_CLOSURE_FROZEN", ""):
        _closure_frozen_methods()

    probe = _Probe(log)
    from thread_instructions import count_threads

    bootstrap._load_unlocked = probe.timed(bootstrap._load_unlocked)  # type: ignore[attr-defined]
    sys.meta_path.insert(0, _Steps(probe))
    count_threads()
    sys.addaudithook(probe.at_connect)
    sys.argv = ["swecli", *sys.argv[1:]]
    runpy.run_module("swecli", run_name="__main__", alter_sys=True)


# --- the driver ----------------------------------------------------------------------------------------


def _group(name: str) -> str:
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "swecli" else parts[0]


def _report(found: dict[str, Any], top: int) -> None:
    imports: dict[str, list[float]] = found["imports"]
    total = sum(row[1] for row in imports.values())
    own = sum(row[1] for name, row in imports.items() if name.startswith("swecli"))
    print(f"main thread to the request: {found['main']:,.0f} M; imports {total:,.0f} M (swecli's own modules "
          f"{own:,.0f} M), the rest {found['main'] - total:,.0f} M")
    print("other threads: " + ", ".join(f"{name} {count:,.0f}" for name, count in found["threads"].items()))
    print("\n| step begins | M instructions |\n|---|---|")
    for label, count in found["steps"]:
        print(f"| {label} | {count:,.0f} |")
    groups: dict[str, float] = {}
    for name, row in imports.items():
        groups[_group(name)] = groups.get(_group(name), 0.0) + row[1]
    print("\n| package (exclusive imports) | M |\n|---|---|")
    for name, count in sorted(groups.items(), key=lambda item: -item[1])[:top]:
        print(f"| {name} | {count:.1f} |")
    print("\n| module | inclusive | exclusive |\n|---|---|---|")
    for name, row in sorted(imports.items(), key=lambda item: -item[1][1])[:top]:
        print(f"| {name} | {row[0]:.1f} | {row[1]:.1f} |")


def _importers(found: dict[str, Any], minimum: float) -> None:
    """Each swecli module imported on the path whose import costs `minimum` M or more (inclusive), with the
    chain of imports that brought it in: which of swecli's modules pulls in what."""
    imports: dict[str, list[Any]] = found["imports"]
    print(f"\n| import (inclusive >= {minimum:g} M) | inclusive | exclusive | imported by |\n|---|---|---|---|")
    for name, row in sorted(imports.items(), key=lambda item: item[1][2]):
        if row[0] < minimum or not (name.startswith("swecli") or row[3].startswith("swecli")):
            continue
        chain, parent = [], row[3]
        while parent:
            chain.append(parent)
            parent = imports[parent][3] if parent in imports else ""
        print(f"| {name} | {row[0]:.1f} | {row[1]:.1f} | {' < '.join(chain) or '(the start)'} |")


def main() -> None:
    import argparse
    import subprocess
    import tempfile
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root / "bench"))
    sys.path.insert(0, str(root))
    from latency_bench import TASK, Tree, sample_project
    from start_instructions import warm_up

    from swecli.testing.server import Reply, ScriptedLLM

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", default=str(root), help="a checkout with its own .venv")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--importers", type=float, metavar="M", default=None,
                        help="also list each import on the path costing M or more that swecli makes, and its chain")
    parser.add_argument("--closure-frozen", action="store_true",
                        help="frozen dataclasses' __setattr__/__delattr__ as closures in the probed process")
    args = parser.parse_args()
    tree = Tree(Path(args.tree).name, Path(args.tree).resolve())
    project = sample_project(Path(tempfile.mkdtemp(prefix="start-profile-")))
    warm_up(tree, project)
    with tempfile.NamedTemporaryFile(prefix="profile-", suffix=".json") as log, \
            ScriptedLLM([Reply("done")], strict=False) as llm:
        argv = tree.argv(llm, "-p", TASK)
        argv[1:3] = [str(Path(__file__).resolve())]
        env = tree.env(PROFILE_LOG=log.name, PROFILE_CLOSURE_FROZEN="1" if args.closure_frozen else "")
        subprocess.run(argv, cwd=project, env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=300)
        text = Path(log.name).read_text()
    if not text:
        raise SystemExit(f"{tree.label}: -p did not reach its first request")
    _report(json.loads(text), args.top)
    if args.importers is not None:
        _importers(json.loads(text), args.importers)


if __name__ == "__main__":
    if "PROFILE_LOG" in os.environ:
        _probe(os.environ.pop("PROFILE_LOG"))
    else:
        main()
