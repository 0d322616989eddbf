"""The context engine in the real loop, over real HTTP: swecli.agent.Agent with the OpenAI provider
against the scripted LLM server, a small context window, and assertions on the recorded requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from swecli.agent import Agent
from swecli.config import ContextConfig, Settings
from swecli.context.compaction import SUMMARY_SYSTEM
from swecli.context.manager import ContextManager, Prompt, Wiring
from swecli.events import CompactionDone, Event
from swecli.messages import SystemBlock
from swecli.permissions import Policy
from swecli.tools.base import Tool, ToolContext, ToolRegistry, ToolResult

server = pytest.importorskip("swecli.testing.server")
openai = pytest.importorskip("swecli.llm.openai")

SYSTEM = (SystemBlock(text="You are swecli, a coding agent.", cache=True),)


class DumpArgs(BaseModel):
    lines: int = 100


def dump(args: DumpArgs, ctx: ToolContext) -> ToolResult:
    body = "\n".join(f"src/pkg/module.py:{i}: value_{i} = compute({i})" for i in range(args.lines))
    return ToolResult(body, meta={"exit_code": 0})


TOOLS = ToolRegistry([Tool("dump", "Print lines of the module.", DumpArgs, dump)])


def run_session(project: Path, steps: list[Any], window: int) -> tuple[Any, list[dict[str, Any]], list[Event]]:
    events: list[Event] = []
    settings = Settings(model="scripted-model", context_limit=window, max_tokens=1_024,
                        context=ContextConfig(keep_recent_tokens=1_500, background_compaction=False))
    context = ContextManager.from_settings(settings, Prompt(SYSTEM, TOOLS.schemas()), root=project,
                                           wiring=Wiring(on_event=events.append))
    with server.ScriptedLLM(steps) as llm:
        provider = openai.OpenAIProvider(model="scripted-model", base_url=llm.base_url, api_key="test-key",
                                         name="openai-compatible", sleep=lambda seconds: None)
        agent = Agent(provider, TOOLS, context, ToolContext(root=project), Policy("auto"), on_event=events.append)
        try:
            turn = agent.run("dump the module four times, then say finished")
        finally:
            provider.close()
        requests = list(llm.requests)
    return turn, requests, events


def dump_reply() -> Any:
    return server.Reply(calls=[server.Call("dump", {"lines": 100})], usage=False)


def assert_wire_valid(body: dict[str, Any]) -> None:
    """What OpenAI-compatible servers require: tool results right after their call, content never null."""
    messages = body["messages"]
    pending: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in pending, f"orphan tool result {message['tool_call_id']}"
            pending.discard(message["tool_call_id"])
            continue
        assert not pending, f"calls without results before a {message['role']} message: {pending}"
        assert message.get("content") is not None
        if message["role"] == "assistant":
            pending = {c["id"] for c in message.get("tool_calls", [])}
    assert not pending


def is_summary_request(body: dict[str, Any]) -> bool:
    return body["messages"][0]["content"] == SUMMARY_SYSTEM


def test_auto_compaction_in_the_real_loop_keeps_every_request_valid(project: Path) -> None:
    steps = [dump_reply(), dump_reply(), dump_reply(), dump_reply(),
             server.Reply(text="### Current task and state\nfour dumps done, answer next", usage=False),
             server.Reply(text="finished", usage=False)]
    turn, requests, events = run_session(project, steps, window=7_000)
    assert turn.answer == "finished"
    assert [is_summary_request(r) for r in requests] == [False] * 4 + [True, False]
    for body in requests:
        assert_wire_valid(body)
    final = requests[5]["messages"]
    assert final[0] == {"role": "system", "content": SYSTEM[0].text}
    assert final[1] == {"role": "user", "content": "dump the module four times, then say finished"}
    assert final[2]["role"] == "user" and "four dumps done, answer next" in final[2]["content"]
    assert ".swecli/compactions/" in final[2]["content"]
    done = [e for e in events if isinstance(e, CompactionDone)]
    assert len(done) == 1 and done[0].trigger == "auto" and done[0].tokens_after < done[0].tokens_before
    assert list((project / ".swecli" / "compactions").glob("*.jsonl"))


def test_provider_context_length_error_compacts_and_retries(project: Path) -> None:
    steps = [dump_reply(), dump_reply(), dump_reply(), server.Fail.context_overflow(),
             server.Reply(text="summary after the overflow", usage=False),
             server.Reply(text="finished", usage=False)]
    turn, requests, events = run_session(project, steps, window=100_000)
    assert turn.answer == "finished"
    assert is_summary_request(requests[4])
    retry = requests[5]
    assert_wire_valid(retry)
    assert any("summary after the overflow" in m.get("content", "") for m in retry["messages"])
    assert len(retry["messages"]) < len(requests[3]["messages"])
    assert [e.trigger for e in events if isinstance(e, CompactionDone)] == ["overflow"]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_small_window_gets_a_max_tokens_that_fits_it_on_the_wire(project: Path, wire: str) -> None:
    """A 1,024-token window with the default max_tokens (8,192): every request body asks for a reply
    that fits the window together with the prompt."""
    from swecli.context.tokens import TokenCounter

    settings = Settings(model="scripted-model", context_limit=1_024)
    assert settings.max_tokens == 8_192
    context = ContextManager.from_settings(settings, Prompt(SYSTEM, TOOLS.schemas()), root=project)
    prompts: list[int] = []
    real_request = context.request

    def counted(history: list[Any], thinking: Any = None) -> Any:
        request = real_request(history, thinking)
        prompts.append(TokenCounter().request(request))
        return request

    context.request = counted  # type: ignore[method-assign]
    steps = [server.Reply(calls=[server.Call("dump", {"lines": 5})], usage=False), server.Reply("done", usage=False)]
    with server.ScriptedLLM(steps, wire=wire) as llm:
        module = openai if wire == "openai" else pytest.importorskip("swecli.llm.anthropic")
        cls = module.OpenAIProvider if wire == "openai" else module.AnthropicProvider
        provider = cls(model="scripted-model", base_url=llm.base_url, api_key="test-key", sleep=lambda s: None)
        agent = Agent(provider, TOOLS, context, ToolContext(root=project), Policy("auto"))
        try:
            assert agent.run("dump five lines").answer == "done"
        finally:
            provider.close()
        bodies = list(llm.requests)
    assert len(bodies) == len(prompts) == 2
    for body, prompt in zip(bodies, prompts, strict=True):
        asked = body.get("max_tokens", body.get("max_completion_tokens"))  # OpenAI's own name for it
        assert asked is not None and asked <= 256
        assert prompt + asked <= 1_024
