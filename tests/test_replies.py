"""Replies the loop must act on, through the real agent loop and the real providers over HTTP, on
both wires: cut at the output limit (answer or tool call), paused, refused, empty; and the token
counts of a server that reports no usage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from swecli.agent import Agent
from swecli.config import Settings
from swecli.context.manager import ContextManager, Limits, Prompt
from swecli.events import Event, ModelCallFinished, Notice, TurnFinished
from swecli.llm.factory import make_provider
from swecli.messages import AssistantMessage, SystemBlock, ToolMessage
from swecli.permissions import Policy
from swecli.testing.server import Call, Reply, ScriptedLLM, Wire
from swecli.tools.base import Tool, ToolContext, ToolRegistry, ToolResult

WIRES = ["openai", "anthropic"]


class WriteArgs(BaseModel):
    path: str
    content: str


def tools(written: list[str]) -> ToolRegistry:
    def write(args: WriteArgs, ctx: ToolContext) -> ToolResult:
        written.append(args.path)
        return ToolResult(f"wrote {args.path}")

    return ToolRegistry([Tool("write_file", "Write a file.", WriteArgs, write)])


def http_agent(llm: ScriptedLLM, root: Path, events: list[Event], written: list[str] | None = None,
               max_tokens: int = 512) -> Agent:
    provider_name = "anthropic" if llm.wire == "anthropic" else "openai-compatible"
    settings = Settings(provider=provider_name, model="scripted-model", base_url=llm.base_url, api_key="k",
                        max_retries=0)
    registry = tools(written if written is not None else [])
    context = ContextManager(Prompt((SystemBlock(text="You are a test."),), registry.schemas()),
                             Limits(max_tokens=max_tokens))
    return Agent(make_provider(settings), registry, context, ToolContext(root=root), Policy("auto"),
                 on_event=events.append)


def notices(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, Notice)]


@pytest.mark.parametrize("wire", WIRES)
def test_an_answer_cut_at_the_output_limit_says_so(project: Path, wire: Wire) -> None:
    events: list[Event] = []
    with ScriptedLLM([Reply("The first half of a long expl", finish_reason="length" if wire == "openai"
                            else "max_tokens")], wire=wire) as llm:
        turn = http_agent(llm, project, events).run("explain everything")
    assert turn.stop_reason == "output_limit" and turn.answer == "The first half of a long expl"
    assert any("cut at the output limit (max_tokens 512)" in n for n in notices(events))


@pytest.mark.parametrize("wire", WIRES)
def test_a_tool_call_cut_at_the_output_limit_is_not_run_and_the_model_retries(project: Path, wire: Wire) -> None:
    cut = '{"path": "big.txt", "content": "line 1\\nline 2\\nli'
    events: list[Event] = []
    written: list[str] = []
    steps = [
        Reply(calls=[Call("write_file", cut)], finish_reason="length" if wire == "openai" else "max_tokens"),
        Reply(calls=[Call("write_file", {"path": "big.txt", "content": "part 1"})]),
        Reply("Wrote it in parts."),
    ]
    with ScriptedLLM(steps, wire=wire) as llm:
        turn = http_agent(llm, project, events, written).run("write a big file")
    assert turn.stop_reason == "done" and turn.answer == "Wrote it in parts."
    assert written == ["big.txt"]  # only the complete retry ran
    told = llm.requests[1]["messages"]
    text = json.dumps(told)
    assert "cut off at the output limit (512 tokens)" in text and "Retry with smaller arguments" in text
    assert any("write_file call was cut at the output limit" in n for n in notices(events))


def test_anthropic_pause_turn_continues_the_turn(project: Path) -> None:
    events: list[Event] = []
    steps = [Reply("Searching the docs first.", finish_reason="pause_turn"), Reply(" Found it: use --flag.")]
    with ScriptedLLM(steps, wire="anthropic") as llm:
        turn = http_agent(llm, project, events).run("how do I do it?")
    assert turn.stop_reason == "done" and turn.answer == " Found it: use --flag." and turn.iterations == 2
    # The paused answer went back as the last (assistant) turn, so the model continues it.
    second = llm.requests[1]["messages"]
    assert second[-1]["role"] == "assistant" and second[-1]["content"][0]["text"] == "Searching the docs first."
    assert not notices(events)


@pytest.mark.parametrize("wire", WIRES)
def test_an_empty_answer_is_reported_as_empty(project: Path, wire: Wire) -> None:
    events: list[Event] = []
    with ScriptedLLM([Reply("")], wire=wire) as llm:
        turn = http_agent(llm, project, events).run("hello?")
    assert turn.stop_reason == "empty" and turn.answer == ""
    assert notices(events) == ["the model returned an empty answer (no text and no tool call)"]


def test_an_openai_refusal_is_shown_as_a_refusal(project: Path) -> None:
    events: list[Event] = []
    with ScriptedLLM([Reply(refusal="I can't help with that.")]) as llm:
        turn = http_agent(llm, project, events).run("do something bad")
    assert turn.stop_reason == "refused" and turn.answer == "I can't help with that."
    assert notices(events) == ["the model refused this request"]


def test_an_anthropic_refusal_is_shown_as_a_refusal(project: Path) -> None:
    events: list[Event] = []
    with ScriptedLLM([Reply("I won't do that.", finish_reason="refusal")], wire="anthropic") as llm:
        turn = http_agent(llm, project, events).run("do something bad")
    assert turn.stop_reason == "refused" and turn.answer == "I won't do that."


@pytest.mark.parametrize("wire", WIRES)
def test_without_usage_from_the_server_the_turn_counts_locally_and_says_so(project: Path, wire: Wire) -> None:
    events: list[Event] = []
    steps = [Reply(calls=[Call("write_file", {"path": "a.txt", "content": "alpha " * 50})], usage=False),
             Reply("Done writing.", usage=False)]
    with ScriptedLLM(steps, wire=wire) as llm:
        agent = http_agent(llm, project, events)
        turn = agent.run("write a.txt")
    calls = [e for e in events if isinstance(e, ModelCallFinished)]
    assert [c.reported for c in calls] == [False, False]
    assert all(c.usage.estimated_requests == 1 and c.usage.input_tokens > 0 for c in calls)
    # The prompt as the meter counts it; the output from the tool call's name and arguments.
    assert calls[0].usage.input_tokens == agent.context.counter.request(agent.context.request(agent.history[:1]))
    assert 50 <= calls[0].usage.output_tokens <= 120
    assert turn.usage.estimated and turn.usage.estimated_requests == 2 and turn.usage.requests == 2
    assert turn.usage.input_tokens > calls[0].usage.input_tokens  # the second prompt is larger


def test_reported_usage_is_not_marked_estimated(project: Path) -> None:
    events: list[Event] = []
    with ScriptedLLM([Reply("hi", usage={"prompt_tokens": 120, "completion_tokens": 3})]) as llm:
        turn = http_agent(llm, project, events).run("hi")
    assert not turn.usage.estimated and (turn.usage.input_tokens, turn.usage.output_tokens) == (120, 3)
    finished = [e for e in events if isinstance(e, TurnFinished)]
    assert finished and finished[0].usage == turn.usage


def test_a_stream_with_usage_and_done_but_no_finish_reason_is_complete(project: Path) -> None:
    """kimi-k2 through OpenRouter: one request, not six."""
    events: list[Event] = []
    with ScriptedLLM([Reply("All good.", finish_reason=None)]) as llm:
        turn = http_agent(llm, project, events).run("status?")
    assert turn.answer == "All good." and turn.stop_reason == "done"
    assert len(llm.requests) == 1


def test_a_stream_without_finish_reason_nor_usage_is_still_retried(project: Path) -> None:
    """llama.cpp ends a running stream with a bare [DONE] when a second request arrives: incomplete."""
    events: list[Event] = []
    with ScriptedLLM([Reply("cut sho", finish_reason=None, usage=False), Reply("Complete answer.")]) as llm:
        agent = http_agent(llm, project, events)
        policy = agent.provider.retry  # type: ignore[attr-defined]
        policy.max_retries, policy.sleep = 1, lambda seconds: None
        turn = agent.run("status?")
    assert turn.answer == "Complete answer." and len(llm.requests) == 2


def request_with_tools(body: dict[str, Any]) -> bool:
    return bool(body.get("tools"))


def test_tool_choice_auto_is_sent_whenever_tools_are_offered(project: Path) -> None:
    with ScriptedLLM([Reply("ok")]) as llm:
        http_agent(llm, project, []).run("hi")
    assert llm.requests[0]["tool_choice"] == "auto" and request_with_tools(llm.requests[0])


def test_messages_keep_their_shape_after_the_turn(project: Path) -> None:
    """The cut call's error result pairs with its call, so the next request is valid on both wires."""
    events: list[Event] = []
    steps = [Reply(calls=[Call("write_file", '{"path": "x", "content": "abc')], finish_reason="length"),
             Reply("Giving up on that.")]
    with ScriptedLLM(steps) as llm:
        agent = http_agent(llm, project, events)
        agent.run("write")
    results = [m for m in agent.history if isinstance(m, ToolMessage)]
    calls = [c for m in agent.history if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert [r.tool_call_id for r in results] == [c.id for c in calls] and results[0].is_error


def test_a_content_filter_stop_is_reported_as_a_refusal(project: Path) -> None:
    events: list[Event] = []
    with ScriptedLLM([Reply("Here is how to", finish_reason="content_filter")]) as llm:
        turn = http_agent(llm, project, events).run("something filtered")
    assert turn.stop_reason == "refused" and notices(events) == ["the provider's content filter stopped the answer"]
