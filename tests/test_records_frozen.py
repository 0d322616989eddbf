"""`@datarecord(frozen=True)` against `@dataclass(frozen=True)`: twin classes must behave alike in everything.

A frozen record is made as a mutable dataclass given closures in place of the `__setattr__`/`__delattr__`
dataclasses compiles (`swecli/records.py`). Each shape below is declared both ways and every observable
behaviour is compared: construction, each field and a new name set and deleted (error type and message),
`__post_init__`, repr, equality, hash, copy, deepcopy, pickle, `replace`, `asdict`, `astuple`,
`__match_args__`, the signature, the docstring, slots, `__dataclass_params__.frozen`, pydantic, inheritance.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import KW_ONLY, InitVar, dataclass, field
from typing import Any, ClassVar

import pytest
from pydantic import TypeAdapter

from swecli.records import datarecord

Body = Callable[[], dict[str, Any]]


def _post_init_double(self: Any) -> None:
    object.__setattr__(self, "double", self.x * 2)


def _post_init_assigns(self: Any) -> None:
    self.x = 5  # a frozen dataclass refuses this


def _post_init_seed(self: Any, seed: int) -> None:
    object.__setattr__(self, "x", self.x + seed)


def _init_by_object(self: Any, v: int) -> None:
    object.__setattr__(self, "x", v)


def _init_plainly(self: Any, v: int) -> None:
    self.x = v


def _body(annotations: dict[str, Any], **namespace: Any) -> Body:
    return lambda: {"__annotations__": dict(annotations), "__module__": __name__, **namespace}


SHAPES: dict[str, Body] = {
    "empty": _body({}),
    "plain": _body({"x": int, "y": str}, y="d"),
    "factory": _body({"x": int, "tags": list[str]}, tags=field(default_factory=list)),
    "kw_only marker": _body({"x": int, "_": KW_ONLY, "k": int}, k=3),
    "kw_only field": _body({"x": int, "k": int}, k=field(default=4, kw_only=True)),
    "init=False fields": _body({"x": int, "derived": int, "later": list[int]},
                               derived=field(init=False, default=7), later=field(init=False, default_factory=list)),
    "init=False, no default": _body({"x": int, "unset": int}, unset=field(init=False)),
    "post_init by object": _body({"x": int, "double": int}, double=field(init=False),
                                 __post_init__=_post_init_double),
    "post_init assigns": _body({"x": int}, __post_init__=_post_init_assigns),
    "initvar": _body({"x": int, "seed": InitVar[int]}, seed=1, __post_init__=_post_init_seed),
    "classvar": _body({"x": int, "counter": ClassVar[int]}, counter=0),
    "own init by object": _body({"x": int}, __init__=_init_by_object),
    "own init assigns": _body({"x": int}, __init__=_init_plainly),
    "fields named like the methods' parameters": _body({"name": str, "value": int, "self": int}),
    "compare/hash/repr flags": _body({"x": int, "quiet": int, "loose": int, "unhashed": int},
                                     quiet=field(default=0, repr=False), loose=field(default=0, compare=False),
                                     unhashed=field(default=0, hash=False)),
    "documented": _body({"x": int}, __doc__="A documented record."),
}
ARGS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "empty": ((), {}), "kw_only marker": ((1,), {"k": 5}), "initvar": ((1,), {"seed": 10}),
    "fields named like the methods' parameters": (("n", 2), {"self": 3}),
    "own init by object": ((9,), {}), "own init assigns": ((9,), {}),
}
FLAGS = [{"slots": slots, "kw_only": kw_only, "init": init}
         for slots in (False, True) for kw_only in (False, True) for init in (True, False)]


def outcome(act: Callable[[], Any]) -> tuple[str, str]:
    """What an action gave: its value's repr, or its error's type and message."""
    try:
        return ("ok", repr(act()))
    except Exception as error:  # the error is what is compared
        return (type(error).__name__, str(error))


def twins(body: Body, flags: dict[str, Any], bases: tuple[tuple[type, ...], tuple[type, ...]] = ((), ())
          ) -> tuple[Any, Any]:
    """The same body made by `@dataclass(frozen=True, **flags)` and by `@datarecord(frozen=True, **flags)`."""
    generated = outcome(lambda: dataclass(frozen=True, **flags)(type("Thing", bases[0], body())))
    recorded = outcome(lambda: datarecord(frozen=True, **flags)(type("Thing", bases[1], body())))
    assert recorded[0] == generated[0] and (generated[0] == "ok" or recorded == generated)
    if generated[0] != "ok":
        return None, None
    return (dataclass(frozen=True, **flags)(type("Thing", bases[0], body())),
            datarecord(frozen=True, **flags)(type("Thing", bases[1], body())))


@contextmanager
def importable(cls: type) -> Iterator[None]:
    """pickle finds a class by module and name: this module's `Thing` is `cls` for the duration."""
    globals()["Thing"] = cls
    try:
        yield
    finally:
        del globals()["Thing"]


