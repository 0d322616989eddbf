"""Events name their own kind; the names are the public `type`s of stream-json output."""

from __future__ import annotations

import io
import json
from typing import get_args

import pytest

from swecli import events
from swecli.events import ChildEvent, Event, Notice, SummarySpent, ToolStarted
from swecli.messages import ToolCall, Usage
from swecli.ui.headless import ProgressPrinter, StreamJsonPrinter, event_to_dict

PUBLIC_TYPES = {
    "TextDelta": "text_delta", "ReasoningDelta": "reasoning_delta", "ModelCallStarted": "model_call_started",
    "ModelCallFinished": "model_call_finished", "ToolStarted": "tool_started", "ToolOutput": "tool_output",
    "ToolFinished": "tool_finished", "MessageAppended": "message_appended", "HistoryReplaced": "history_replaced",
    "CompactionDone": "compaction_done", "SummarySpent": "summary_spent", "BackgroundSummary": "background_summary",
    "ContextOverflow": "context_overflow", "Notice": "notice", "TurnFinished": "turn_finished",
    "Waiting": "waiting", "ChildEvent": "child_event",
}
"""Users script against these (`swecli -p --output-format stream-json`): a rename breaks them."""


@pytest.mark.parametrize("event_type", get_args(Event), ids=lambda t: t.__name__)
def test_every_event_declares_its_public_kind(event_type: type) -> None:
    assert event_type.__dataclass_fields__["kind"].default == PUBLIC_TYPES[event_type.__name__]


def test_the_table_covers_every_event_and_all_exports_each() -> None:
    names = {t.__name__ for t in get_args(Event)}
    assert names == set(PUBLIC_TYPES)
    assert names <= set(events.__all__)


def test_stream_json_type_is_the_kind_and_the_kind_is_not_repeated_as_a_field() -> None:
    out = io.StringIO()
    printer = StreamJsonPrinter(out)
    printer(SummarySpent(Usage(input_tokens=10, requests=1), "auto"))  # said while the session opened
    assert out.getvalue() == ""  # held: the init object comes first
    printer.start({"type": "system", "subtype": "init"})
    init, data = (json.loads(line) for line in out.getvalue().splitlines())
    assert init["subtype"] == "init"
    assert data["type"] == "summary_spent" and "kind" not in data and data["trigger"] == "auto"


def test_a_child_event_nests_its_event_with_its_own_type() -> None:
    call = ToolCall(id="c1", name="read_file", arguments='{"path": "a.py"}')
    data = event_to_dict(ChildEvent("t1", "explore", ToolStarted(call, {"path": "a.py"})))
    assert data["type"] == "child_event" and data["event"]["type"] == "tool_started"


def test_text_progress_prints_a_sub_agents_warning_under_its_call() -> None:
    out = io.StringIO()
    ProgressPrinter(out)(ChildEvent("t1", "explore", Notice("warning", "slow")))
    assert out.getvalue() == "    warning: [explore] slow\n"
