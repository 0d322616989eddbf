from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swecli.llm.base import (
    AuthError,
    Cancelled,
    CancelToken,
    ContextOverflowError,
    ModelRequest,
    ProviderError,
    ProviderNote,
    RateLimitError,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolCallStarted,
    TransientError,
)
from swecli.llm.openai import OpenAIProvider, OpenAIStream
from swecli.llm.retry import Retryable
from swecli.messages import (
    AssistantMessage,
    ImagePart,
    SystemBlock,
    ToolCall,
    ToolMessage,
    ToolSchema,
    Usage,
    UserMessage,
)
from swecli.models.thinking import Thinking
from swecli.testing.server import Call, Drop, EmptyStream, Fail, Reply, ScriptedLLM
from tests.llm.streams import run_pieces, splits


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> str:
    body: dict[str, Any] = {"model": "qwen3", **extra}
    if delta is not None or finish:
        body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    return "data: " + json.dumps(body, ensure_ascii=False) + "\r\n\r\n"


def tool(index: int, args: str, id: str = "", name: str = "") -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if id:
        fragment["id"], fragment["type"] = id, "function"
    if name:
        fragment["function"]["name"] = name
    return {"tool_calls": [fragment]}


STREAM = "".join([
    ": hello\n\n",
    chunk({"role": "assistant", "content": ""}),
    chunk({"reasoning_content": "Let me "}),
    chunk({"content": "<thi"}),
    chunk({"content": "nk>look</think>\n\nH\u00e9 \U0001f600"}),
    chunk(tool(0, '{"pa', "call_a", "read_file")),
    chunk(tool(1, "", "call_b", "grep")),
    chunk(tool(0, 'th": "\u00e9.py"}')),
    chunk(tool(1, '{"pattern": "x"}')),
    chunk({}, "tool_calls"),
    chunk(usage={"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 64}},
          choices=[]),
    "data: [DONE]\n\n",
]).encode()


def parse(pieces: list[bytes], taken: set[str] | None = None) -> list[StreamEvent]:
    return run_pieces(OpenAIStream("llamacpp", taken or set()), pieces)


def test_full_stream() -> None:
    events = parse([STREAM])
    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta("H\u00e9 \U0001f600")]
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Let me look"
    assert [e for e in events if isinstance(e, ToolCallStarted)] == [
        ToolCallStarted(0, "call_a", "read_file"), ToolCallStarted(1, "call_b", "grep")]
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.message == AssistantMessage(content="H\u00e9 \U0001f600", reasoning="Let me look", tool_calls=(
        ToolCall(id="call_a", name="read_file", arguments='{"path": "\u00e9.py"}'),
        ToolCall(id="call_b", name="grep", arguments='{"pattern": "x"}')))
    assert done.usage == Usage(input_tokens=100, output_tokens=20, cache_read_tokens=64, requests=1)
    assert (done.finish_reason, done.model) == ("tool_calls", "qwen3")


def test_every_split_point_gives_the_same_events() -> None:
    expected = parse([STREAM])
    for cut in range(len(STREAM) + 1):
        assert parse(splits(STREAM, cut)) == expected, cut


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=20))
def test_any_splits(cuts: list[int]) -> None:
    assert parse(splits(STREAM, *cuts)) == parse([STREAM])