def class_traits(cls: Any) -> dict[str, Any]:
    return {"params frozen": cls.__dataclass_params__.frozen, "match_args": getattr(cls, "__match_args__", None),
            "signature": outcome(lambda: str(inspect.signature(cls))), "doc": cls.__doc__,
            "slots": getattr(cls, "__slots__", None), "fields": [f.name for f in dataclasses.fields(cls)],
            "is dataclass": dataclasses.is_dataclass(cls)}


def changes(cls: Any, thing: Any) -> dict[str, Any]:
    """Every assignment and deletion tried on `thing`: its fields and two names that are not."""
    names = [f.name for f in dataclasses.fields(cls)] + ["fresh", "__weakref__"]
    seen: dict[str, Any] = {}
    for name in names:
        seen[f"set {name}"] = outcome(lambda: setattr(thing, name, 99))  # noqa: B023 - called at once
        seen[f"del {name}"] = outcome(lambda: delattr(thing, name))  # noqa: B023
        seen[f"set via object {name}"] = outcome(lambda: object.__setattr__(thing, name, 98))  # noqa: B023
    seen["after"] = outcome(lambda: repr(thing))
    return seen


def instance_traits(cls: Any, args: tuple[tuple[Any, ...], dict[str, Any]]) -> dict[str, Any]:
    made = outcome(lambda: cls(*args[0], **args[1]))
    if made[0] != "ok":
        return {"made": made}
    thing, other = cls(*args[0], **args[1]), cls(*args[0], **args[1])
    first = next((f.name for f in dataclasses.fields(cls) if f.init and not f.kw_only), None)
    with importable(cls):
        pickled = outcome(lambda: pickle.loads(pickle.dumps(thing)) == thing)
        state = outcome(lambda: thing.__reduce_ex__(4)[2])
    return {"made": made, "equal": thing == other, "hash": outcome(lambda: hash(thing) == hash(other)),
            "hash value": outcome(lambda: hash(thing)), "copy": outcome(lambda: copy.copy(thing) == thing),
            "deepcopy": outcome(lambda: repr(copy.deepcopy(thing))), "pickle": pickled, "state": state,
            "replace": outcome(lambda: dataclasses.replace(thing, **({first: 1} if first else {}))),
            "asdict": outcome(lambda: dataclasses.asdict(thing)),
            "astuple": outcome(lambda: dataclasses.astuple(thing)),
            "changes": changes(cls, thing)}


