from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from swecli.context.prefix import PrefixMonitor, Unit, serialize_message, shared_prefix
from swecli.context.tokens import TokenCounter
from swecli.llm.base import ModelRequest
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolCall, ToolMessage, ToolSchema, UserMessage
from swecli.testing.server import Call, Reply, ScriptedLLM, Step

SYSTEM = (SystemBlock(text="You are swecli.", cache=True),)
TOOLS = (ToolSchema(name="read_file", description="Read a file.", parameters={"type": "object", "properties": {}}),)


def request(history: list[Message], tail: str = "", system: tuple[SystemBlock, ...] = SYSTEM) -> ModelRequest:
    return ModelRequest(system=system, messages=tuple(history), tools=TOOLS, tail=tail)


def step(n: int, output: str = "") -> list[Message]:
    call = ToolCall(id=f"c{n}", name="read_file", arguments=f'{{"path": "f{n}.py"}}')
    return [AssistantMessage(tool_calls=(call,)),
            ToolMessage(tool_call_id=call.id, name="read_file", content=output or f"contents of f{n}\n" * 50)]


@pytest.fixture
def monitor() -> PrefixMonitor:
    return PrefixMonitor(TokenCounter())


def test_pure_appends_reuse_the_whole_previous_request(monitor: PrefixMonitor) -> None:
    history: list[Message] = [UserMessage(content="read everything")]
    first = monitor.observe(request(history, tail="goal: read"))
    assert first.number == 1 and first.shared_tokens == 0 and not first.warning
    previous = first.total_tokens - (4 + monitor.counter.text("goal: read"))  # all but the tail
    for n in range(5):
        history += step(n)
        report = monitor.observe(request(history, tail=f"goal: read, step {n}"))
        assert not report.warning, report.warning
        assert report.shared_tokens == previous
        previous = report.total_tokens - (4 + monitor.counter.text(f"goal: read, step {n}"))
        assert 0 < report.reuse_ratio < 1
    stats = monitor.stats
    assert (stats.requests, stats.breaks, stats.violations, stats.rewrites) == (6, 0, 0, 0)
    assert stats.effective_tokens < stats.total_tokens


def test_reading_only_the_new_messages_reports_what_comparing_whole_requests_reports(
        monitor: PrefixMonitor) -> None:
    """Appends take the fast path (only new messages are serialized); every report must still equal the
    comparison of the two requests' every unit."""
    history: list[Message] = [UserMessage(content="read everything")]
    sequence = [request(history, tail="goal")]
    for n in range(4):
        history = history + step(n)
        sequence.append(request(history, tail="goal" if n % 2 else f"goal {n}"))
    sequence.append(sequence[-1])  # the same request again (a retry after an error)
    sequence.append(request(history))  # no tail
    history = history + step(9)
    sequence.append(request(history, tail="goal"))
    sequence.append(request(history[:3] + history[4:], tail="goal"))  # a message removed, unmarked
    sequence.append(request(history, system=(SystemBlock(text="Another system prompt."),)))
    reference = PrefixMonitor(TokenCounter())
    before: list[Unit] = []
    for req in sequence:
        units = reference.units(req)
        shared = shared_prefix(before, units)
        report = monitor.observe(req)
        assert (report.total_tokens, report.shared_units, report.shared_tokens) == \
            (sum(u.tokens for u in units), shared, sum(u.tokens for u in units[:shared]))
        before = units
    assert monitor.stats.violations == 2


def test_a_rewritten_old_message_is_reported(monitor: PrefixMonitor) -> None:
    history: list[Message] = [UserMessage(content="go"), *step(0), *step(1), *step(2)]
    monitor.observe(request(history))
    old = history[2]
    assert isinstance(old, ToolMessage)
    history[2] = ToolMessage(tool_call_id=old.tool_call_id, name=old.name, content="(cleared)")
    history += step(3)
    report = monitor.observe(request(history))
    assert "message 3 of 7" in report.warning and "read_file result c0" in report.warning
    assert "append-only" in report.warning
    assert report.shared_units == len(TOOLS) + len(SYSTEM) + 2
    assert monitor.stats.violations == 1 and monitor.stats.breaks == 1


def test_an_equal_copy_of_a_message_is_no_violation(monitor: PrefixMonitor) -> None:
    """Byte identity is what the cache sees: a rebuilt but identical message (e.g. a resumed
    transcript) keeps the prefix."""
    history: list[Message] = [UserMessage(content="go"), *step(0)]
    monitor.observe(request(history))
    copy = [m.model_copy() for m in history]
    report = monitor.observe(request([*copy, *step(1)]))
    assert not report.warning and report.shared_units == len(TOOLS) + len(SYSTEM) + 3


