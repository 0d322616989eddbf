from __future__ import annotations

import json
import threading
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swecli.llm.anthropic import AnthropicProvider, AnthropicStream
from swecli.llm.base import (
    AuthError,
    Cancelled,
    CancelToken,
    ContextOverflowError,
    ModelRequest,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolCallStarted,
    TransientError,
)
from swecli.llm.retry import Retryable
from swecli.llm.sse import SSEParser
from swecli.messages import (
    AssistantMessage,
    ImagePart,
    SystemBlock,
    ThinkingBlock,
    ToolCall,
    ToolMessage,
    ToolSchema,
    Usage,
    UserMessage,
)
from swecli.models.thinking import Thinking
from swecli.testing.server import Call, Drop, EmptyStream, Fail, Reply, ScriptedLLM
from tests.llm.streams import run_pieces, splits


def event(kind: str, **data: Any) -> str:
    return f"event: {kind}\r\ndata: {json.dumps({'type': kind, **data}, ensure_ascii=False)}\r\n\r\n"


def delta(index: int, **d: Any) -> str:
    return event("content_block_delta", index=index, delta=d)


STREAM = "".join([
    event("message_start", message={"id": "msg_1", "model": "claude-x", "content": [], "usage": {
        "input_tokens": 10, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 90, "output_tokens": 1}}),
    event("ping"),
    event("content_block_start", index=0, content_block={"type": "thinking", "thinking": ""}),
    delta(0, type="thinking_delta", thinking="Need the f\u00efle."),
    delta(0, type="signature_delta", signature="abc"),
    event("content_block_stop", index=0),
    event("content_block_start", index=1, content_block={"type": "text", "text": ""}),
    delta(1, type="text_delta", text="Reading \U0001f4c4 "),
    delta(1, type="text_delta", text="now."),
    event("content_block_stop", index=1),
    event("content_block_start", index=2, content_block={"type": "tool_use", "id": "toolu_a", "name": "read_file",
                                                         "input": {}}),
    delta(2, type="input_json_delta", partial_json='{"path": '),
    delta(2, type="input_json_delta", partial_json='"\u00e9.py"}'),
    event("content_block_stop", index=2),
    event("content_block_start", index=3, content_block={"type": "tool_use", "id": "toolu_b", "name": "ls",
                                                         "input": {}}),
    event("content_block_stop", index=3),
    event("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 42}),
    event("message_stop"),
]).encode()


def parse(pieces: list[bytes]) -> list[StreamEvent]:
    return run_pieces(AnthropicStream("anthropic", set()), pieces)


def test_full_stream() -> None:
    events = parse([STREAM])
    assert [e for e in events if isinstance(e, ReasoningDelta)] == [ReasoningDelta("Need the f\u00efle.")]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Reading \U0001f4c4 now."
    assert [e for e in events if isinstance(e, ToolCallStarted)] == [
        ToolCallStarted(0, "toolu_a", "read_file"), ToolCallStarted(1, "toolu_b", "ls")]
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.message == AssistantMessage(content="Reading \U0001f4c4 now.", reasoning="Need the f\u00efle.",
                                            tool_calls=(ToolCall(id="toolu_a", name="read_file",
                                                                 arguments='{"path": "\u00e9.py"}'),
                                                        ToolCall(id="toolu_b", name="ls", arguments="{}")),
                                            thinking=(ThinkingBlock(text="Need the f\u00efle.", signature="abc"),))
    # input_tokens is the whole prompt: uncached + cache read + cache creation.
    assert done.usage == Usage(input_tokens=1000, output_tokens=42, cache_read_tokens=900, cache_write_tokens=90,
                               requests=1)
    assert (done.finish_reason, done.model) == ("tool_calls", "claude-x")


def test_every_split_point_gives_the_same_events() -> None:
    expected = parse([STREAM])
    for cut in range(len(STREAM) + 1):
        assert parse(splits(STREAM, cut)) == expected, cut


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=20))
def test_any_splits(cuts: list[int]) -> None:
    assert parse(splits(STREAM, *cuts)) == parse([STREAM])


def test_overloaded_error_event_is_retried() -> None:
    stream = event("message_start", message={"usage": {"input_tokens": 5}}) + event(
        "error", error={"type": "overloaded_error", "message": "Overloaded"})
    with pytest.raises(Retryable) as info:
        parse([stream.encode()])
    assert isinstance(info.value.error, TransientError) and "Overloaded" in str(info.value.error)


def test_stream_cut_short_is_retried() -> None:
    stream = STREAM[: STREAM.index(b"event: message_delta")]
    with pytest.raises(Retryable):
        parse([stream])


def test_partial_keeps_only_finished_tool_calls() -> None:
    handler = AnthropicStream("anthropic", set())
    cut = STREAM.rindex(b"event:", 0, STREAM.index(b'"content_block_stop", "index": 2'))  # before the call ends
    for e in SSEParser().feed(STREAM[:cut]):
        handler.handle(e)
    assert handler.partial() == AssistantMessage(content="Reading \U0001f4c4 now.", reasoning="Need the f\u00efle.")