def assert_alike(generated: Any, recorded: Any, args: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
    assert class_traits(recorded) == class_traits(generated)
    assert instance_traits(recorded, args) == instance_traits(generated, args)


@pytest.mark.parametrize("flags", FLAGS, ids=lambda flags: ",".join(f"{k}={v}" for k, v in flags.items()))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_frozen_record_behaves_as_a_frozen_dataclass(shape: str, flags: dict[str, Any]) -> None:
    generated, recorded = twins(SHAPES[shape], flags)
    if generated is not None:
        assert_alike(generated, recorded, ARGS.get(shape, ((1,), {})))


@pytest.mark.parametrize("flags", FLAGS[::2], ids=lambda flags: f"slots={flags['slots']},kw_only={flags['kw_only']}")
@pytest.mark.parametrize("shape", ["plain", "init=False fields", "post_init by object", "own init assigns"])
def test_a_frozen_record_inherits_as_a_frozen_dataclass(shape: str, flags: dict[str, Any]) -> None:
    base_generated, base_recorded = twins(SHAPES["factory"], {})
    child = _body({"z": int}, z=0)
    generated, recorded = twins(child, flags, ((base_generated,), (base_recorded,)))
    assert_alike(generated, recorded, ((1,), {}))
    generated, recorded = twins(SHAPES[shape], flags, ((base_generated,), (base_recorded,)))
    if generated is not None:
        assert_alike(generated, recorded, ARGS.get(shape, ((1,), {})))
    # a frozen child made without its own __init__ uses the base's, which must still assign
    generated, recorded = twins(child, {**flags, "init": False}, ((base_generated,), (base_recorded,)))
    assert_alike(generated, recorded, ((1,), {}))


@pytest.mark.parametrize("name", ["extra", "x"])
def test_a_plain_subclass_keeps_the_frozen_fields_and_takes_its_own_attributes(name: str) -> None:
    def extend(base: Any) -> Any:
        def __init__(self: Any, x: int) -> None:
            base.__init__(self, x)
            self.extra = "mine"

        return type("Thing", (base,), {"__init__": __init__, "__module__": __name__})

    generated, recorded = twins(SHAPES["plain"], {})
    subs = extend(generated)(1), extend(recorded)(1)
    set_ = [outcome(lambda sub=sub: setattr(sub, name, 2)) for sub in subs]  # type: ignore[misc]
    del_ = [outcome(lambda sub=sub: delattr(sub, name)) for sub in subs]  # type: ignore[misc]
    assert set_[1] == set_[0] and del_[1] == del_[0] and vars(subs[1]) == vars(subs[0])


def test_inheriting_across_frozen_and_mutable_is_refused_with_dataclasses_errors() -> None:
    frozen = twins(SHAPES["plain"], {})
    mutable: tuple[Any, Any] = (dataclass(type("Base", (), SHAPES["plain"]())),
                                datarecord(type("Base", (), SHAPES["plain"]())))
    child = SHAPES["factory"]
    mutable_children = [outcome(lambda: maker(type("Thing", (base,), child())))  # noqa: B023
                        for maker, base in ((dataclass, frozen[0]), (datarecord, frozen[1]))]
    assert mutable_children[0][0] == "TypeError" and mutable_children[1] == mutable_children[0]
    frozen_children = [outcome(lambda: maker(frozen=True)(type("Thing", (base,), child())))  # noqa: B023
                       for maker, base in ((dataclass, mutable[0]), (datarecord, mutable[1]))]
    assert frozen_children[0][0] == "TypeError" and frozen_children[1] == frozen_children[0]


@pytest.mark.parametrize("method", ["__setattr__", "__delattr__"])
def test_a_frozen_record_that_defines_setattr_is_refused_as_dataclasses_refuses_it(method: str) -> None:
    def body() -> dict[str, Any]:
        return {**SHAPES["plain"](), method: lambda self, *args: None}

    generated = outcome(lambda: dataclass(frozen=True)(type("Thing", (), body())))
    assert generated[0] == "TypeError"
    assert outcome(lambda: datarecord(frozen=True)(type("Thing", (), body()))) == generated


@pytest.mark.parametrize("slots", [False, True])
def test_pydantic_takes_a_frozen_record_as_a_field_type(slots: bool) -> None:
    generated, recorded = twins(SHAPES["factory"], {"slots": slots})
    results = []
    for cls in (generated, recorded):
        adapter: TypeAdapter[Any] = TypeAdapter(list[cls])  # type: ignore[valid-type]
        made = adapter.validate_python([{"x": 1, "tags": ["a"]}, cls(2)])
        results.append((repr(made), adapter.dump_python(made), adapter.json_schema(),
                        outcome(lambda: setattr(made[0], "x", 3)),  # noqa: B023
                        outcome(lambda: adapter.validate_python([{"x": "not a number"}]))))  # noqa: B023
    assert results[1] == results[0]


def test_the_frozen_check_is_what_makes_the_twins_alike() -> None:
    """A mutable record is not its frozen twin: the comparison above can fail."""
    generated, _ = twins(SHAPES["plain"], {})
    mutable: Any = datarecord(type("Thing", (), SHAPES["plain"]()))
    assert instance_traits(mutable, ((1,), {})) != instance_traits(generated, ((1,), {}))