def test_marked_rewrites_are_counted_not_warned(monitor: PrefixMonitor) -> None:
    history: list[Message] = [UserMessage(content="go"), *step(0), *step(1)]
    monitor.observe(request(history))
    monitor.mark_rewrite("decay")
    monitor.mark_rewrite("compaction")
    shorter: list[Message] = [UserMessage(content="go"), UserMessage(content="summary", kind="summary"), *step(1)]
    report = monitor.observe(request(shorter))
    assert not report.warning and report.rewrite == "decay; compaction"
    assert (monitor.stats.rewrites, monitor.stats.breaks, monitor.stats.violations) == (1, 1, 0)
    # the mark applies to one request only
    shorter.pop()
    assert "was removed" in monitor.observe(request(shorter)).warning


def test_system_prompt_changes_are_violations(monitor: PrefixMonitor) -> None:
    history: list[Message] = [UserMessage(content="go")]
    monitor.observe(request(history))
    report = monitor.observe(request(history, system=(SystemBlock(text="You are swecli. It is 10:42."),)))
    assert "the system prompt changed" in report.warning
    assert report.shared_units == len(TOOLS)


def test_the_tail_may_change_freely(monitor: PrefixMonitor) -> None:
    history: list[Message] = [UserMessage(content="go")]
    monitor.observe(request(history, tail="todo 0/3"))
    report = monitor.observe(request(history, tail="todo 1/3"))
    assert not report.warning and monitor.stats.breaks == 0


def test_only_two_different_objects_in_one_place_are_serialized(monitor: PrefixMonitor) -> None:
    """Appends are compared by identity: nothing is serialized however long the history (the tool schemas
    are, once, to be counted). A rewrite serializes the pairs it compares, up to the first difference."""
    history: list[Message] = [UserMessage(content="go")]
    monitor.observe(request(history))
    assert monitor.serialized == len(TOOLS)
    for n in range(20):
        history += step(n)
        monitor.observe(request(history, tail=f"step {n}"))
    assert monitor.serialized == len(TOOLS)
    monitor.mark_rewrite("compaction")
    summary = UserMessage(content="summary of steps 0-9", kind="summary")
    compacted = [history[0], summary, *history[21:]]  # the prompt kept, a summary, the newest steps kept
    report = monitor.observe(request(compacted, tail="step 19"))
    assert report.shared_units == len(TOOLS) + len(SYSTEM) + 1 and not report.warning
    assert monitor.serialized == len(TOOLS) + 2  # the first step's call, and the summary in its place
    copies = [m.model_copy() for m in compacted]  # equal, but other objects (a resumed transcript)
    report = monitor.observe(request(copies, tail="step 19"))
    assert not report.warning and report.shared_units == len(TOOLS) + len(SYSTEM) + len(copies) + 1
    assert monitor.serialized == len(TOOLS) + 2  # equal messages are equal fields: no bytes needed


def test_serialization_is_deterministic_and_complete() -> None:
    a = ToolMessage(tool_call_id="x", name="bash", content="out", is_error=True)
    b = ToolMessage(tool_call_id="x", name="bash", content="out", is_error=False)
    assert serialize_message(a) == serialize_message(a.model_copy())
    assert serialize_message(a) != serialize_message(b)
    assert serialize_message(a).index('"content"') < serialize_message(a).index('"tool_call_id"')


def test_the_real_loop_only_appends_between_requests(project: Path) -> None:
    """build_agent + the OpenAI provider over HTTP: every request the loop builds passes the check,
    and on the wire each request's messages start with the previous request's."""
    from swecli.assembly import build_agent
    from swecli.config import Settings
    from swecli.llm.factory import make_provider

    (project / "a.py").write_text("\n".join(f"x{i} = {i}" for i in range(300)))
    steps: list[Step] = [
        Reply(calls=[Call("read_file", {"path": "a.py"})]), Reply(calls=[Call("grep", {"pattern": "x1"})]),
        Reply("thinking", calls=[Call("bash", {"command": "echo hi"}), Call("list_files", {})]), Reply("done")]
    with ScriptedLLM(steps) as llm:
        settings = Settings(provider="openai-compatible", model="m", base_url=llm.base_url, mode="auto")
        provider = make_provider(settings)
        agent = build_agent(settings, project, provider)
        monitor = PrefixMonitor(agent.context.counter)
        build = agent.context.request
        reports = []

        def observed(history: list[Message]) -> ModelRequest:
            built = build(history)
            reports.append(monitor.observe(built))
            return built

        agent.context.request = observed  # type: ignore[method-assign]
        agent.run("read a.py")
        provider.close()
    assert [r.warning for r in reports] == [""] * 4
    assert all(r.shared_tokens > 0 for r in reports[1:])
    bodies = [b["messages"] for b in llm.requests]
    for before, after in itertools.pairwise(bodies):
        stable = before[:-1] if before[-1]["role"] == "user" else before  # a dynamic tail may trail
        assert after[:len(stable)] == stable
