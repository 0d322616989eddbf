"""`@datarecord`: a dataclass whose `__repr__`, `__eq__` and `__hash__` are shared functions, not compiled per class.

Python 3.11's `@dataclass` writes each method it adds as source text and compiles it on its own
(`dataclasses._create_fn`): ~0.5 M instructions per method, three per class and six per frozen one. The
~150 dataclasses a `-p` run creates before its first request cost ~490 M instructions that way, more than
a third of its main thread. `@datarecord` is `@dataclass` with `repr=False, eq=False` plus one `__repr__`, one
`__eq__` and one `__hash__` written here once, which read the class's fields from a getter made when the
class is decorated. Only `__init__` (and a frozen class's `__setattr__`/`__delattr__`, which dataclasses
always generates) is still compiled per class.

They behave as the generated ones do (`tests/test_records.py` compares them on the same classes):
- `repr`: `Name(a=1, b='x')` with the fields whose `repr` is true, `...` for a recursive reference;
- `==`: equal when `other` has exactly the same class and the fields whose `compare` is true are equal,
  else `NotImplemented`;
- `hash`: a frozen class hashes the tuple of its `hash` (else `compare`) fields; a mutable one is
  unhashable (`__hash__ = None`). A method the class body defines itself is kept, as `@dataclass` keeps it.

It is still a dataclass (`dataclasses.fields`, `replace`, `asdict`, `is_dataclass`), and mypy checks it as
one (`typing.dataclass_transform`). For a class that needs `order=True` or `unsafe_hash=True`, use
`@dataclass`.
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, cast, dataclass_transform, overload

T = TypeVar("T")

_SHOWN = "__record_shown__"
"""Class attributes set by `datarecord`: the names `repr` shows, and getters of what `repr` shows, `==` compares
and `hash` hashes."""
_SHOWN_VALUES = "__record_shown_values__"
_COMPARED = "__record_compared__"
_HASHED = "__record_hashed__"


def _getter(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The values of `names` as a tuple, read in C (`attrgetter`), as the generated methods build it."""
    if len(names) >= 2:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    pairs = zip(getattr(type(self), _SHOWN), getattr(type(self), _SHOWN_VALUES)(self), strict=True)
    return f"{self.__class__.__qualname__}({', '.join(f'{name}={value!r}' for name, value in pairs)})"


def _eq(self: Any, other: object) -> object:
    if other.__class__ is self.__class__:
        key = getattr(type(self), _COMPARED)
        return key(self) == key(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(getattr(type(self), _HASHED)(self))


@overload
def datarecord(cls: type[T], /) -> type[T]: ...


@overload
def datarecord(*, frozen: bool = False, kw_only: bool = False, init: bool = True,
               slots: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def datarecord(cls: type[T] | None = None, /, *, frozen: bool = False, kw_only: bool = False, init: bool = True,
               slots: bool = False) -> type[T] | Callable[[type[T]], type[T]]:
    """`@dataclass` (or `@dataclass(frozen=True, ...)`) with the shared `__repr__`, `__eq__` and `__hash__`."""

    def wrap(cls: type[T]) -> type[T]:
        own = dict(cls.__dict__)
        made: Any = dataclasses.dataclass(cls, frozen=frozen, kw_only=kw_only, init=init, slots=slots,
                                          repr=False, eq=False)
        fields = dataclasses.fields(made)
        shown = [f.name for f in fields if f.repr]
        setattr(made, _SHOWN, tuple(shown))
        setattr(made, _SHOWN_VALUES, _getter(shown))
        setattr(made, _COMPARED, _getter([f.name for f in fields if f.compare]))
        if "__repr__" not in own:
            made.__repr__ = _repr
        if "__eq__" not in own:
            made.__eq__ = _eq
        _set_hash(made, own, frozen, fields)
        return cast("type[T]", made)

    return wrap if cls is None else wrap(cls)


def _set_hash(made: Any, own: dict[str, Any], frozen: bool, fields: tuple[dataclasses.Field[Any], ...]) -> None:
    """What `@dataclass(eq=True)` does to `__hash__`: a hash the class wrote is kept; otherwise a frozen
    class hashes its fields and a mutable one is unhashable. (A class body that defines `__eq__` gets
    `__hash__ = None` from Python itself; that does not count as written.)"""
    written = own.get("__hash__", dataclasses.MISSING)
    if not (written is dataclasses.MISSING or (written is None and "__eq__" in own)):
        return
    if frozen:
        setattr(made, _HASHED, _getter([f.name for f in fields if (f.compare if f.hash is None else f.hash)]))
        made.__hash__ = _hash
    else:
        made.__hash__ = None