def test_stop_reason_names_are_normalised() -> None:
    stream = "".join([event("message_start", message={"usage": {"input_tokens": 3}}),
                      event("content_block_start", index=0, content_block={"type": "text", "text": "cut"}),
                      event("message_delta", delta={"stop_reason": "max_tokens"}, usage={"output_tokens": 9}),
                      event("message_stop")]).encode()
    done = parse([stream])[-1]
    assert isinstance(done, ResponseDone) and done.finish_reason == "length" and done.message.content == "cut"


# -- end to end --------------------------------------------------------------------------------

def provider(llm: ScriptedLLM, slept: list[float] | None = None, **options: Any) -> AnthropicProvider:
    return AnthropicProvider(model="claude-test", base_url=llm.base_url, api_key=options.pop("api_key", "sk-ant"),
                             sleep=slept.append if slept is not None else (lambda s: None), **options)


def request(*messages: Any, tail: str = "", tools: tuple[ToolSchema, ...] = ()) -> ModelRequest:
    system = (SystemBlock(text="You are swecli.", cache=True), SystemBlock(text="Tools guide.", cache=True),
              SystemBlock(text="Project notes"))
    return ModelRequest(system=system, messages=messages or (UserMessage(content="hi"),), tools=tools, tail=tail)


def collect(p: AnthropicProvider, req: ModelRequest | None = None) -> tuple[list[StreamEvent], ResponseDone]:
    events = list(p.stream(req or request()))
    assert isinstance(events[-1], ResponseDone)
    return events, events[-1]


IMAGE = ImagePart(media_type="image/png", data="iVBORw0KGgo=", width=8, height=6, path="shot.png")
CALLED = AssistantMessage(content="Reading.", thinking=(ThinkingBlock(text="Need a.py", signature="s1"),),
                          tool_calls=(ToolCall(id="c1", name="read_file", arguments='{"path": "a.py"}'),))
HISTORY = (
    UserMessage(content="fix it \u00e9\u2603 \"quoted\" \\ back\nslash", images=(IMAGE,)),
    CALLED,
    ToolMessage(tool_call_id="c1", name="read_file", content="1: x = 1", images=(IMAGE,), is_error=True),
    UserMessage(content="and then?"),
)
HISTORIES = [HISTORY, HISTORY[1:], HISTORY[:2], HISTORY[:3], (CALLED,), ()]
"""Turns that merge, a history that opens with the assistant, one that ends with it, the empty one."""


@pytest.mark.parametrize("history", HISTORIES)
@pytest.mark.parametrize("images", [True, False])
@pytest.mark.parametrize("thinking", [0, 2048])
@pytest.mark.parametrize("tail", ["", "Plan: step 2"])
def test_the_encoded_body_is_the_request_body(history: tuple[Any, ...], images: bool, thinking: int,
                                              tail: str) -> None:
    """What is sent (each message's blocks encoded once, the last one's with the cache breakpoint) is, as
    JSON, exactly `request_body`, request after request."""
    p = AnthropicProvider(model="claude-test", base_url="http://127.0.0.1:9")
    p.images = images
    tools = (ToolSchema(name="grep", description="Search", parameters={"type": "object"}),)
    req = ModelRequest(system=request().system, messages=history, tools=tools, tail=tail,
                       thinking=Thinking(budget=thinking))
    for _ in range(2):  # the second time from what the first encoded
        assert json.loads(p.encoded_body(req)) == p.request_body(req)
    longer = replace(req, messages=(*history, AssistantMessage(content="ok"), UserMessage(content="more")))
    assert json.loads(p.encoded_body(longer)) == p.request_body(longer)  # the breakpoint moved on


def test_the_encoded_body_goes_over_the_wire_as_json() -> None:
    with ScriptedLLM([Reply("a")], wire="anthropic") as llm:
        p = provider(llm)
        req = request(UserMessage(content="fix it \u2603"), CALLED,
                      ToolMessage(tool_call_id="c1", name="read_file", content="1: x = 1"), tail="t")
        collect(p, req)
    assert llm.requests[0] == json.loads(json.dumps(p.request_body(req)))
    assert {k.lower(): v for k, v in llm.headers[0].items()}["content-type"] == "application/json"


def test_text_reasoning_parallel_calls_and_usage() -> None:
    reply = Reply("Reading both.", reasoning="Two files.", calls=[Call("read_file", {"path": "a"}),
                                                                   Call("read_file", {"path": "b"})],
                  usage={"prompt_tokens": 50, "completion_tokens": 30, "cached_tokens": 400,
                         "cache_creation_tokens": 100})
    with ScriptedLLM([reply], wire="anthropic") as llm:
        events, done = collect(provider(llm))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Reading both."
    assert done.message.reasoning == "Two files."
    assert [json.loads(c.arguments) for c in done.message.tool_calls] == [{"path": "a"}, {"path": "b"}]
    assert done.usage == Usage(input_tokens=550, output_tokens=30, cache_read_tokens=400, cache_write_tokens=100,
                               requests=1)
    assert llm.headers[0]["x-api-key"] == "sk-ant" and llm.headers[0]["anthropic-version"] == "2023-06-01"


