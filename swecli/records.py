"""`@datarecord`: a dataclass whose `__repr__`, `__eq__` and `__hash__` are made without compiling anything.

Python 3.11's `@dataclass` writes each method it adds as source text and compiles it on its own
(`dataclasses._create_fn`): ~0.5 M instructions per method, three per class and six per frozen one. The
~150 dataclasses a `-p` run creates before its first request cost ~490 M instructions that way, more than
a third of its main thread. `@datarecord` is `@dataclass` with `repr=False, eq=False`, and the class gets a
`__repr__`, an `__eq__` and (frozen) a `__hash__` made by the closures below from the class's fields (an
`operator.attrgetter` of them, which reads them in C). Only `__init__`, and a frozen class's
`__setattr__`/`__delattr__` (which dataclasses always adds), are still compiled per class.

They behave as the generated ones do (`tests/test_records.py` compares them on the same classes):
- `repr`: `Name(a=1, b='x')` with the fields whose `repr` is true, `...` for a recursive reference;
- `==`: equal when `other` has exactly the same class and the fields whose `compare` is true are equal,
  else `NotImplemented`;
- `hash`: a frozen class hashes the tuple of its `hash` (else `compare`) fields; a mutable one is
  unhashable (`__hash__ = None`). A method the class body defines itself is kept, as `@dataclass` keeps it.

It is still a dataclass (`dataclasses.fields`, `replace`, `asdict`, `is_dataclass`), and mypy checks it as
one (`typing.dataclass_transform`). For `order=True` or `unsafe_hash=True`, use `@dataclass`.
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, cast, dataclass_transform, overload

T = TypeVar("T")
Values = Callable[[Any], tuple[Any, ...]]


def _values(names: list[str]) -> Values:
    """The values of `names` as a tuple, as the generated methods build it (`(self.a, self.b)`)."""
    if len(names) >= 2:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _repr_of(names: tuple[str, ...], values: Values) -> Callable[[Any], str]:
    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        shown = ", ".join([f"{name}={value!r}" for name, value in zip(names, values(self), strict=True)])
        return f"{self.__class__.__qualname__}({shown})"

    return __repr__


def _eq_of(values: Values) -> Callable[[Any, object], object]:
    def __eq__(self: Any, other: object) -> object:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash_of(values: Values) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


@overload
def datarecord(cls: type[T], /) -> type[T]: ...


@overload
def datarecord(*, frozen: bool = False, kw_only: bool = False, init: bool = True,
               slots: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def datarecord(cls: type[T] | None = None, /, *, frozen: bool = False, kw_only: bool = False, init: bool = True,
               slots: bool = False) -> type[T] | Callable[[type[T]], type[T]]:
    """`@dataclass` (or `@dataclass(frozen=True, ...)`) with `__repr__`, `__eq__` and `__hash__` made here."""

    def wrap(cls: type[T]) -> type[T]:
        own = dict(cls.__dict__)
        made: Any = dataclasses.dataclass(cls, frozen=frozen, kw_only=kw_only, init=init, slots=slots,
                                          repr=False, eq=False)
        fields = dataclasses.fields(made)
        if "__repr__" not in own:
            shown = [f.name for f in fields if f.repr]
            made.__repr__ = _repr_of(tuple(shown), _values(shown))
        if "__eq__" not in own:
            made.__eq__ = _eq_of(_values([f.name for f in fields if f.compare]))
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
        made.__hash__ = _hash_of(_values([f.name for f in fields if (f.compare if f.hash is None else f.hash)]))
    else:
        made.__hash__ = None
