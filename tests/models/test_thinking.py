"""The `thinking` setting on both wires, and Anthropic thinking blocks through the real loop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swecli.config import ConfigError, load_settings
from swecli.events import Event, ReasoningDelta
from swecli.llm.anthropic import AnthropicProvider, AnthropicStream, wire_messages
from swecli.llm.base import ModelRequest, ResponseDone
from swecli.messages import AssistantMessage, ThinkingBlock, ToolCall, ToolMessage, UserMessage
from swecli.models.thinking import Thinking
from swecli.testing.server import Call, Reply, ScriptedLLM
from tests.llm.streams import run_pieces
from tests.test_replies import http_agent


@pytest.mark.parametrize(("text", "budget", "effort", "named"), [
    ("off", 0, "", False), ("", 0, "", False), ("on", 8_192, "medium", False), ("HIGH", 24_576, "high", True),
    ("low", 2_048, "low", True), ("16000", 16_000, "medium", False), ("32_000", 32_000, "high", False),
    (2048, 2_048, "low", False),
])
def test_parse(text: str | int, budget: int, effort: str, named: bool) -> None:
    assert Thinking.parse(text) == Thinking(budget, effort, named)


@pytest.mark.parametrize("text", ["512", "maybe", "-3"])
def test_bad_values_say_what_is_allowed(text: str) -> None:
    with pytest.raises(ValueError, match="thinking"):
        Thinking.parse(text)


def test_the_setting_is_validated_with_one_sentence(tmp_path: Path) -> None:
    (tmp_path / ".swecli").mkdir()
    (tmp_path / ".swecli" / "config.toml").write_text("thinking = 100\n")
    with pytest.raises(ConfigError, match="at least 1024 tokens"):
        load_settings(tmp_path, env={})
    (tmp_path / ".swecli" / "config.toml").write_text('thinking = "High"\n')
    assert load_settings(tmp_path, env={}, trust_project=True).thinking == "high"
    assert load_settings(tmp_path, env={}).thinking == "off"  # reasoning the user pays for: needs trust


def body(thinking: str, *messages: Any) -> dict[str, Any]:
    provider = AnthropicProvider(model="claude-sonnet-4-5", base_url="http://127.0.0.1:9", api_key="k")
    try:
        request = ModelRequest(system=(), messages=messages or (UserMessage(content="x"),), max_tokens=4_000,
                               thinking=Thinking.parse(thinking))
        return provider.request_body(request)
    finally:
        provider.close()


def test_anthropic_budget_comes_on_top_of_max_tokens() -> None:
    on = body("2048")
    assert on["thinking"] == {"type": "enabled", "budget_tokens": 2_048} and on["max_tokens"] == 6_048
    off = body("off")
    assert "thinking" not in off and off["max_tokens"] == 4_000


HISTORY = (
    UserMessage(content="fix it"),
    AssistantMessage(content="Reading.", reasoning="Need a.py", tool_calls=(ToolCall(id="t1", name="read_file"),),
                     thinking=(ThinkingBlock(text="Need a.py", signature="s1"), ThinkingBlock(redacted="ENC"))),
    ToolMessage(tool_call_id="t1", name="read_file", content="x = 1"),
)


def test_thinking_blocks_go_back_first_and_only_when_thinking_is_on() -> None:
    assistant = body("on", *HISTORY)["messages"][1]["content"]
    assert assistant[:2] == [{"type": "thinking", "thinking": "Need a.py", "signature": "s1"},
                             {"type": "redacted_thinking", "data": "ENC"}]
    assert [b["type"] for b in assistant[2:]] == ["text", "tool_use"]
    off = body("off", *HISTORY)["messages"][1]["content"]
    assert [b["type"] for b in off] == ["text", "tool_use"]


def event(kind: str, **data: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def test_signatures_and_redacted_blocks_are_kept_from_the_stream() -> None:
    stream = b"".join([
        event("message_start", message={"model": "claude", "usage": {"input_tokens": 50, "output_tokens": 1}}),
        event("content_block_start", index=0, content_block={"type": "thinking", "thinking": ""}),
        event("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "Plan: "}),
        event("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "read it."}),
        event("content_block_delta", index=0, delta={"type": "signature_delta", "signature": "EqQB"}),
        event("content_block_delta", index=0, delta={"type": "signature_delta", "signature": "Zz=="}),
        event("content_block_stop", index=0),
        event("content_block_start", index=1, content_block={"type": "redacted_thinking", "data": "SECRET"}),
        event("content_block_stop", index=1),
        event("content_block_start", index=2, content_block={"type": "text", "text": "Done."}),
        event("content_block_stop", index=2),
        event("message_delta", delta={"stop_reason": "end_turn"},
              usage={"output_tokens": 30, "output_tokens_details": {"thinking_tokens": 22}}),
        event("message_stop"),
    ])
    events = run_pieces(AnthropicStream("anthropic", set()), [stream])
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.message.thinking == (ThinkingBlock(text="Plan: read it.", signature="EqQBZz=="),
                                     ThinkingBlock(redacted="SECRET"))
    assert done.message.reasoning == "Plan: read it." and done.message.content == "Done."
    assert done.usage is not None and done.usage.reasoning_tokens == 22
    # What came in goes back out unchanged.
    request = ModelRequest(system=(), messages=(UserMessage(content="q"), done.message, UserMessage(content="more")),
                           thinking=Thinking.parse("on"))
    sent = wire_messages(request)[1]["content"]
    assert sent[0] == {"type": "thinking", "thinking": "Plan: read it.", "signature": "EqQBZz=="}
    assert sent[1] == {"type": "redacted_thinking", "data": "SECRET"}


def test_thinking_streams_and_goes_back_with_the_tool_results_through_the_loop(project: Path) -> None:
    events: list[Event] = []
    steps = [Reply(reasoning="I should read a.py first.", calls=[Call("write_file", {"path": "a", "content": "x"})],
                   thinking_signature="SIG-1"),
             Reply("Written.", reasoning="Done now.", thinking_signature="SIG-2")]
    with ScriptedLLM(steps, wire="anthropic") as llm:
        agent = http_agent(llm, project, events)
        agent.thinking = Thinking.parse("low")
        turn = agent.run("write a")
    assert turn.answer == "Written."
    first, second = llm.requests
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2_048} and first["max_tokens"] == 512 + 2_048
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {"type": "thinking", "thinking": "I should read a.py first.",
                                       "signature": "SIG-1"}
    assert second["messages"][2]["content"][0]["type"] == "tool_result"
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "I should read a.py first.Done now."


def test_openai_reasoning_effort_through_the_loop(project: Path) -> None:
    with ScriptedLLM([Reply("ok")], model="o4-mini") as llm:
        agent = http_agent(llm, project, [])
        agent.provider.model = "o4-mini"
        agent.thinking = Thinking.parse("on")
        agent.run("hi")
    assert llm.requests[0]["reasoning_effort"] == "medium"
