"""The import-linter layer contract names every top-level module of swecli, so none escapes it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import swecli

PACKAGE = Path(swecli.__file__).parent
PYPROJECT = PACKAGE.parent / "pyproject.toml"


def _layered() -> set[str]:
    contracts = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers")
    return {name.strip().removeprefix("swecli.") for layer in layers for name in layer.split("|")}


def _top_level() -> set[str]:
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    return modules | packages


def test_every_top_level_module_is_in_the_layer_contract() -> None:
    assert _top_level() - _layered() == set()


def test_the_layer_contract_names_no_module_that_is_gone() -> None:
    assert _layered() - _top_level() == set()
