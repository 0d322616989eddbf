from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from swecli.agent import INTERRUPTED, Agent
from swecli.collector import COLLECTOR
from swecli.context.manager import ContextManager, Prompt, Wiring
from swecli.events import CompactionDone, Event, ModelCallFinished, ModelCallStarted, ToolFinished, TurnFinished
from swecli.llm.base import CancelToken, ContextOverflowError, ModelRequest, StreamEvent
from swecli.messages import AssistantMessage, SystemBlock, ToolMessage, UserMessage, dangling_tool_calls
from swecli.permissions import Policy
from swecli.testing.model import ScriptedModel, calls, say
from swecli.tools.base import Tool, ToolContext, ToolRegistry, ToolResult
from tests.helpers import YOUNG, garbage, loop_agent, watching_collections


class EchoArgs(BaseModel):
    text: str


class Nothing(BaseModel):
    pass


def registry(log: list[str]) -> ToolRegistry:
    def echo(args: EchoArgs, ctx: ToolContext) -> ToolResult:
        log.append(args.text)
        return ToolResult(f"echo: {args.text}", summary="echoed")

    def touch(args: Nothing, ctx: ToolContext) -> ToolResult:
        (ctx.root / "touched").write_text("x")
        return ToolResult("touched")

    def stop(args: Nothing, ctx: ToolContext) -> ToolResult:
        ctx.cancel.cancel()  # the user presses Esc while this tool runs
        return ToolResult("stopped")

    return ToolRegistry([
        Tool("echo", "Echo text.", EchoArgs, echo),
        Tool("touch", "Create a file.", Nothing, touch, mutating=True),
        Tool("stop", "Simulates an interrupt.", Nothing, stop),
    ])


def make_agent(model: ScriptedModel, root: Path, mode: str = "auto", log: list[str] | None = None,
               events: list[Event] | None = None, max_iterations: int = 20) -> Agent:
    """The loop with this file's tools (echo, touch, stop)."""
    sink = events if events is not None else []
    return loop_agent(model, registry(log if log is not None else []), root, mode=mode, on_event=sink.append,
                      max_iterations=max_iterations)


def test_react_loop_runs_tools_then_answers(project: Path) -> None:
    model = ScriptedModel([calls(("echo", '{"text": "a"}'), ("echo", '{"text": "b"}')), say("all done")])
    log: list[str] = []
    events: list[Event] = []
    turn = make_agent(model, project, log=log, events=events).run("do it")
    assert turn.answer == "all done" and turn.stop_reason == "done" and turn.iterations == 2
    assert turn.tool_calls == 2 and log == ["a", "b"]
    second = model.requests[1].messages
    assert [m.role for m in second] == ["user", "assistant", "tool", "tool"]
    assert isinstance(second[2], ToolMessage) and second[2].content == "echo: a"
    assert isinstance(events[-1], TurnFinished)
    model.assert_done()


def test_bad_arguments_and_unknown_tools_go_back_to_the_model(project: Path) -> None:
    model = ScriptedModel([calls(("echo", '{"text": '), ("nope", "{}"), ("echo", '{"txt": 1}')), say("ok")])
    make_agent(model, project).run("go")
    results = [m for m in model.requests[1].messages if isinstance(m, ToolMessage)]
    assert all(r.is_error for r in results)
    assert "arguments for echo end before the JSON object is complete" in results[0].content
    assert "Unknown tool 'nope'" in results[1].content and "echo" in results[1].content
    assert "text: Field required" in results[2].content


def test_plan_mode_refuses_mutating_tools(project: Path) -> None:
    model = ScriptedModel([calls(("touch", "{}")), say("here is my plan")])
    events: list[Event] = []
    make_agent(model, project, mode="plan", events=events).run("change things")
    assert not (project / "touched").exists()
    result = model.requests[1].messages[-1]
    assert isinstance(result, ToolMessage) and result.is_error and "plan mode" in result.content
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert finished and not finished[0].approved


def test_default_mode_without_a_person_refuses_instead_of_blocking(project: Path) -> None:
    model = ScriptedModel([calls(("touch", "{}")), say("could not")])
    make_agent(model, project, mode="default").run("change things")
    assert not (project / "touched").exists()
    assert "--mode auto" in model.requests[1].messages[-1].content  # type: ignore[union-attr]


def test_iteration_limit_is_reported(project: Path) -> None:
    model = ScriptedModel([calls(("echo", '{"text": "x"}'))] * 3)
    turn = make_agent(model, project, max_iterations=3).run("loop forever")
    assert turn.stop_reason == "iteration_limit" and "3 iterations" in turn.answer


