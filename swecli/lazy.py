"""What costs nothing until it is used. Package surfaces: a package's `__init__` names what it offers and
the module each name lives in, and the module is imported the first time a name is used (PEP 562), so
`import swecli.context` stays as cheap as before and `swecli --version` as fast. Regular expressions
(`regex`): compiled the first time one is used, not when its module is imported, so the ~180 patterns
of the modules a `-p` run imports no longer stand between its start and its first request."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any, cast, overload


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


_PATTERN_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "scanner",
                    "pattern", "flags", "groups", "groupindex")
_NO_MATCH: dict[str, Callable[[Any], Any]] = {
    "search": lambda string: None, "match": lambda string: None, "fullmatch": lambda string: None,
    "findall": lambda string: [], "finditer": lambda string: iter(()), "split": lambda string: [string],
    "sub": lambda string: string, "subn": lambda string: (string, 0)}
"""What each method answers when the pattern cannot match (`regex`'s `needs`)."""


class _Pattern:
    """A compiled pattern's stand-in: the first attribute asked of it compiles the expression, and the
    compiled pattern's methods are then kept on the instance, so later calls cost what they cost on an
    `re.Pattern` (no `__getattr__` in between)."""

    def __init__(self, pattern: str | bytes, flags: int, needs: tuple[Any, ...]) -> None:
        self._source: tuple[Any, int] = (pattern, flags)
        self._needs = needs
        if needs:  # until it is compiled, a string without any of `needs` is answered here
            self.__dict__.update({name: self._guard(name, needs) for name in _NO_MATCH})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_source":
            raise AttributeError(name)
        if name == "pattern":  # known without compiling (a pattern built from another's source)
            return self._source[0]
        return getattr(self._compile(), name)

    def _compile(self) -> re.Pattern[Any]:
        compiled: re.Pattern[Any] = re.compile(self._source[0], self._source[1])  # re's cache: once
        self.__dict__.update({method: getattr(compiled, method) for method in _PATTERN_METHODS})
        return compiled

    def _guard(self, name: str, needs: tuple[Any, ...]) -> Callable[..., Any]:
        """`name` (search, findall, sub, ...) answering "no match" for a string without any of `needs`, and
        compiling the pattern for one with it."""
        position = 1 if name in ("sub", "subn") else 0  # sub(repl, string, ...), the others (string, ...)

        def method(*args: Any, **kwargs: Any) -> Any:
            string = kwargs["string"] if "string" in kwargs else args[position]
            if not any(literal in string for literal in needs):
                return _NO_MATCH[name](string)
            return getattr(self._compile(), name)(*args, **kwargs)

        return method

    def __repr__(self) -> str:
        return f"regex({self._source[0]!r})"


@overload
def regex(pattern: str, flags: int = 0, *, needs: str | tuple[str, ...] = ()) -> re.Pattern[str]: ...


@overload
def regex(pattern: bytes, flags: int = 0, *, needs: bytes | tuple[bytes, ...] = ()) -> re.Pattern[bytes]: ...


def regex(pattern: str | bytes, flags: int = 0, *,
          needs: str | bytes | tuple[str, ...] | tuple[bytes, ...] = ()) -> re.Pattern[str] | re.Pattern[bytes]:
    """`re.compile(pattern, flags)`, compiled when first used (search, match, sub, ...). Parsing a pattern
    is pure Python (`re._parser`) and ~0.3-2 ms each; at module level that is paid at import. Not an
    `re.Pattern` for `isinstance` or as the first argument of `re.sub` & co: call its methods.

    `needs`: a literal every match contains, exactly as written (so no letters under IGNORECASE), or a tuple
    of literals one of which every match contains. Until the pattern is compiled, a string without it gets
    the no-match answer (None, [], the string unchanged) without compiling: a short task carries none of a
    traceback's `File "` or a code fence's backticks, and its first request need not pay for the patterns
    that look for them."""
    literals: tuple[Any, ...] = needs if isinstance(needs, tuple) else (needs,) if needs else ()
    if flags & re.IGNORECASE and any(literal.lower() != literal.upper() for literal in literals):
        raise ValueError(f"regex({pattern!r}): needs={needs!r} has letters, which IGNORECASE matches in any case")
    return cast("re.Pattern[str]", _Pattern(pattern, flags, literals))  # typed by the overloads above


def compile_patterns(module: ModuleType) -> int:
    """Compile now every pattern `module` made with `regex` at its top level (a thread that works ahead for
    the loop pays their compiling, not the loop's step that first uses them); returns how many were."""
    compiled = 0
    for value in list(vars(module).values()):
        if isinstance(value, _Pattern) and "pattern" not in value.__dict__:  # set by compiling
            value._compile()
            compiled += 1
    return compiled
