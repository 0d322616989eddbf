"""Fixtures of the REPL's tests: a home of the test's own and `start`, which spawns swecli in a real
pseudo-terminal, waits for the prompt and closes every terminal it started at the end; `repl`, one real
REPL shared by the checks that start from an empty prompt; and no vocabulary load left waiting by a REPL
or `-p` run in this process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swecli.testing.server import ScriptedLLM
from tests.ui.harness import SharedRepl, Terminal, spawn_swecli


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def start(project: Path, home: Path) -> Iterator[Any]:
    terminals: list[Terminal] = []

    def _start(llm: ScriptedLLM, *extra: str) -> Terminal:
        term = spawn_swecli(llm.base_url, project, home, *extra)
        terminals.append(term)
        term.prompt()
        return term

    yield _start
    for term in terminals:
        term.close()


@pytest.fixture(scope="session")
def _live_repl() -> Iterator[list[SharedRepl]]:
    live: list[SharedRepl] = []
    yield live
    for shared in live:
        shared.close()


@pytest.fixture
def repl(_live_repl: list[SharedRepl], request: pytest.FixtureRequest,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedRepl]:
    """The shared REPL (`tests.ui.harness.SharedRepl`) at an empty default-mode prompt, a new conversation:
    started on first use, one per test process (xdist worker) for the REPL checks of every module; after a
    failed check, or one it cannot be brought back from, the next check starts a new one."""
    if not _live_repl:
        base = tmp_path_factory.mktemp("shared-repl")
        project, home = base / "project", base / "home"
        project.mkdir()
        home.mkdir()
        llm = ScriptedLLM([]).start()
        _live_repl.append(SharedRepl(spawn_swecli(llm.base_url, project, home), llm, project))
        try:
            _live_repl[0].term.prompt()
        except BaseException:
            _live_repl.pop().close()
            raise
    shared = _live_repl[0]
    shared.begin()
    failures = request.session.testsfailed
    yield shared
    try:
        if request.session.testsfailed == failures:  # passed: back to an empty prompt, or say why not
            shared.reset()
            return
    except BaseException:
        _live_repl.pop().close()
        raise
    _live_repl.pop().close()  # failed: whatever state it left, the next check starts afresh


@pytest.fixture(autouse=True)
def _no_vocabulary_load_waiting() -> Iterator[None]:
    """A REPL or `-p` run in this process (`tests.ui.harness.in_process`, `tests.helpers.swecli_in_process`)
    loads the vocabulary once a request has been in flight a moment (`vocabulary_after_first_request`); when
    none was, its loader is left waiting for one, and while it waits every count in this process is an
    estimate: another test's too (the calibration line of /context went missing that way). Before and after
    each test, such a loader loads now (once per process; at once when it is loaded already)."""
    _release_waiting_loads()
    yield
    _release_waiting_loads()


def _release_waiting_loads() -> None:
    from swecli.context import tokens

    for name in tokens.ENCODING_NAMES:
        if tokens.loading(name):
            tokens.wait_loaded(name)