def test_interrupt_during_tools_closes_every_open_call(project: Path) -> None:
    model = ScriptedModel([calls(("stop", "{}"), ("echo", '{"text": "never"}')), say("resumed")])
    log: list[str] = []
    agent = make_agent(model, project, log=log)
    turn = agent.run("go")
    assert turn.stop_reason == "interrupted" and log == []
    assert not dangling_tool_calls(agent.history)
    assert any(isinstance(m, ToolMessage) and m.content == INTERRUPTED for m in agent.history)
    assert agent.run("continue").answer == "resumed"  # the next request is valid and goes out
    model.assert_done()


class ShrinkingContext(ContextManager):
    def compact(self, history, provider, trigger, focus=""):  # type: ignore[no-untyped-def]
        self.compactions.append(CompactionDone(trigger, "test", 100, 10, 1, 0.5, waited=0.5))
        return [UserMessage(content="summary", kind="summary"), history[-1]]


def test_context_overflow_compacts_and_retries_once(project: Path) -> None:
    model = ScriptedModel([say("first"), ContextOverflowError("too long"), say("after compaction")])
    tools = registry([])
    context = ShrinkingContext(Prompt((SystemBlock(text="s"),), tools.schemas()))
    agent = Agent(model, tools, context, ToolContext(root=project), Policy("auto"))
    agent.run("one")
    turn = agent.run("two")
    assert turn.answer == "after compaction"
    assert [c.trigger for c in context.compactions] == ["overflow"]
    assert (turn.compactions, turn.compaction_wait) == (1, 0.5)  # what headless json reports
    assert [m.content for m in model.requests[-1].messages] == ["summary", "two"]


def test_usage_adds_up(project: Path) -> None:
    model = ScriptedModel([calls(("echo", '{"text": "x"}')), say("done")])
    agent = make_agent(model, project)
    turn = agent.run("go")
    assert turn.usage.input_tokens == 20 and turn.usage.requests == 2
    assert isinstance(agent.history[-1], AssistantMessage)


def test_tools_that_join_between_requests_are_appended_as_a_planned_prefix_change(project: Path) -> None:
    from swecli.config import Settings
    from swecli.tools.base import ToolChanges

    class Arrivals:
        """Offers `late` at the second poll (a server that finished starting during the task)."""

        def __init__(self) -> None:
            self.polls = 0

        def poll(self) -> ToolChanges:
            self.polls += 1
            late = Tool("late", "Arrived late.", EchoArgs, lambda a, c: ToolResult(f"late: {a.text}"))
            return ToolChanges((late,), reason="server ready") if self.polls == 2 else ToolChanges()

        def resolve(self, name: str) -> None:
            return None

    model = ScriptedModel([calls(("echo", '{"text": "a"}')), calls(("late", '{"text": "b"}')), say("done")])
    tools = registry([])
    tools.source = Arrivals()
    events: list[Event] = []
    context = ContextManager.from_settings(Settings(), Prompt((SystemBlock(text="sys"),), tools.schemas()),
                                           root=project, wiring=Wiring(on_event=events.append))
    agent = Agent(model, tools, context, ToolContext(root=project), Policy("auto"), on_event=events.append)
    assert agent.run("go").answer == "done"
    first, second, third = ([t.name for t in r.tools] for r in model.requests)
    assert second == third == [*first, "late"]
    assert agent.history[-2].content == "late: b"  # type: ignore[union-attr]
    stats = context.mechanisms.prefix.stats  # type: ignore[union-attr]
    assert stats.rewrites == 1 and stats.violations == 0


def test_tools_get_ready_with_the_next_call_s_sandbox_when_a_request_goes_out(project: Path) -> None:
    from swecli.tools.sandbox import Sandbox

    seen: list[tuple[str, object]] = []
    tools = registry([])
    sent: list[int] = []  # requests the model had received when the tools got ready

    def get_ready(ctx: ToolContext) -> None:
        seen.append(("ready", ctx.sandbox))
        sent.append(len(model.requests))

    ready = Tool("ready", "Gets ready.", Nothing, lambda args, ctx: ToolResult("ok"), ready=get_ready)
    tools = ToolRegistry([*(tools.get(name) for name in tools.names()), ready])  # type: ignore[misc]
    model = ScriptedModel([calls(("echo", '{"text": "a"}')), say("done"), say("done again")])
    agent = loop_agent(model, tools, project, on_event=lambda e: seen.append((type(e).__name__, None)))
    box = Sandbox.for_project(project)
    agent.policy.sandbox = box
    agent.run("go")
    order = [name for name, _ in seen if name in ("ready", "ModelCallStarted", "ToolFinished")]
    # a turn's first request: the tools get ready once it is out, before its calls run; after a call, once, while
    # the next request is built (not again as that one goes out: nothing between them changes the sandbox, and
    # each call costs the loop)
    assert order == ["ModelCallStarted", "ready", "ToolFinished", "ready", "ModelCallStarted"]
    assert sent == [1, 1]  # the first readying came after the request, not on its way
    assert all(sandbox == box for name, sandbox in seen if name == "ready")
    agent.policy.mode = "plan"
    agent.run("again")
    assert [s for name, s in seen if name == "ready"][-1] == box.read_only()  # plan mode: bash's read-only sandbox
    assert sent == [1, 1, 3]