def test_overloaded_529_then_success() -> None:
    slept: list[float] = []
    overloaded = Fail(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    with ScriptedLLM([overloaded, Fail.rate_limited(2), Reply("ok")], wire="anthropic") as llm:
        _, done = collect(provider(llm, slept))
    assert done.message.content == "ok"
    assert len(slept) == 2 and slept[1] == pytest.approx(2.0)


def test_drop_and_empty_stream_are_retried() -> None:
    with ScriptedLLM([Drop(), EmptyStream(), Reply("whole")], wire="anthropic") as llm:
        _, done = collect(provider(llm))
    assert done.message.content == "whole"


def test_prompt_too_long() -> None:
    with ScriptedLLM([Fail.context_overflow("anthropic")], wire="anthropic") as llm, \
            pytest.raises(ContextOverflowError, match="prompt is too long"):
        collect(provider(llm))


def test_rejected_key() -> None:
    with ScriptedLLM([Fail.unauthorized()], wire="anthropic") as llm, \
            pytest.raises(AuthError, match=r"^API key rejected by anthropic \(set ANTHROPIC_API_KEY\)"):
        collect(provider(llm))


def test_no_usage_reported() -> None:
    with ScriptedLLM([Reply("hi", usage=False)], wire="anthropic") as llm:
        _, done = collect(provider(llm))
    assert done.usage is None


def test_cancel_mid_stream() -> None:
    cancel = CancelToken()
    with ScriptedLLM([Reply("A long answer that streams slowly, piece by piece.", chunk=5, delay=0.3)],
                     wire="anthropic") as llm, pytest.raises(Cancelled) as info:
        for e in provider(llm).stream(request(), cancel):
            if isinstance(e, TextDelta):
                threading.Thread(target=cancel.cancel).start()
    assert info.value.partial is not None and info.value.partial.content.startswith("A lon")


def test_request_body_shape() -> None:
    history = (
        UserMessage(content="fix it"),
        AssistantMessage(content="Looking.", reasoning="private", tool_calls=(
            ToolCall(id="t1", name="read_file", arguments='{"path": "a.py"}'),
            ToolCall(id="t2", name="grep", arguments='{"pattern": "unterminated'))),
        ToolMessage(tool_call_id="t1", name="read_file", content="1: x"),
        ToolMessage(tool_call_id="t2", name="grep", content="invalid arguments", is_error=True),
        UserMessage(content="note: tests fail", kind="note"),
    )
    tools = (ToolSchema(name="read_file", description="Read", parameters={"type": "object"}),)
    with ScriptedLLM([Reply("a"), Reply("b")], wire="anthropic") as llm:
        p = provider(llm)
        collect(p, request(*history, tail="Plan: step 2", tools=tools))
        longer = (*history, AssistantMessage(content="Done."), UserMessage(content="thanks"))
        collect(p, request(*longer, tail="Plan: step 3", tools=tools))
    body = llm.requests[0]
    assert body["tools"] == [{"name": "read_file", "description": "Read", "input_schema": {"type": "object"}}]
    assert body["system"] == [
        {"type": "text", "text": "You are swecli.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Tools guide.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Project notes"}]
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.py"}},
        {"type": "tool_use", "id": "t2", "name": "grep", "input": {"_raw_arguments": '{"pattern": "unterminated'}}]
    assert "private" not in json.dumps(body)
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "1: x"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "invalid arguments", "is_error": True},
        {"type": "text", "text": "note: tests fail", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Plan: step 2"}]
    assert json.dumps(body).count("cache_control") == 3  # two system breakpoints and the conversation's
    # The next request extends the conversation; its earlier blocks are unchanged apart from the moved breakpoint.
    later = llm.requests[1]["messages"]
    assert later[:2] == messages[:2]
    assert later[2]["content"][:3] == [*messages[2]["content"][:2], {"type": "text", "text": "note: tests fail"}]
    assert later[-1]["content"][-2:] == [
        {"type": "text", "text": "thanks", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Plan: step 3"}]


def test_breakpoints_stay_within_the_limit() -> None:
    system = tuple(SystemBlock(text=f"block {i}", cache=True) for i in range(6))
    req = ModelRequest(system=system, messages=(UserMessage(content="hi"),))
    p = AnthropicProvider(model="m", base_url="http://127.0.0.1:9")
    assert json.dumps(p.request_body(req)).count("cache_control") == 4


def test_history_opening_with_an_assistant_turn_gets_a_user_turn_first() -> None:
    req = ModelRequest(system=(), messages=(AssistantMessage(content="Summary so far."), UserMessage(content="go")))
    body = AnthropicProvider(model="m").request_body(req)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert "system" not in body


def test_base_url_with_v1_is_not_doubled() -> None:
    assert AnthropicProvider(model="m", base_url="https://proxy.example/v1/").url == "https://proxy.example/v1/messages"
    assert AnthropicProvider(model="m").url == "https://api.anthropic.com/v1/messages"
