"""What the engine is wired to: events go to the listener, or to the log when nobody listens."""

from __future__ import annotations

import logging

import pytest

from swecli.context.wiring import Reporter, Wiring
from swecli.events import Event, Notice


def test_events_and_notices_go_to_the_listener() -> None:
    seen: list[Event] = []
    report = Reporter(seen.append)
    report.notice("warning", "the hook failed")
    report.emit(Notice("info", "compacted"))
    assert seen == [Notice("warning", "the hook failed"), Notice("info", "compacted")]


def test_with_nobody_listening_a_notice_is_logged_and_an_event_dropped(caplog: pytest.LogCaptureFixture) -> None:
    report = Reporter()
    with caplog.at_level(logging.WARNING, logger="swecli.context.wiring"):
        report.notice("warning", "the summary fell back to truncation")
        report.emit(Notice("info", "nobody hears this"))
    assert [r.getMessage() for r in caplog.records] == ["the summary fell back to truncation"]


def test_the_defaults_wire_nothing() -> None:
    wiring = Wiring()
    assert (wiring.on_event, wiring.cancel, wiring.summary_provider, wiring.archive, wiring.counter) == (None,) * 5
