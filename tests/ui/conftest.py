"""Fixtures of the REPL's pty tests: a home of the test's own and `start`, which spawns swecli in a real
pseudo-terminal, waits for the prompt and closes every terminal it started at the end."""

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
