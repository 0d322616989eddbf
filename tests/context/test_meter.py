"""The meter: what a request carries, counted and calibrated against the window."""

from __future__ import annotations

from swecli.config import ContextConfig
from swecli.context.meter import Limits, Meter, Prompt, counter_for
from swecli.context.tokens import REPLY_PRIMING
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolSchema, Usage, UserMessage
from swecli.models.thinking import Thinking

PROMPT = Prompt((SystemBlock(text="You are swecli."),),
                (ToolSchema(name="read_file", description="Read a file.", parameters={"type": "object"}),),
                (SystemBlock(text="# OPENCLI.md\nUse pytest."),))


def meter(window: int = 32_000, model: str = "gpt-4o") -> Meter:
    return Meter(PROMPT, Limits(window=window, max_tokens=4_000, model=model), ContextConfig(), counter_for(model))


def test_the_state_adds_up_the_parts_a_request_sends() -> None:
    m = meter()
    history: list[Message] = [UserMessage(content="fix the parser"), AssistantMessage(content="on it")]
    m.set_tail("[Reminder: current goal and progress]\nfix the parser")
    state = m.state(history)
    count = m.counter
    assert state.system == count.system(PROMPT.system) and state.memory == count.system(PROMPT.memory)
    assert state.tools == count.tools(PROMPT.tools) and state.tail == m.tail[1] > 0
    assert state.history + state.current_turn == count.messages(history) + REPLY_PRIMING
    assert state.total == m.request_tokens(history, m.tail[0]) == count.request(m.request(history, m.tail[0], None))
    assert m.fill(history) == (m.fixed_tokens() + count.messages(history)) / 32_000


def test_the_provider_s_count_calibrates_every_later_estimate() -> None:
    m = meter()
    history: list[Message] = [UserMessage(content="fix the parser " * 50)]
    request = m.request(history, "", None)
    local = m.last_request_tokens
    m.observe(request, Usage(input_tokens=round(local * 1.2)))
    state = m.state(history)
    assert abs(m.calibration.ratio - 1.2) < 0.01 and state.calibrated and state.raw_total == local
    assert state.total >= m.calibration.apply(local)  # each part rounded up
    m.observe(request, None)  # a server that reports no usage changes nothing
    assert m.calibration.samples == 1


def test_the_reply_and_its_thinking_share_the_room_the_window_leaves() -> None:
    m = meter(window=8_000)
    request = m.request([UserMessage(content="plan it")], "", Thinking(4_000, "medium"))
    assert request.max_tokens + request.thinking.budget <= m.budget.reserve + m.thinking_budget
    assert m.counter.request(request) + request.max_tokens + request.thinking.budget <= 8_000


def test_another_model_starts_the_calibration_over_and_a_new_family_a_new_counter() -> None:
    m = meter(model="gpt-4o")
    m.calibration.observe(1_200, 1_000)
    counter = m.counter
    assert m.use_model("gpt-4o") is False and m.calibration.samples == 1  # the same model: nothing changes
    assert m.use_model("gpt-4o-mini") is False and m.counter is counter and m.calibration.samples == 0
    assert m.use_model("gpt-4") is True and m.counter.encoding_name == "cl100k_base"


def test_an_overflow_proves_the_count_low() -> None:
    m = meter(window=8_000)
    m.request([UserMessage(content="word " * 3_000)], "", None)
    m.learn_from_overflow()
    assert m.calibration.ratio >= (8_000 - m.last_request.max_tokens) / m.last_request_tokens  # type: ignore[union-attr]


def test_the_fixed_parts_and_the_budget_are_counted_again_when_what_they_come_from_changes() -> None:
    m = meter()
    history: list[Message] = [UserMessage(content="fix the parser")]
    before, budget = m.state(history), m.budget
    assert m.budget is budget and m.fixed_parts() is m.fixed_parts()  # kept while nothing changed
    more = ToolSchema(name="grep", description="Search the files for a pattern.", parameters={"type": "object"})
    m.tools = (*PROMPT.tools, more)  # MCP tools arrived
    m.memory = (SystemBlock(text="# OPENCLI.md\nUse pytest, and run ruff before every commit."),)
    after = m.state(history)
    assert after.tools == m.counter.tools(m.tools) > before.tools and after.memory > before.memory
    m.counter.tools_in_prompt = False  # a server whose template leaves the schemas out
    assert m.state(history).tools == 0 and m.fixed_tokens() == after.system + after.memory + REPLY_PRIMING
    m.window, m.max_tokens = 16_000, 2_000
    assert m.budget is not budget and (m.budget.window, m.budget.reserve) == (16_000, 2_000)
    m.config.threshold = 0.5  # /config set context.threshold
    assert m.budget.limit == 8_000


def test_the_held_history_is_checked_again_after_another_list_of_its_length_was_synced() -> None:
    """During a call the loop's list is checked once; a decayed copy of the same length synced meanwhile (the
    ledger then holds the copy's messages) must not be taken for it."""
    m = meter()
    history: list[Message] = [UserMessage(content="fix the parser"), AssistantMessage(content="on it " * 300)]
    decayed: list[Message] = [history[0], AssistantMessage(content="on it")]
    m.hold(history)
    try:
        assert m.sync(decayed).tokens() == m.counter.messages(decayed)
        assert m.sync(history).tokens() == m.counter.messages(history)
        assert m.sync(history).messages == history
    finally:
        m.hold(None)


def test_a_tail_other_than_the_latest_built_is_counted() -> None:
    m = meter()
    history: list[Message] = [UserMessage(content="fix the parser")]
    m.set_tail("[Reminder: current goal]\nfix the parser")
    longer = m.tail[0] + "\n[Failures]\n" + "pytest failed on test_parse_amount\n" * 20
    assert m.state(history, m.tail[0]).tail == m.state(history).tail == m.tail[1]
    counted = m.request_tokens(history, longer) - m.request_tokens(history, "")
    assert m.state(history, longer).tail == counted > m.tail[1]
