"""The compaction scheduler in the real loop: a summary that never comes back in time makes nobody wait.

The loop talks to one scripted server over HTTP; the background summary to another, whose answer is held
until the session is over. Whatever the window, the loop must never stand still for it: every request
stays under the hard limit, made room for by folds and truncations (no model call), and no wait is
announced. No timing in any assertion: the event sequence says what happened.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from swecli.agent import Agent
from swecli.config import ContextConfig, Settings
from swecli.context.manager import ContextManager, Prompt, Wiring
from swecli.events import BackgroundSummary, CompactionDone, Event, ModelCallStarted, Notice
from swecli.llm.openai import OpenAIProvider
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolCall, ToolMessage, UserMessage
from swecli.permissions import Policy
from swecli.testing.server import Call, Reply, ScriptedLLM, Step
from swecli.tools.base import Tool, ToolContext, ToolRegistry, ToolResult

SYSTEM = (SystemBlock(text="You are swecli, a coding agent."),)


class PageArgs(BaseModel):
    page: int = 0


def read_page(args: PageArgs, ctx: ToolContext) -> ToolResult:
    return ToolResult("\n".join(f"src/pkg/module.py:{i}: value_{i} = compute({i}, page={args.page})"
                                for i in range(120)))


TOOLS = ToolRegistry([Tool("read_page", "Read one page of the module.", PageArgs, read_page)])


def provider(llm: ScriptedLLM) -> OpenAIProvider:
    return OpenAIProvider(model="scripted-model", base_url=llm.base_url, api_key="k", name="openai-compatible",
                          sleep=lambda s: None, max_retries=0)


@pytest.mark.parametrize("window", [8_000, 32_000])
def test_the_loop_never_waits_for_a_summary_that_is_not_ready(window: int, project: Path) -> None:
    events: list[Event] = []
    pages = window * 3 // 1_800  # the prompt reaches the hard limit again and again
    gate = threading.Event()

    def main(body: dict[str, Any]) -> Step:
        sent = sum(isinstance(e, ModelCallStarted) for e in events)
        if sent > pages:
            return Reply("read them all", usage=False)
        return Reply(f"Reading page {sent}.", calls=[Call("read_page", {"page": sent})], usage=False)

    def summarize(body: dict[str, Any]) -> Step:
        gate.wait(60)
        return Reply("### Current task and state\nreading the module", usage=False)

    settings = Settings(model="scripted-model", context_limit=window, max_tokens=512, context=ContextConfig())
    with ScriptedLLM([main] * (pages + 2), strict=False) as llm, ScriptedLLM([summarize] * 5, strict=False) as slow:
        wiring = Wiring(on_event=events.append, summary_provider=lambda: provider(slow))
        context = ContextManager.from_settings(settings, Prompt(SYSTEM, TOOLS.schemas()), root=project, wiring=wiring)
        loop = provider(llm)
        agent = Agent(loop, TOOLS, context, ToolContext(root=project), Policy("auto"), on_event=events.append,
                      max_iterations=pages + 5)
        try:
            assert agent.run("read the module page by page").answer == "read them all"
            hard = context.budget.hard_limit
        finally:
            gate.set()
            context.close()
            loop.close()
    assert not [e for e in events if isinstance(e, Notice) and "waiting for the background summary" in e.text]
    sent = [e.context_tokens for e in events if isinstance(e, ModelCallStarted)]
    assert len(sent) == pages + 1 and max(sent) <= hard
    made = [e for e in events if isinstance(e, CompactionDone)]
    assert {e.strategy for e in made} <= {"fold", "truncate"} and any(e.strategy == "fold" for e in made)
    assert all(e.waited == 0 and e.tokens_after < e.tokens_before for e in made)
    phases = [e.phase for e in events if isinstance(e, BackgroundSummary)]
    assert phases == ["started", "cancelled"]  # one summary, still on its way when the session closed


def test_the_loop_waits_only_when_nothing_else_makes_room_and_says_so(project: Path) -> None:
    """The newest step alone is over the hard limit: folding and dropping older turns cannot help, so the
    loop waits for the summary (the last resort), says so, and the wait is counted."""
    events: list[Event] = []
    gate = threading.Event()

    def listen(event: Event) -> None:
        events.append(event)
        if isinstance(event, Notice) and "waiting for the background summary" in event.text:
            gate.set()

    def summarize(body: dict[str, Any]) -> Step:
        gate.wait(60)
        return Reply("### Current task and state\nreading the module", usage=False)

    settings = Settings(model="scripted-model", context_limit=6_000, max_tokens=512,
                        context=ContextConfig(keep_recent_tokens=500))
    with ScriptedLLM([summarize], strict=False) as slow:
        wiring = Wiring(on_event=listen, summary_provider=lambda: provider(slow))
        context = ContextManager.from_settings(settings, Prompt(SYSTEM, TOOLS.schemas()), root=project, wiring=wiring)
        history: list[Message] = [UserMessage(content="read the module")]
        for page in range(6):  # older steps, past the level where the summary starts
            call = ToolCall(id=f"c{page}", name="read_page", arguments=json.dumps({"page": page}))
            history += [AssistantMessage(content="reading " * 720, tool_calls=(call,)),
                        ToolMessage(tool_call_id=call.id, name="read_page", content="ok")]
        history = context.prepare(history, None)  # type: ignore[arg-type]  # the loop's provider is not used
        assert context.background_job is not None and not gate.is_set()
        call = ToolCall(id="last", name="read_page", arguments="{}")
        history += [AssistantMessage(content="my long plan " * 2_000, tool_calls=(call,)),  # over the hard limit
                    ToolMessage(tool_call_id=call.id, name="read_page", content="ok")]
        history = context.prepare(history, None)  # type: ignore[arg-type]
        context.close()
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert any("neither folding older outputs nor dropping older turns made room: waiting" in n for n in notices)
    waited = [e for e in events if isinstance(e, CompactionDone) and e.waited > 0]
    assert waited and waited[-1].strategy == "summarize"


def test_a_summary_made_ahead_leaves_out_of_its_span_what_will_be_added_before_it_is_applied() -> None:
    context = ContextManager(Prompt(SYSTEM), config=ContextConfig(keep_recent_tokens=8_000))
    scheduler = context.scheduler
    assert scheduler._span_params().keep_recent == 8_000  # nothing measured yet
    for step, when in enumerate([0.0, 3.0, 6.0]):  # 1k tokens a step, 3 s a step; a 30 s summary: 11 steps
        scheduler.runway.observe(10_000 + 1_000 * step, when, "turn")
    assert scheduler.runway.tokens_needed() == 11_000
    assert scheduler._span_params().keep_recent == 4_000  # at least half of what is kept stays out of the span
    scheduler.runway.summary_took(6.0)  # 3 steps of 1k: the span reaches 3k closer to the end
    assert scheduler._span_params().keep_recent == 8_000 - 3_000