def test_missing_and_duplicate_ids_are_made_unique() -> None:
    stream = "".join([
        chunk({"tool_calls": [{"function": {"name": "a", "arguments": "{}"}}]}),  # no index, no id
        chunk({"tool_calls": [{"index": 1, "id": "same", "function": {"name": "b", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"index": 2, "id": "same", "function": {"name": "c", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"index": 3, "id": "old", "function": {"name": "d", "arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
    ]).encode()
    done = parse([stream], taken={"old"})[-1]
    assert isinstance(done, ResponseDone)
    ids = [c.id for c in done.message.tool_calls]
    assert [c.name for c in done.message.tool_calls] == ["a", "b", "c", "d"]
    assert ids[0].startswith("call_") and ids[1:] == ["same", "same_2", "old_2"]
    assert len(set(ids)) == 4


def test_no_usage_means_none() -> None:
    stream = (chunk({"content": "hi"}) + chunk({}, "stop") + "data: [DONE]\n\n").encode()
    done = parse([stream])[-1]
    assert isinstance(done, ResponseDone) and done.usage is None and done.message.content == "hi"


def test_done_without_finish_reason_is_retried() -> None:
    # llama.cpp ends a running stream this way when a second request arrives.
    with pytest.raises(Retryable) as info:
        parse([(chunk({"content": "half an ans"}) + "data: [DONE]\n\n").encode()])
    assert isinstance(info.value.error, TransientError) and "before it was complete" in str(info.value.error)


def test_empty_body_reads_as_overflow_after_one_retry() -> None:
    with pytest.raises(Retryable) as info:
        parse([b""])
    assert isinstance(info.value.error, ContextOverflowError) and info.value.max_retries == 1


def test_plain_json_error_with_status_200() -> None:
    with pytest.raises(ProviderError, match="model is loading"):
        parse([b'{"error": {"message": "model is loading", "type": "invalid_request_error"}}'])


def test_error_chunk_mid_stream() -> None:
    stream = (chunk({"content": "a"}) + 'data: {"error": {"message": "upstream overloaded", "code": 502}}\n\n')
    with pytest.raises(Retryable):
        parse([stream.encode()])


def test_partial_keeps_only_complete_tool_calls() -> None:
    handler = OpenAIStream("x", set())
    stream = "".join([chunk({"content": "Reading. <"}), chunk(tool(0, '{"path": "a"}', "c1", "read_file")),
                      chunk(tool(1, '{"path": "b', "c2", "read_file"))]).encode()
    from swecli.llm.sse import SSEParser

    for event in SSEParser().feed(stream):
        handler.handle(event)
    partial = handler.partial()
    assert partial.content == "Reading. <"
    assert [c.id for c in partial.tool_calls] == ["c1"]


# -- end to end against the scripted server ------------------------------------------------------

def request(*messages: Any, tail: str = "", tools: tuple[ToolSchema, ...] = ()) -> ModelRequest:
    return ModelRequest(system=(SystemBlock(text="You are swecli.", cache=True), SystemBlock(text="Project: x")),
                        messages=messages or (UserMessage(content="hi"),), tools=tools, tail=tail)


def provider(llm: ScriptedLLM, slept: list[float] | None = None, **options: Any) -> OpenAIProvider:
    sleep = slept.append if slept is not None else (lambda s: None)
    return OpenAIProvider(model="m", base_url=llm.base_url, name=options.pop("name", "llamacpp"), sleep=sleep,
                          **options)


def collect(p: OpenAIProvider, req: ModelRequest | None = None, cancel: CancelToken | None = None
            ) -> tuple[list[StreamEvent], ResponseDone]:
    events = list(p.stream(req or request(), cancel))
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert sum(isinstance(e, ResponseDone) for e in events) == 1
    return events, done


def test_text_reasoning_parallel_calls_and_usage() -> None:
    reply = Reply("Let me look at both files.", reasoning="Two reads.", usage={
        "prompt_tokens": 500, "completion_tokens": 40, "cached_tokens": 300},
        calls=[Call("read_file", {"path": "a.py"}), Call("read_file", {"path": "b.py"})])
    with ScriptedLLM([reply]) as llm:
        events, done = collect(provider(llm))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Let me look at both files."
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Two reads."
    assert [e.index for e in events if isinstance(e, ToolCallStarted)] == [0, 1]
    assert [json.loads(c.arguments) for c in done.message.tool_calls] == [{"path": "a.py"}, {"path": "b.py"}]
    assert done.usage == Usage(input_tokens=500, output_tokens=40, cache_read_tokens=300, requests=1)
    assert done.finish_reason == "tool_calls" and done.model == "scripted-model"
    body = llm.requests[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 8192


def test_server_without_usage() -> None:
    with ScriptedLLM([Reply("hi", usage=False)]) as llm:
        _, done = collect(provider(llm))
    assert done.usage is None and done.message.content == "hi"


def test_think_tags_become_reasoning() -> None:
    with ScriptedLLM([Reply("<think>The user greets me.</think>\n\nHello!", chunk=3)]) as llm:
        events, done = collect(provider(llm))
    assert done.message.content == "Hello!" and done.message.reasoning == "The user greets me."
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello!"


def test_rate_limit_honours_retry_after() -> None:
    slept: list[float] = []
    with ScriptedLLM([Fail.rate_limited(retry_after=3), Reply("ok")]) as llm:
        _, done = collect(provider(llm, slept))
    assert done.message.content == "ok"
    assert slept == [pytest.approx(3.0)]


def test_server_error_then_success() -> None:
    slept: list[float] = []
    with ScriptedLLM([Fail.overloaded(500), Fail.overloaded(503), Reply("ok")]) as llm:
        _, done = collect(provider(llm, slept))
    assert done.message.content == "ok"
    assert len(slept) == 2 and 0.5 <= slept[0] <= 1.0 and 1.0 <= slept[1] <= 2.0


def test_dropped_connection_is_retried() -> None:
    with ScriptedLLM([Drop(), Reply("complete answer")]) as llm:
        _events, done = collect(provider(llm))
    assert done.message.content == "complete answer"
    assert len(llm.requests) == 2


def test_empty_stream_retried_once_then_overflow() -> None:
    with ScriptedLLM([EmptyStream(), Reply("fits now")]) as llm:
        _, done = collect(provider(llm))
    assert done.message.content == "fits now"
    with ScriptedLLM([EmptyStream(), EmptyStream()]) as llm, \
            pytest.raises(ContextOverflowError, match=r"empty stream.*exceeds its context"):
        collect(provider(llm))


def test_context_overflow_is_not_retried() -> None:
    with ScriptedLLM([Fail.context_overflow("openai")]) as llm, \
            pytest.raises(ContextOverflowError, match="maximum context length is 8192"):
        collect(provider(llm))


def test_rejected_key_names_the_variable() -> None:
    with ScriptedLLM([Fail.unauthorized()]) as llm, pytest.raises(AuthError) as info:
        collect(provider(llm, name="openai", key_env="OPENAI_API_KEY", api_key="sk-wrong"))
    assert str(info.value).startswith("API key rejected by openai (set OPENAI_API_KEY)")
    assert llm.headers[0]["authorization"] == "Bearer sk-wrong"
    assert "max_completion_tokens" in llm.requests[0]  # OpenAI itself gets the newer name


def test_retries_exhausted() -> None:
    with ScriptedLLM([Fail.rate_limited(0)] * 3) as llm, \
            pytest.raises(RateLimitError, match=r"Rate limit reached.*gave up after 3 attempts"):
        collect(provider(llm, max_retries=2))


def test_refused_request_keeps_the_server_message() -> None:
    with ScriptedLLM([Fail(400, {"error": {"message": "tools[0].function.name is invalid"}})]) as llm, \
            pytest.raises(ProviderError, match=r"tools\[0\]\.function\.name is invalid"):
        collect(provider(llm))


def test_unreachable_server_is_a_clear_transient_error() -> None:
    slept: list[float] = []
    p = OpenAIProvider(model="m", base_url="http://127.0.0.1:9/v1", sleep=slept.append)
    with pytest.raises(TransientError, match=r"cannot connect to openai at http://127.0.0.1:9/v1.*is the server "
                                             r"running and base_url right\? \(gave up after 3 attempts\)"):
        list(p.stream(request()))
    assert len(slept) == 2


def test_cancel_mid_stream_returns_what_arrived() -> None:
    cancel = CancelToken()
    reply = Reply("The first words arrive, then the server goes quiet for a long time.", chunk=10, delay=0.3)
    with ScriptedLLM([reply]) as llm:
        p = provider(llm)
        seen: list[str] = []
        with pytest.raises(Cancelled) as info:
            for event in p.stream(request(), cancel):
                if isinstance(event, TextDelta):
                    seen.append(event.text)
                    if len(seen) == 2:
                        threading.Thread(target=cancel.cancel).start()
    partial = info.value.partial
    assert partial is not None and partial.content.startswith("The first words arri")
    assert partial.content.startswith("".join(seen)) and partial.content != reply.text


def test_cancel_while_the_server_is_silent() -> None:
    # A server thinking before its first byte (a long prompt on llama.cpp) must not delay an interrupt.
    release = threading.Event()

    def slow(body: dict[str, Any]) -> Reply:
        release.wait(60)
        return Reply("too late")

    cancel = CancelToken()
    with ScriptedLLM([slow]) as llm:
        threading.Timer(0.3, cancel.cancel).start()
        start = time.monotonic()
        with pytest.raises(Cancelled) as info:
            list(provider(llm).stream(request(), cancel))
        waited = time.monotonic() - start
        release.set()
    assert info.value.partial is None
    assert waited < 30  # far below the server's 60 s silence: the interrupt did not wait for it


def test_request_body_shape() -> None:
    history = (
        UserMessage(content="fix it"),
        AssistantMessage(content="", reasoning="secret thoughts", tool_calls=(
            ToolCall(id="c1", name="read_file", arguments='{"path": "a.py"}'),
            ToolCall(id="c2", name="grep", arguments='{"pattern": "x"}'))),
        ToolMessage(tool_call_id="c1", name="read_file", content="1: x = 1"),
        ToolMessage(tool_call_id="c2", name="grep", content="no matches", is_error=True),
    )
    tools = (ToolSchema(name="read_file", description="Read", parameters={"type": "object"}),
             ToolSchema(name="grep", description="Search", parameters={"type": "object"}))
    with ScriptedLLM([Reply("a"), Reply("b")]) as llm:
        p = provider(llm)
        collect(p, request(*history, tail="Plan: step 2", tools=tools))
        collect(p, request(*history, tail="Plan: step 3", tools=tools))
    first, second = llm.requests
    messages = first["messages"]
    assert messages[0] == {"role": "system", "content": "You are swecli.\n\nProject: x"}
    assert messages[2]["content"] == "" and "reasoning_content" not in messages[2]
    assert "reasoning" not in json.dumps(messages)
    assert messages[2]["tool_calls"][1] == {"id": "c2", "type": "function",
                                            "function": {"name": "grep", "arguments": '{"pattern": "x"}'}}
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "1: x = 1"}
    assert messages[-1] == {"role": "user", "content": "Plan: step 2"}
    assert [t["function"]["name"] for t in first["tools"]] == ["read_file", "grep"]
    assert first["tools"][0] == {"type": "function", "function": {"name": "read_file", "description": "Read",
                                                                  "parameters": {"type": "object"}}}
    # Everything before the tail is byte-identical across requests (prefix caching).
    assert json.dumps(second["messages"][:-1]) == json.dumps(messages[:-1])


IMAGE = ImagePart(media_type="image/png", data="iVBORw0KGgo=", width=8, height=6, path="shot.png")
HISTORY = (
    UserMessage(content="fix it \u00e9\u2603 \"quoted\" \\ back\nslash", images=(IMAGE,)),
    AssistantMessage(content="", reasoning="r", tool_calls=(ToolCall(id="c1", name="read_file",
                                                                     arguments='{"path": "a.py"}'),)),
    ToolMessage(tool_call_id="c1", name="read_file", content="1: x = 1", images=(IMAGE,)),
    AssistantMessage(content="done"),
)


@pytest.mark.parametrize("images", [True, False])
@pytest.mark.parametrize("tools", [(), (ToolSchema(name="grep", description="Search", parameters={"type": "object"}),)])
@pytest.mark.parametrize("tail", ["", "Plan: step 2"])
def test_the_encoded_body_is_the_request_body(images: bool, tools: tuple[ToolSchema, ...], tail: str) -> None:
    """What is sent (encoded once per message) is, as JSON, exactly `request_body`: every message kind, the
    tool images after a run of results, the tail, the tools, the thinking effort."""
    p = OpenAIProvider(model="gpt-5", base_url="http://127.0.0.1:9/v1", name="openai")
    p.images = images
    req = replace(request(*HISTORY, tail=tail, tools=tools), thinking=Thinking(effort="high", named_effort=True))
    for _ in range(2):  # the second time from what the first encoded
        assert json.loads(p.encoded_body(req)) == p.request_body(req)


def test_a_message_replaced_by_another_is_sent_as_the_new_one() -> None:
    """The encodings are kept by message object: a message that decay or compaction replaced (a new object,
    however alike) is encoded again, and what a request no longer sends is forgotten."""
    p = OpenAIProvider(model="m", base_url="http://127.0.0.1:9/v1")
    first = request(*HISTORY)
    assert json.loads(p.encoded_body(first)) == p.request_body(first)
    folded = ToolMessage(tool_call_id="c1", name="read_file", content="[folded: see .swecli/outputs/1]")
    second = request(*HISTORY[:2], folded, HISTORY[3], UserMessage(content="next"))
    sent = json.loads(p.encoded_body(second))
    assert sent == p.request_body(second) and sent["messages"][3]["content"] == "[folded: see .swecli/outputs/1]"
    assert len(p._encoded._kept) == len(second.messages)  # HISTORY[2] is no longer kept


def test_the_encoded_body_goes_over_the_wire_as_json() -> None:
    with ScriptedLLM([Reply("a")]) as llm:
        p = provider(llm)
        req = request(UserMessage(content="fix it \u2603"), *HISTORY[1:2],
                      ToolMessage(tool_call_id="c1", name="read_file", content="1: x = 1"), tail="t")
        collect(p, req)
    assert llm.requests[0] == json.loads(json.dumps(p.request_body(req)))
    assert {k.lower(): v for k, v in llm.headers[0].items()}["content-type"] == "application/json"


def test_no_tail_no_tools() -> None:
    with ScriptedLLM([Reply("a")]) as llm:
        collect(provider(llm))
    assert llm.requests[0]["messages"][-1] == {"role": "user", "content": "hi"}
    assert "tools" not in llm.requests[0]


def test_ids_already_in_the_history_are_not_reused() -> None:
    history = (UserMessage(content="go"),
               AssistantMessage(tool_calls=(ToolCall(id="dup", name="read_file", arguments="{}"),)),
               ToolMessage(tool_call_id="dup", name="read_file", content="ok"))
    with ScriptedLLM([Reply(calls=[Call("read_file", {}, id="dup"), Call("grep", {}, id="dup")])]) as llm:
        _, done = collect(provider(llm), request(*history))
    assert [c.id for c in done.message.tool_calls] == ["dup_2", "dup_3"]


def test_malformed_arguments_arrive_verbatim() -> None:
    with ScriptedLLM([Reply(calls=[Call("write_file", '{"path": "a.py", "content": "unterminated')])]) as llm:
        _, done = collect(provider(llm))
    assert done.message.tool_calls[0].arguments == '{"path": "a.py", "content": "unterminated'


def test_no_network_library_loaded_at_import() -> None:
    import subprocess
    import sys

    code = ("import sys, swecli.llm.openai, swecli.llm.anthropic, swecli.llm.factory, swecli.llm.discovery;"
            "print('httpx' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_server_that_ignores_stream_sends_one_json_answer() -> None:
    body = {"model": "m2", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "<think>hm</think>Sure.", "tool_calls": [
            {"id": "c9", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 3}}
    events = parse([json.dumps(body, indent=2).encode()])
    assert TextDelta("Sure.") in events and ToolCallStarted(0, "c9", "ls") in events
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert done.message == AssistantMessage(content="Sure.", reasoning="hm",
                                            tool_calls=(ToolCall(id="c9", name="ls", arguments="{}"),))
    assert done.usage == Usage(input_tokens=9, output_tokens=3, requests=1) and done.model == "m2"


def test_html_instead_of_a_stream_points_at_the_base_url() -> None:
    with pytest.raises(ProviderError, match=r'answered with a web page \("Welcome to the web UI"\).*check base_url'):
        parse([b"<html>\n<body>Welcome to the web UI</body>\n</html>\n"])


def test_unreadable_event_shape_is_retried() -> None:
    import httpx

    bodies = [b'data: {"choices": [{"index": 0, "delta": "not an object"}]}\n\n',
              (chunk({"content": "fine"}) + chunk({}, "stop")).encode()]
    seen: list[bytes] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=bodies[len(seen) - 1])

    client = httpx.Client(transport=httpx.MockTransport(answer))
    p = OpenAIProvider(model="m", base_url="http://api.test/v1", client=client, sleep=lambda s: None)
    _, done = collect(p)
    assert done.message.content == "fine" and len(seen) == 2


def test_reasoning_sent_under_both_names_counts_once() -> None:
    stream = (chunk({"reasoning_content": "think", "reasoning": "think"}) + chunk({}, "stop")).encode()
    done = parse([stream])[-1]
    assert isinstance(done, ResponseDone) and done.message.reasoning == "think"


def test_loopback_detection() -> None:
    from swecli.llm.transport import is_loopback_url

    assert is_loopback_url("http://127.0.0.1:8080/v1") and is_loopback_url("http://localhost:11434/v1")
    assert is_loopback_url("http://[::1]:1234/v1")
    assert not is_loopback_url("https://api.openai.com/v1") and not is_loopback_url("")


def test_content_that_only_closes_a_block_is_stored_as_reasoning() -> None:
    # The chat template opened <think> in the prompt: only the closing tag appears in the output.
    stream = (chunk({"content": "Greeting, so greet.</th"}) + chunk({"content": "ink>\n\nHello!"})
              + chunk({}, "stop")).encode()
    done = parse([stream])[-1]
    assert isinstance(done, ResponseDone)
    assert (done.message.content, done.message.reasoning) == ("Hello!", "Greeting, so greet.")


# -- real servers' variations (issue 15) ------------------------------------------------------------

def test_done_after_a_usage_chunk_completes_a_stream_without_finish_reason() -> None:
    """kimi-k2 through OpenRouter never sets finish_reason; the usage chunk and [DONE] still end it."""
    stream = (chunk({"content": "All "}) + chunk({"content": "done."}) + chunk(tool(0, '{"a": 1}', "c1", "f"))
              + chunk(usage={"prompt_tokens": 30, "completion_tokens": 4}, choices=[]) + "data: [DONE]\n\n").encode()
    done = parse([stream])[-1]
    assert isinstance(done, ResponseDone) and done.message.content == "All done."
    assert done.finish_reason == "tool_calls" and done.usage is not None and done.usage.input_tokens == 30


def test_groq_usage_under_x_groq_and_reasoning_tokens_are_kept() -> None:
    stream = (chunk({"content": "hi"}) + chunk({}, "stop", x_groq={"id": "req_1", "usage": {
        "prompt_tokens": 40, "completion_tokens": 12, "completion_tokens_details": {"reasoning_tokens": 9}}})
        + "data: [DONE]\n\n").encode()
    done = parse([stream])[-1]
    assert isinstance(done, ResponseDone)
    assert done.usage == Usage(input_tokens=40, output_tokens=12, reasoning_tokens=9, requests=1)


def test_usage_of_zeros_counts_as_not_reported() -> None:
    stream = (chunk({"content": "hi"}) + chunk({}, "stop", usage={"prompt_tokens": 0, "completion_tokens": 0})
              + "data: [DONE]\n\n").encode()
    done = parse([stream])[-1]
    assert isinstance(done, ResponseDone) and done.usage is None


def test_mistral_typed_content_parts() -> None:
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "Hmm, "}, {"type": "text", "text": "ok."}]}
    stream = (chunk({"content": [thinking]}) + chunk({"content": [{"type": "text", "text": "Answer."}]})
              + chunk({}, "stop") + "data: [DONE]\n\n").encode()
    events = parse([stream])
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert (done.message.reasoning, done.message.content) == ("Hmm, ok.", "Answer.")
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["Hmm, ", "ok."]


def test_refusal_field_becomes_a_refusal() -> None:
    stream = (chunk({"refusal": "I can't "}) + chunk({"refusal": "help."}) + chunk({}, "stop")
              + "data: [DONE]\n\n").encode()
    events = parse([stream])
    done = events[-1]
    assert isinstance(done, ResponseDone)
    assert (done.message.content, done.finish_reason) == ("I can't help.", "refusal")
    assert not [e for e in events if isinstance(e, TextDelta)]  # never shown as if it were the answer


TOOLS = (ToolSchema(name="read_file", description="Read", parameters={"type": "object"}),)


def cannot_stream_tools(body: dict[str, Any]) -> Reply | EmptyStream:
    """llama-cpp-python's chatml-function-calling: a streamed request whose answer is a tool call
    gets HTTP 200 and an empty body (the handler raises after the headers went out)."""
    return EmptyStream() if body.get("stream") else Reply(calls=[Call("read_file", {"path": "a.py"})])


def test_a_server_that_cannot_stream_tool_calls_is_asked_without_streaming_from_then_on() -> None:
    with ScriptedLLM([cannot_stream_tools] * 4) as llm:
        p = provider(llm)
        events, done = collect(p, request(tools=TOOLS))
        later, again = collect(p, request(tools=TOOLS))
    assert done.message.tool_calls[0].name == "read_file" and again.message.tool_calls[0].name == "read_file"
    notes = [e for e in events + later if isinstance(e, ProviderNote)]
    assert len(notes) == 1 and "cannot stream tool calls" in notes[0].text  # said once
    # an empty stream, its one retry, the question without streaming; then unstreamed from the start
    assert [r["stream"] for r in llm.requests] == [True, True, False, False]
    assert all(r["tool_choice"] == "auto" for r in llm.requests)
    assert "stream_options" not in llm.requests[2]


def test_empty_streams_answered_without_a_tool_call_keep_streaming_on() -> None:
    """Nothing shows that streaming tool calls was the problem: no note, streaming stays."""
    with ScriptedLLM([EmptyStream(), EmptyStream(), Reply("plain text"), Reply("streamed again")]) as llm:
        p = provider(llm)
        events, done = collect(p, request(tools=TOOLS))
        collect(p, request(tools=TOOLS))
    assert done.message.content == "plain text" and not [e for e in events if isinstance(e, ProviderNote)]
    assert [r["stream"] for r in llm.requests] == [True, True, False, True]


def test_a_server_that_says_it_cannot_stream_tool_calls_is_believed_at_once() -> None:
    refusal = Fail(500, {"error": {"message": "Automatic streaming tool choice is not supported",
                                   "type": "internal_server_error"}})
    with ScriptedLLM([refusal, Reply("fine")]) as llm:
        events, done = collect(provider(llm), request(tools=TOOLS))
    assert done.message.content == "fine" and [r["stream"] for r in llm.requests] == [True, False]
    assert sum(isinstance(e, ProviderNote) for e in events) == 1


def test_an_empty_stream_that_is_an_overflow_stays_an_overflow() -> None:
    """The non-streamed probe gets the real context-length error; streaming stays on."""
    with ScriptedLLM([EmptyStream(), EmptyStream(), Fail.context_overflow(), Reply("short enough now")]) as llm:
        p = provider(llm)
        with pytest.raises(ContextOverflowError, match="maximum context length is 8192") as caught:
            collect(p, request(tools=TOOLS))
        collect(p, request(tools=TOOLS))
    assert [r["stream"] for r in llm.requests] == [True, True, False, True]
    assert caught.value.attempts == 3 and caught.value.server_window == 8192  # the server's own numbers


def test_reasoning_effort_for_reasoning_models_only_unless_named() -> None:
    def body(model: str, setting: str) -> dict[str, Any]:
        p = OpenAIProvider(model=model, base_url="http://127.0.0.1:9/v1")
        try:
            return p.request_body(ModelRequest(system=(), messages=(UserMessage(content="x"),),
                                               thinking=Thinking.parse(setting)))
        finally:
            p.close()

    assert body("o3-mini", "on")["reasoning_effort"] == "medium"
    assert body("openai/gpt-5", "20000")["reasoning_effort"] == "high"
    assert "reasoning_effort" not in body("gpt-4.1", "on")  # would be refused with a 400
    assert body("qwen3-32b", "low")["reasoning_effort"] == "low"  # named: sent to any model
    assert "reasoning_effort" not in body("o3", "off")
