"""`@datarecord`: a dataclass whose `__repr__`, `__eq__` and `__hash__` are made without compiling anything.

Python 3.11's `@dataclass` writes each method it adds as source text and compiles it on its own
(`dataclasses._create_fn`): ~0.5 M instructions per method, three per class and six per frozen one. The
~150 dataclasses a `-p` run creates before its first request cost ~490 M instructions that way, more than
a third of its main thread. `@datarecord` is `@dataclass` with `repr=False, eq=False`, and the class gets a
`__repr__`, an `__eq__` and (frozen) a `__hash__` made by the closures below from the class's fields (an
`operator.attrgetter` of them, which reads them in C). A frozen class's `__setattr__`/`__delattr__`, which
`@dataclass(frozen=True)` always compiles, are closures too (`_frozen`); only `__init__` is still compiled.

They behave as the generated ones do (`tests/test_records.py` compares them on the same classes):
- `repr`: `Name(a=1, b='x')` with the fields whose `repr` is true, `...` for a recursive reference;
- `==`: equal when `other` has exactly the same class and the fields whose `compare` is true are equal,
  else `NotImplemented`;
- `hash`: a frozen class hashes the tuple of its `hash` (else `compare`) fields; a mutable one is
  unhashable (`__hash__ = None`). A method the class body defines itself is kept, as `@dataclass` keeps it.
- frozen: after `__init__`, assigning or deleting any attribute of the class's own instances raises
  `FrozenInstanceError` with dataclasses' message (a subclass's: its fields); `object.__setattr__` in
  `__post_init__` works; `__dataclass_params__.frozen` is True (`tests/test_records_frozen.py` compares twins
  over every field shape, slots, pickle, copy, replace, inheritance and pydantic). One difference: a plain
  `@dataclass` (not `@datarecord`) subclass that reuses a frozen record's generated `__init__` (its own
  `init=False`, or `super().__init__()` from its own) is refused there, since that `__init__` assigns through
  `__setattr__`; a `@datarecord(frozen=True)` subclass is not.

It is still a dataclass (`dataclasses.fields`, `replace`, `asdict`, `is_dataclass`), and mypy checks it as
one (`typing.dataclass_transform`). For `order=True` or `unsafe_hash=True`, use `@dataclass`.
"""

from __future__ import annotations

import dataclasses
import reprlib
import sys
import weakref
from collections.abc import Callable
from operator import attrgetter
from types import CodeType
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
        made: Any = _frozen(cls, own, kw_only, init, slots) if frozen else dataclasses.dataclass(
            cls, kw_only=kw_only, init=init, slots=slots, repr=False, eq=False)
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


# The code of every `__init__` dataclasses generated for a frozen record (made as a mutable dataclass, so its
# `__init__` assigns with `self.name = value`): the only code whose assignments a frozen record takes. Keyed by
# `id`, checked by identity; weak, so a class that goes away takes its entry with it.
_BUILDERS: weakref.WeakValueDictionary[int, CodeType] = weakref.WeakValueDictionary()


def _frozen(cls: type[Any], own: dict[str, Any], kw_only: bool, init: bool, slots: bool) -> Any:
    """`@dataclass(frozen=True, ...)` without the two methods it compiles per class.

    Python 3.11's `@dataclass(frozen=True)` compiles a `__setattr__` and a `__delattr__` for every class
    (`dataclasses._frozen_get_del_attr`, ~1 M instructions each class: ~150 M of a `-p` start). A record with no
    dataclass base is made as a mutable dataclass and given the closures below, which refuse what the
    compiled ones refuse, with the same error; `__dataclass_params__.frozen` is then set back to True, so
    `dataclasses` refuses a mutable dataclass that inherits from it as it refuses one that inherits from a
    frozen dataclass. One with dataclass bases is made by `@dataclass(frozen=True)` (which checks, with its
    own errors, that the bases are frozen too; rare in swecli) and given the same closures, so that a frozen
    record base's `__init__` it inherits can still assign."""
    for name in ("__setattr__", "__delattr__"):
        if name in own:  # dataclasses' own refusal, word for word
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    based = any(hasattr(base, "__dataclass_fields__") for base in cls.__mro__[1:])
    made: Any = dataclasses.dataclass(cls, frozen=based, kw_only=kw_only, init=init, slots=slots,
                                      repr=False, eq=False)
    made.__dataclass_params__.frozen = True
    builder = None
    if init and "__init__" not in own and not based:
        builder = made.__init__.__code__
        _BUILDERS[id(builder)] = builder
    names = frozenset(f.name for f in dataclasses.fields(made))
    # `cls`, not `made`: with slots, dataclasses' methods name the class as it was before its slotted copy
    # was made (so a name that is not a field fails in `super()` with a TypeError); the same here.
    made.__setattr__, made.__delattr__ = _setattr_of(cls, names, builder), _delattr_of(cls, names)
    if slots and not based:  # what dataclasses gives a frozen class with slots, for pickle and copy
        _set_state(made, own)
    return made


def _setattr_of(cls: type[Any], names: frozenset[str], builder: CodeType | None
                ) -> Callable[[Any, str, Any], None]:
    """`builder`: the class's own generated `__init__`'s code, checked first (every field of every instance
    made passes here: the common case must be cheap; the weak map's `get` is Python)."""
    set_plainly, caller = object.__setattr__, sys._getframe

    def __setattr__(self: Any, name: str, value: Any) -> None:
        code = caller(1).f_code
        if code is builder or _BUILDERS.get(id(code)) is code:  # a generated `__init__`, as a frozen one's
            set_plainly(self, name, value)
        elif type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        else:
            super(cls, self).__setattr__(name, value)

    return __setattr__


def _delattr_of(cls: type[Any], names: frozenset[str]) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __delattr__


def _set_state(made: Any, own: dict[str, Any]) -> None:
    """A slotted frozen class's state is its fields' values, set back past `__setattr__` (as dataclasses does)."""

    def __getstate__(self: Any) -> list[Any]:
        return [getattr(self, f.name) for f in dataclasses.fields(self)]

    def __setstate__(self: Any, state: list[Any]) -> None:
        for f, value in zip(dataclasses.fields(self), state):  # noqa: B905 - dataclasses' own zip
            object.__setattr__(self, f.name, value)

    if "__getstate__" not in own:
        made.__getstate__ = __getstate__
    if "__setstate__" not in own:
        made.__setstate__ = __setstate__
