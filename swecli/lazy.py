"""Package surfaces that cost nothing to import: a package's `__init__` names what it offers and the
module each name lives in, and the module is imported the first time a name is used (PEP 562), so
`import swecli.context` stays as cheap as before and `swecli --version` as fast."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's `__getattr__`: `names` maps each exported name to the module (in `package`) defining it."""
    namespace = importlib.import_module(package).__dict__

    def attribute(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value  # found once; later lookups do not come here
        return value

    return attribute