def test_a_failure_to_get_ready_ends_the_turn_with_its_error(project: Path) -> None:
    def fail(ctx: ToolContext) -> None:
        raise RuntimeError("the sandbox cannot start")

    tools = registry([])
    broken = Tool("broken", "Cannot get ready.", Nothing, lambda args, ctx: ToolResult("ok"), ready=fail)
    tools = ToolRegistry([*(tools.get(name) for name in tools.names()), broken])  # type: ignore[misc]
    agent = loop_agent(ScriptedModel([say("done")]), tools, project)
    with pytest.raises(RuntimeError, match="the sandbox cannot start"):
        agent.run("go")


def test_a_turn_that_ended_after_its_calls_gets_its_tools_ready_again_for_its_own_first_request(
        project: Path) -> None:
    """A turn stopped right after its calls were readied for (the iteration limit) leaves the next turn's first
    request unreadied for: the mode may have changed in between, and the tools get ready with its sandbox."""
    from swecli.tools.sandbox import Sandbox

    seen: list[object] = []
    tools = registry([])
    ready = Tool("ready", "Gets ready.", Nothing, lambda args, ctx: ToolResult("ok"),
                 ready=lambda ctx: seen.append(ctx.sandbox))
    tools = ToolRegistry([*(tools.get(name) for name in tools.names()), ready])  # type: ignore[misc]
    model = ScriptedModel([calls(("echo", '{"text": "a"}')), say("done")])
    agent = loop_agent(model, tools, project, max_iterations=1)
    box = Sandbox.for_project(project)
    agent.policy.sandbox = box
    assert agent.run("go").stop_reason == "iteration_limit"
    assert seen == [box, box]  # the first request, then after its call
    agent.policy.mode = "plan"
    agent.run("again")
    assert seen == [box, box, box.read_only()]  # the new turn's request: plan mode's read-only sandbox


class Litter(BaseModel):
    rounds: int = 5
    """Young-generation collections' worth of garbage (fewer than a hold allows: `HELD_FACTOR`)."""


class Windows:
    """Collections seen, and those that ran between a reply (`ModelCallFinished`) and the next request
    (`ModelCallStarted`): the loop's own path, where nobody should wait for one."""

    def __init__(self) -> None:
        self.open = False
        self.collections: list[str] = []
        self.on_the_path = 0
        self.collected = threading.Event()

    def event(self, event: Event) -> None:
        if isinstance(event, ModelCallFinished):
            self.open = True
        elif isinstance(event, ModelCallStarted):
            self.open = False

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.collections.append(threading.current_thread().name)
            self.on_the_path += self.open
            self.collected.set()


def littering_agent(model: ScriptedModel, root: Path, windows: Windows) -> Agent:
    """The loop with a tool that allocates enough cyclic garbage for several young-generation collections."""
    def litter(args: Litter, ctx: ToolContext) -> ToolResult:
        garbage(args.rounds)
        return ToolResult("littered")

    return loop_agent(model, ToolRegistry([Tool("litter", "Allocate.", Litter, litter)]), root, on_event=windows.event)


@pytest.fixture
def windows() -> Iterator[Windows]:
    seen = Windows()
    with watching_collections(seen):
        yield seen
    COLLECTOR.resume()  # the collection the turn's end left pending (its thread would run it shortly)
    assert gc.get_threshold()[0] == YOUNG, "the loop left the collector held"


def test_a_model_that_answers_at_once_collects_on_its_replies_not_between_a_reply_and_the_next_request(
        project: Path, windows: Windows) -> None:
    model = ScriptedModel([*(calls(("litter", "{}")) for _ in range(6)), say("done")])
    littering_agent(model, project, windows).run("go")
    assert windows.on_the_path == 0
    assert len(windows.collections) >= 6  # a session that never waits still collects


class ThinkingModel(ScriptedModel):
    """A model that thinks until the collection it was sent with has run."""

    def __init__(self, steps: list[AssistantMessage], collected: threading.Event) -> None:
        super().__init__(list(steps))
        self.collected = collected

    def stream(self, request: ModelRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        if len(self.requests) > 0:
            assert self.collected.wait(10), "nothing was collected while the model thought"
            self.collected.clear()
        yield from super().stream(request, cancel)


def test_what_a_call_left_is_collected_while_the_model_thinks(project: Path, windows: Windows) -> None:
    model = ThinkingModel([*(calls(("litter", "{}")) for _ in range(4)), say("done")], windows.collected)
    littering_agent(model, project, windows).run("go")
    assert windows.on_the_path == 0
    assert windows.collections.count("swecli-gc") >= 4
