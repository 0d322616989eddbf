"""One exception tree: every exception class swecli defines derives from `SwecliError` (errors a reader
sees) or `ControlFlow` (signals), and the map in `swecli/errors.py` names each of them."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

import swecli
from swecli import errors
from swecli.agent import Finished, Interrupted
from swecli.config import ConfigError
from swecli.errors import ControlFlow, SwecliError
from swecli.llm.base import Cancelled, ContextOverflowError, ProviderError
from swecli.llm.retry import Retryable

PACKAGE = Path(swecli.__file__).parent
ROOTS = {"SwecliError", "ControlFlow"}


def _class_definitions(body: Iterable[ast.AST]) -> Iterator[ast.ClassDef]:
    """Every class statement in `body` and the blocks inside it. A class is a statement, so only statement
    bodies are visited, not the expressions (most of the tree, which `ast.walk` would visit too)."""
    for node in body:
        if isinstance(node, ast.ClassDef):
            yield node
        for block in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(node, block, None)
            if isinstance(inner, list):
                yield from _class_definitions(inner)


@functools.cache
def _exception_classes() -> dict[str, list[str]]:
    """Every class in swecli whose bases lead to Exception, by name -> its bases' names (parsed once per
    process: both tests below read it, and parsing the package is their whole cost)."""
    bases: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in _class_definitions(ast.parse(path.read_text(encoding="utf-8")).body):
            bases[node.name] = [b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases]

    def is_exception(name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name in ("Exception", "BaseException"):
            return True
        return name not in seen and any(is_exception(b, seen | {name}) for b in bases.get(name, ()))

    return {name: parents for name, parents in bases.items() if is_exception(name)}


def test_only_the_two_roots_derive_from_exception_directly() -> None:
    direct = {name for name, parents in _exception_classes().items() if "Exception" in parents}
    assert direct == ROOTS


def test_the_map_in_errors_names_every_exception_class() -> None:
    doc = errors.__doc__ or ""
    missing = [name for name in _exception_classes() if name not in ROOTS and name not in doc]
    assert missing == []


@pytest.mark.parametrize("error", [ConfigError, ProviderError, ContextOverflowError])
def test_errors_a_person_reads_are_swecli_errors(error: type[Exception]) -> None:
    assert issubclass(error, SwecliError)
    assert not issubclass(error, ControlFlow)


@pytest.mark.parametrize("signal", [Finished, Interrupted, Cancelled, Retryable])
def test_control_flow_signals_are_not_errors(signal: type[Exception]) -> None:
    assert issubclass(signal, ControlFlow)
    assert not issubclass(signal, SwecliError)
