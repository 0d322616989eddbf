"""The collector's schedule: no automatic collection while held, what is due collected on its thread after a
release, at once on `resume`, and a collector that was off before left off."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from swecli.collector import Collector


class Node:
    """A container object CPython counts (a class instance; lists and dicts come from free lists)."""

    def __init__(self) -> None:
        self.me = self  # a cycle: only a collection frees it


def garbage(rounds: int = 5) -> None:
    """Enough cyclic garbage to make a young-generation collection due `rounds` times over."""
    for _ in range(rounds * gc.get_threshold()[0]):
        Node()


class Collections:
    """Every collection that ends, with the thread it ran on."""

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.seen = threading.Event()

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "stop":
            self.threads.append(threading.current_thread().name)
            self.seen.set()


@pytest.fixture
def collections() -> Iterator[Collections]:
    assert gc.isenabled()
    seen = Collections()
    gc.callbacks.append(seen)
    try:
        yield seen
    finally:
        gc.callbacks.remove(seen)
        gc.enable()


def test_nothing_is_collected_while_held_and_what_is_due_is_collected_on_its_thread_after_release(
        collections: Collections) -> None:
    collector = Collector(delay=0.0)
    collector.hold()
    assert not gc.isenabled()
    garbage()
    assert collections.threads == []
    collector.release()
    assert collections.seen.wait(10), "the released collector never collected"
    assert collections.threads[0] == "swecli-gc" and gc.isenabled()


def test_a_hold_before_the_pending_collection_keeps_it_off(collections: Collections) -> None:
    collector = Collector(delay=3600.0)  # the model answers before the collection is due
    collector.hold()
    collector.release()
    collector.hold()  # the reply is in
    garbage()
    assert collections.threads == [] and not gc.isenabled()
    collector.release()
    collector.resume()  # the next reply streams: collection is on again, the pending one finds nothing to do
    assert gc.isenabled()


def test_resume_collects_a_model_s_reply_that_came_before_the_pending_collection(collections: Collections) -> None:
    collector = Collector(delay=3600.0)
    collector.hold()
    garbage()
    collector.release()
    assert not gc.isenabled() and collections.threads == []  # the request is still being sent
    collector.resume()
    garbage(1)
    assert gc.isenabled() and collections.threads[0] == threading.current_thread().name


def test_several_loops_hold_it_until_the_last_releases(collections: Collections) -> None:
    collector = Collector(delay=0.0)
    collector.hold()
    collector.hold()
    collector.release()
    collector.resume()  # one loop's reply streams while the other is between its reply and its request
    garbage()
    assert collections.threads == [] and not gc.isenabled()
    collector.release()
    assert collections.seen.wait(10)
    assert gc.isenabled()


def test_a_collector_that_was_off_is_left_off(collections: Collections) -> None:
    gc.disable()  # start-up's, or the user's
    collector = Collector(delay=0.0)
    collector.hold()
    collector.release()
    collector.resume()
    garbage()
    assert not gc.isenabled() and collections.threads == []
