from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from swecli.context.ledger import Ledger
from swecli.context.tokens import TokenCounter
from swecli.messages import AssistantMessage, Message, ToolMessage, UserMessage
from tests.context.histories import drawn, histories

counter = TokenCounter()


def zone_by_walking(history: Sequence[Message], keep: int) -> int:
    """The newest zone as a reader would compute it: walk back from the end while the budget holds."""
    used, start = 0, len(history)
    while start > 0 and used + counter.message(history[start - 1]) <= keep:
        used += counter.message(history[start - 1])
        start -= 1
    while 0 < start < len(history) and isinstance(history[start], ToolMessage):
        start -= 1
    last = [i for i, m in enumerate(history) if isinstance(m, AssistantMessage)]
    return min(start, last[-1]) if last else start


@drawn(15, 100)
@given(histories(), st.integers(0, 3_000))
def test_grown_message_by_message_the_ledger_agrees_with_reading_the_whole_history(
        history: list[Message], keep: int) -> None:
    ledger = Ledger(counter.message)
    live: list[Message] = []
    for message in history:
        live.append(message)
        ledger.sync(live)
        assert ledger.tokens() == counter.messages(live)
        assert ledger.prompts == [i for i, m in enumerate(live) if isinstance(m, UserMessage) and m.kind == "prompt"]
        assert ledger.assistants == [i for i, m in enumerate(live) if isinstance(m, AssistantMessage)]
        assert ledger.zone_start(keep) == zone_by_walking(live, keep)
    assert ledger.generation == 0  # appends only: never started over
    middle = len(live) // 2
    assert ledger.tokens(middle) == counter.messages(live[middle:])


def test_a_rewritten_history_starts_the_ledger_over() -> None:
    first = [UserMessage(content="fix the parser"), AssistantMessage(content="looking")]
    ledger = Ledger(counter.message).sync(first)
    replaced = [UserMessage(content="fix the parser"), AssistantMessage(content="a different answer")]
    ledger.sync(replaced)
    assert ledger.generation == 1 and ledger.messages == replaced
    ledger.sync(replaced[:1])  # shorter: a rewrite too
    assert ledger.generation == 2 and ledger.tokens() == counter.message(replaced[0])


def test_a_tuple_of_the_same_messages_is_an_extension_not_a_rewrite() -> None:
    history: list[Message] = [UserMessage(content="fix the parser"), AssistantMessage(content="looking")]
    ledger = Ledger(counter.message).sync(history)
    ledger.sync((*history, UserMessage(content="and the lexer")))
    assert ledger.generation == 0 and ledger.prompts == [0, 2] and ledger.turn_start() == 2


def test_the_caller_of_a_result_is_the_assistant_message_before_it() -> None:
    history = [UserMessage(content="go"), AssistantMessage(content="a"),
               ToolMessage(tool_call_id="1", name="x", content=""), ToolMessage(tool_call_id="2", name="x", content=""),
               AssistantMessage(content="b")]
    ledger = Ledger(counter.message).sync(history)
    assert [ledger.caller_of(i) for i in range(5)] == [-1, -1, 1, 1, 1]
    assert ledger.assistants_after(1) == 1 and ledger.assistants_after(4) == 0
