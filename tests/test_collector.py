"""The collector's schedule: no collection for a call's own allocations while held (a long hold still
collects), what is due collected on its thread after a release, at once on `resume`, and a collector that
is off left alone; and a real `swecli -p` collecting on its thread while the model thinks."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from swecli.collector import COLLECTOR, HELD_FACTOR, Collector
from swecli.testing.server import Call, Reply, ScriptedLLM
from tests.helpers import YOUNG, Node, garbage, watching_collections
from tests.ui.test_headless_startup import hooked


def parked(collector: Collector) -> None:
    """Until the collector's thread has parked (it does within a tick of finding nothing to act on)."""
    found = threading.Event()
    for _ in range(10_000):
        if collector.parked or found.wait(0.001):
            return
    raise AssertionError("the collector's thread never parked")


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
    COLLECTOR.resume()  # a loop of an earlier test may have left the process's one raised, its collection pending
    thresholds = gc.get_threshold()
    seen = Collections()
    try:
        with watching_collections(seen):
            yield seen
    finally:
        gc.enable()
        assert gc.get_threshold() == thresholds


def test_a_call_s_garbage_is_not_collected_while_held_but_on_the_collector_s_thread_after_release(
        collections: Collections) -> None:
    collector = Collector(delay=0.0)
    collector.hold()
    garbage(HELD_FACTOR // 2)
    assert collections.threads == []
    collector.release()
    assert collections.seen.wait(10), "the released collector never collected"
    assert collections.threads[0] == "swecli-gc"


def test_the_pending_collection_empties_the_young_generation_for_the_next_reply(collections: Collections) -> None:
    collector = Collector(delay=0.0)
    collector.hold()
    for _ in range(YOUNG // 2):  # a call that left less than a collection's worth: none is due yet
        Node()
    collector.release()
    assert collections.seen.wait(10), "the young generation was left for the next reply to tip over"
    assert collections.threads == ["swecli-gc"]


def test_a_long_hold_still_collects(collections: Collections) -> None:
    collector = Collector(delay=3600.0)
    collector.hold()
    garbage(HELD_FACTOR * 2)  # a command that runs for minutes, a sub-agent under a `task` call
    assert collections.threads[:1] == [threading.current_thread().name]
    collector.release()
    collector.resume()


def test_a_hold_before_the_pending_collection_keeps_it_raised(collections: Collections) -> None:
    collector = Collector(delay=3600.0)  # the model answers before the collection is due
    collector.hold()
    collector.release()
    collector.hold()  # the reply is in
    garbage(HELD_FACTOR // 2)
    assert collections.threads == []
    collector.release()
    collector.resume()  # the next reply streams: the threshold is back, the pending collection finds nothing


def test_resume_collects_a_reply_that_came_before_the_pending_collection(collections: Collections) -> None:
    collector = Collector(delay=3600.0)
    collector.hold()
    garbage(HELD_FACTOR // 2)
    collector.release()
    assert collections.threads == []  # the request is still being sent
    collector.resume()
    assert collections.threads[:1] == [threading.current_thread().name]


def test_several_loops_hold_it_until_the_last_releases(collections: Collections) -> None:
    collector = Collector(delay=0.0)
    collector.hold()
    collector.hold()
    collector.release()
    collector.resume()  # one loop's reply streams while the other is between its reply and its request
    garbage(HELD_FACTOR // 2)
    assert collections.threads == []
    collector.release()
    assert collections.seen.wait(10)


def test_a_collector_that_is_off_is_left_alone(collections: Collections) -> None:
    gc.disable()  # start-up's, or the user's
    collector = Collector(delay=0.0)
    collector.hold()
    assert gc.get_threshold()[0] == YOUNG
    collector.release()
    collector.resume()
    garbage()
    assert not gc.isenabled() and collections.threads == []


def test_a_parked_collector_is_rung_by_the_hold_and_the_release_that_follow(collections: Collections) -> None:
    collector = Collector(delay=0.0, tick=0.001, park_after=0.0)  # it parks whenever it has nothing to act on
    collector.hold()  # starts it: it looks, finds the hold, parks
    garbage(HELD_FACTOR // 2)
    parked(collector)
    collector.release()  # rings it: it finds the release and collects
    assert collections.seen.wait(10), "a parked collector was never rung"
    assert collections.threads[0] == "swecli-gc"


COLLECTIONS_SCRIPT = hooked(r"""
import gc
sent, threads = [], []
def note(event, args):
    if event == "socket.connect":
        sent.append(1)
def seen(phase, info):  # who collects once the task's request is out (start-up's collector is off until then)
    if phase == "start" and sent:
        threads.append(threading.current_thread().name)
gc.callbacks.append(seen)
""", """{"code": code, "threads": threads}""")


def test_a_p_run_collects_on_the_collector_s_thread_while_its_model_thinks(project: Path) -> None:
    """The schedule through the real loop: `swecli -p` over HTTP, a model that thinks before each answer after
    a tool call. The collector is off until the first request (`entry`, `ui.headless`), the loop holds it from
    each reply to its next request, and what the calls left is collected on `swecli-gc` while the model
    thinks (with the wiring gone, every collection runs on the main thread, on the calls' path)."""
    (project / "notes.txt").write_text("hello\n")

    def thinking(reply: Reply) -> Callable[[dict[str, Any]], Reply]:
        def step(body: dict[str, Any]) -> Reply:
            time.sleep(1.0)  # well past ON_THE_WIRE + a TICK (on a loaded machine too): the collection runs meanwhile
            return reply
        return step

    calls = [thinking(Reply(calls=[Call("read_file", {"path": "notes.txt"})])) for _ in range(3)]
    with ScriptedLLM([*calls, thinking(Reply("done"))]) as llm:
        out = subprocess.run([sys.executable, "-c", COLLECTIONS_SCRIPT, "--provider", "openai-compatible",
                              "--base-url", llm.base_url, "--model", "scripted-model", "-p", "read notes.txt"],
                             cwd=project, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert len(llm.requests) == 4, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["code"] in (0, None), out.stderr
    assert report["threads"].count("swecli-gc") >= 3, report  # one after each call's result went out
