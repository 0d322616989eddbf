"""The watch over calls refused for want of an approver."""

from __future__ import annotations

from swecli.denials import SAME_CALL_LIMIT, STREAK_LIMIT, DenialWatch
from swecli.messages import ToolCall


def call(name: str, arguments: str, n: int = 0) -> ToolCall:
    return ToolCall(id=f"call_{n}", name=name, arguments=arguments)


def test_the_same_call_in_another_key_order_counts_as_the_same() -> None:
    watch = DenialWatch()
    assert watch.saw(call("write_file", '{"path": "a", "content": "x"}'), approved=False) == ""
    assert watch.saw(call("list_files", "{}"), approved=True) == ""
    assert watch.saw(call("write_file", '{"content":"x","path":"a"}'), approved=False) == ""
    assert watch.saw(call("list_files", "{}"), approved=True) == ""
    assert "3 times for the same write_file call" in watch.saw(call("write_file", '{"path":"a","content":"x"}'),
                                                              approved=False)
    assert SAME_CALL_LIMIT == 3


def test_a_streak_of_refusals_stops_and_an_approved_call_ends_the_streak() -> None:
    watch = DenialWatch()
    for i in range(STREAK_LIMIT - 1):
        assert watch.saw(call("bash", f'{{"command": "touch {i}"}}'), approved=False) == ""
    assert watch.saw(call("read_file", '{"path": "a"}'), approved=True) == ""
    for i in range(STREAK_LIMIT - 1):
        assert watch.saw(call("bash", f'{{"command": "mkdir {i}"}}'), approved=False) == ""
    assert f"last {STREAK_LIMIT} tool calls" in watch.saw(call("bash", '{"command": "x"}'), approved=False)
    watch.reset()
    assert watch.saw(call("bash", '{"command": "x"}'), approved=False) == ""


def test_malformed_arguments_are_compared_as_text() -> None:
    watch = DenialWatch()
    for _ in range(SAME_CALL_LIMIT - 1):
        assert watch.saw(call("bash", "{not json"), approved=False) == ""
    assert watch.saw(call("bash", " {not json "), approved=False) != ""
