"""Fixtures of the REPL's tests: a home of the test's own and `start`, which spawns swecli in a real
pseudo-terminal, waits for the prompt and closes every terminal it started at the end; and no vocabulary
load left waiting by a REPL or `-p` run in this process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swecli.testing.server import ScriptedLLM
from tests.ui.harness import Terminal, spawn_swecli


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
