"""`@datarecord` against `@dataclass`: the same class declared both ways must repr, compare and hash alike."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pytest

from swecli.records import datarecord


def both(frozen: bool) -> tuple[Any, Any]:
    """One class body, decorated by `@dataclass` and by `@datarecord` (same fields, defaults and flags)."""

    def body() -> dict[str, Any]:
        return {"__annotations__": {"name": "str", "size": "int", "tags": "tuple[str, ...]", "note": "str",
                                    "secret": "str"},
                "__module__": __name__, "__doc__": "A class with every kind of field.",
                "size": 0, "tags": field(default_factory=tuple), "note": field(default="", compare=False),
                "secret": field(default="", repr=False)}

    generated: Any = dataclass(frozen=frozen)(type("Thing", (), body()))
    shared: Any = datarecord(frozen=frozen)(type("Thing", (), body()))
    return generated, shared


@pytest.mark.parametrize("frozen", [False, True])
def test_repr_and_equality_match_the_generated_methods(frozen: bool) -> None:
    generated, shared = both(frozen)
    cases: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        (("a",), {}), (("a", 2), {"tags": ("x",)}), (("a", 2), {"note": "other", "secret": "s"}), (("b", 2), {}),
        (("a", 3), {"tags": ("y",)})]
    for args, kwargs in cases:
        assert repr(shared(*args, **kwargs)) == repr(generated(*args, **kwargs))
        for other_args, other_kwargs in cases:
            assert (shared(*args, **kwargs) == shared(*other_args, **other_kwargs)) == \
                (generated(*args, **kwargs) == generated(*other_args, **other_kwargs))
    assert shared("a") != generated("a")  # another class: NotImplemented both ways, so unequal
    assert shared("a").__eq__(("a", 0, (), "", "")) is NotImplemented
    assert dataclasses.is_dataclass(shared) and [f.name for f in dataclasses.fields(shared)] == \
        [f.name for f in dataclasses.fields(generated)]


def test_a_frozen_record_hashes_like_a_frozen_dataclass_and_stays_frozen() -> None:
    generated, shared = both(frozen=True)
    assert hash(shared("a", 2, ("x",))) == hash(generated("a", 2, ("x",)))
    assert hash(shared("a", note="n")) == hash(shared("a", note="other"))  # compare=False: not hashed
    with pytest.raises(dataclasses.FrozenInstanceError):
        shared("a").name = "b"
    assert len({shared("a"), shared("a"), shared("b")}) == 2


def test_a_mutable_record_is_unhashable_like_a_dataclass() -> None:
    generated, shared = both(frozen=False)
    assert shared.__hash__ is None and generated.__hash__ is None
    with pytest.raises(TypeError):
        hash(shared("a"))


def test_methods_the_class_writes_itself_are_kept() -> None:
    @datarecord(frozen=True)
    class Named:
        """Equal by name only, shown by name only."""

        name: str
        extra: int = 0

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Named) and other.name == self.name

        def __hash__(self) -> int:
            return hash(self.name)

        def __repr__(self) -> str:
            return f"<{self.name}>"

    assert Named("a", 1) == Named("a", 2) and hash(Named("a", 1)) == hash(Named("a", 2))
    assert repr(Named("a")) == "<a>"


def test_a_recursive_reference_shows_as_dots() -> None:
    @datarecord
    class Node:
        """A node that may point at itself."""

        next: Node | None = None

    node = Node()
    node.next = node
    assert repr(node) == "test_a_recursive_reference_shows_as_dots.<locals>.Node(next=...)"


def test_a_subclass_compares_its_own_fields_and_never_equals_its_parent() -> None:
    @datarecord(frozen=True)
    class Base:
        """A parent."""

        a: int

    @datarecord(frozen=True)
    class Child(Base):
        """A child with one more field."""

        b: int = 0

    assert Child(1, 2) == Child(1, 2) and Child(1, 2) != Child(1, 3)
    assert Child(1) != Base(1) and repr(Child(1, 2)) == "test_a_subclass_compares_its_own_fields_and_never_equals_" \
        "its_parent.<locals>.Child(a=1, b=2)"
