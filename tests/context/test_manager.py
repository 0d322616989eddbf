from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from pydantic import BaseModel

from swecli.agent import Agent
from swecli.config import ContextConfig, HookConfig, Settings
from swecli.context.archive import MemoryArchive
from swecli.context.compaction import SUMMARY_SYSTEM
from swecli.context.engineering import Mechanisms
from swecli.context.extract import parse_facts
from swecli.context.hooks import PreCompactCallback, PreCompactDecision
from swecli.context.manager import ContextManager, Limits, Prompt, Wiring, current_turn_start, has_open_calls
from swecli.context.tokens import TokenCounter
from swecli.events import CompactionDone, ContextOverflow, Event, Notice
from swecli.llm.base import CancelToken, ContextOverflowError, ModelRequest, StreamEvent
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolCall, ToolMessage, Usage, UserMessage
from swecli.models.thinking import Thinking
from swecli.testing.model import ScriptedModel, calls, say
from swecli.tools.base import Tool, ToolContext, ToolRegistry, ToolResult
from tests.context.histories import EchoSummarizer, assert_pairing, drawn, prompts, turns
from tests.helpers import loop_agent

SYSTEM = (SystemBlock(text="You are swecli, a coding agent.", cache=True),)
MEMORY = (SystemBlock(text="# OPENCLI.md\nUse pytest. Never push.", cache=True),)


class DumpArgs(BaseModel):
    lines: int = 200


def dump(args: DumpArgs, ctx: ToolContext) -> ToolResult:
    body = "\n".join(f"src/pkg/module.py:{i}: value_{i} = compute({i})" for i in range(args.lines))
    return ToolResult(body, summary=f"{args.lines} lines", meta={"exit_code": 0})


TOOLS = ToolRegistry([Tool("dump", "Print lines.", DumpArgs, dump)])


def manager(window: int = 7_000, *, events: list[Event] | None = None, hooks: HookConfig | None = None,
            root: Path | None = None, pre_compact: PreCompactCallback | None = None, source: str = "",
            **config: object) -> ContextManager:
    """Compaction on the spot (the summary made in the background is tested in test_background.py)."""
    cfg = ContextConfig(**{"keep_recent_tokens": 1_500, "background_compaction": False, **config})
    wiring = Wiring(on_event=events.append if events is not None else None, pre_compact=pre_compact,
                    archive=MemoryArchive())
    limits = Limits(window=window, max_tokens=1_024, window_source=source or Limits.window_source)
    return ContextManager(Prompt(SYSTEM, TOOLS.schemas(), MEMORY), limits, cfg, hooks=hooks, root=root, wiring=wiring)


def agent(model: ScriptedModel, context: ContextManager, project: Path, events: list[Event]) -> Agent:
    return loop_agent(model, TOOLS, project, context=context, on_event=events.append, max_iterations=200)


def dump_call(lines: int = 100) -> AssistantMessage:
    return calls(("dump", json.dumps({"lines": lines})))


def is_summary_request(request: ModelRequest) -> bool:
    return request.system[0].text == SUMMARY_SYSTEM


def assert_valid_request(request: ModelRequest) -> None:
    assert request.system == SYSTEM + MEMORY
    assert_pairing(request.messages)


# --- the loop -----------------------------------------------------------------------------------

def test_auto_compaction_fires_at_the_turn_boundary_in_the_real_loop(project: Path) -> None:
    events: list[Event] = []
    context = manager(events=events)
    model = ScriptedModel([dump_call(), dump_call(), dump_call(), dump_call(),
                           say("### Current task and state\ndumping files"), say("finished")])
    turn = agent(model, context, project, events).run("dump the module four times")
    model.assert_done()
    assert turn.answer == "finished"
    assert [is_summary_request(r) for r in model.requests] == [False] * 4 + [True, False]
    for request in model.requests:
        if not is_summary_request(request):
            assert_valid_request(request)
    after = model.requests[5].messages
    assert prompts(after) == ["dump the module four times"]
    summary = next(m for m in after if isinstance(m, UserMessage) and m.kind == "summary")
    assert "dumping files" in summary.content
    assert parse_facts(summary.content).commands == []  # dump is not a shell tool
    done = [e for e in events if isinstance(e, CompactionDone)]
    assert len(done) == 1 and done[0].trigger == "auto" and done[0].strategy == "summarize"
    assert done[0].tokens_before > context.budget.limit >= done[0].tokens_after
    assert context.compactions == done
    assert context.state(after).total < context.budget.limit


def test_overflow_compacts_and_retries_the_same_step_once(project: Path) -> None:
    events: list[Event] = []
    context = manager(window=100_000, events=events)
    model = ScriptedModel([dump_call(), dump_call(), dump_call(),
                           ContextOverflowError("maximum context length exceeded"),
                           say("summary after overflow"), say("recovered")])
    turn = agent(model, context, project, events).run("go")
    model.assert_done()
    assert turn.answer == "recovered"
    assert is_summary_request(model.requests[4])
    retry = model.requests[5]
    assert_valid_request(retry)
    assert any(isinstance(m, UserMessage) and m.kind == "summary" for m in retry.messages)
    done = [e for e in events if isinstance(e, CompactionDone)]
    assert [d.trigger for d in done] == ["overflow"]
    assert context.calibration.ratio > 1.0  # the provider proved our count low


def test_no_compaction_while_the_history_fits(project: Path) -> None:
    context = manager(window=100_000)
    history: list[Message] = [UserMessage(content="hi")]
    assert context.prepare(history, ScriptedModel([])) is history
    assert context.compactions == []


def test_no_compaction_while_a_tool_call_waits_for_its_result() -> None:
    context = manager()
    call = ToolCall(id="1", name="dump")
    history: list[Message] = [UserMessage(content="x " * 5_000), AssistantMessage(tool_calls=(call,))]
    assert has_open_calls(history)
    assert context.prepare(history, ScriptedModel([])) is history


def test_a_history_changed_in_place_between_two_calls_is_counted_from_what_it_holds_now() -> None:
    """During one of the loop's calls its history is checked once; between two calls, a list changed in place
    at the same length (no append) is read again, never trusted from the call before."""
    context = manager(window=200_000)
    call = ToolCall(id="1", name="dump")
    history: list[Message] = [UserMessage(content="dump it"), AssistantMessage(tool_calls=(call,)),
                              ToolMessage(tool_call_id="1", name="dump", content="short")]
    history = context.prepare(history, ScriptedModel([]))
    before = context.request(history)
    history[2] = ToolMessage(tool_call_id="1", name="dump", content="a much longer output " * 200)
    changed = context.state(history).raw_total  # outside any call (/context, the toolbar): read again too
    assert changed > context.meter.last_request_tokens
    history = context.prepare(history, ScriptedModel([]))
    after = context.request(history)
    counter = context.counter
    assert context.meter.last_request_tokens == counter.request(after) > counter.request(before)
    assert context.state(history).raw_total == counter.request(after) == changed


def test_auto_compact_can_be_switched_off() -> None:
    context = manager(auto_compact=False)
    history: list[Message] = [UserMessage(content="x " * 10_000)]
    assert context.prepare(history, ScriptedModel([])) is history


# --- manual /compact, hooks ---------------------------------------------------------------------

def long_history(rounds: int = 6) -> list[Message]:
    history: list[Message] = [UserMessage(content="refactor the parser; keep the public API")]
    for i in range(rounds):
        call = ToolCall(id=f"c{i}", name="dump", arguments="{}")
        history += [AssistantMessage(tool_calls=(call,)),
                    ToolMessage(tool_call_id=f"c{i}", name="dump", content="row\n" * 400)]
    return [*history, AssistantMessage(content="parser refactored")]


def test_manual_compact_with_focus_steers_the_summary() -> None:
    events: list[Event] = []
    context = manager(window=200_000, events=events, keep_recent_tokens=200)
    model = ScriptedModel([say("focused summary")])
    history = long_history()
    result = context.compact(history, model, trigger="manual", focus="the tokenizer changes")
    model.assert_done()
    assert "the tokenizer changes" in model.requests[0].messages[0].content
    assert result is not history and prompts(result) == prompts(history)
    done = [e for e in events if isinstance(e, CompactionDone)]
    assert done[0].trigger == "manual" and done[0].messages_compacted > 0 and done[0].reduction > 0.5


def test_manual_compact_of_a_small_history_says_there_is_nothing_to_do() -> None:
    events: list[Event] = []
    context = manager(window=200_000, events=events)
    history: list[Message] = [UserMessage(content="hi"), AssistantMessage(content="hello")]
    assert context.compact(history, ScriptedModel([]), trigger="manual") is history
    assert any(isinstance(e, Notice) and "nothing to compact" in e.text for e in events)
    assert context.compactions == []


def test_hook_command_can_cancel_an_auto_compaction_but_not_an_overflow(tmp_path: Path) -> None:
    events: list[Event] = []
    context = manager(window=200_000, events=events, hooks=HookConfig(pre_compact="echo '{\"cancel\": true}'"),
                      root=tmp_path, keep_recent_tokens=200)
    history = long_history()
    assert context.compact(history, ScriptedModel([]), trigger="auto") is history
    assert any(isinstance(e, Notice) and "cancelled by the PreCompact hook" in e.text for e in events)
    compacted = context.compact(history, ScriptedModel([say("s")]), trigger="overflow")
    assert compacted is not history
    assert any(isinstance(e, Notice) and "compacting anyway" in e.text for e in events)


def test_hook_command_receives_the_state_and_can_supply_the_summary(tmp_path: Path) -> None:
    hook = tmp_path / "hook.py"
    hook.write_text("import json, sys, pathlib\nd = json.load(sys.stdin)\n"
                    "pathlib.Path('payload.json').write_text(json.dumps(d))\n"
                    "print(json.dumps({'summary': 'summary from the hook'}))\n", encoding="utf-8")
    context = manager(window=200_000, hooks=HookConfig(pre_compact=f"{sys.executable} {hook}"), root=tmp_path,
                      keep_recent_tokens=200)
    history = long_history()
    result = context.compact(history, ScriptedModel([]), trigger="manual", focus="f")
    payload = json.loads((tmp_path / "payload.json").read_text())
    assert payload["trigger"] == "manual" and payload["focus"] == "f"
    assert payload["message_count"] == len(history) and payload["tokens"] == context.state(history).total
    assert any("summary from the hook" in m.content for m in result if isinstance(m, UserMessage))
    assert context.compactions[-1].strategy == "hook"


def test_python_callback_hook_adds_instructions() -> None:
    context = manager(window=200_000, pre_compact=lambda payload: {"instructions": f"mention {payload.trigger}"},
                      keep_recent_tokens=200)
    model = ScriptedModel([say("s")])
    context.compact(long_history(), model, trigger="manual")
    assert "mention manual" in model.requests[0].messages[0].content


def test_archive_is_written_to_the_project_and_named_in_the_summary(project: Path) -> None:
    context = ContextManager(Prompt(SYSTEM), Limits(window=200_000),
                             ContextConfig(keep_recent_tokens=200, strategy="truncate"), root=project)
    history = long_history()
    result = context.compact(history, ScriptedModel([]), trigger="manual")
    summary = next(m for m in result if isinstance(m, UserMessage) and m.kind == "summary")
    archive = parse_facts(summary.content).archives[0]
    assert archive.startswith(".swecli/compactions/")
    lines = (project / archive).read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(history)


def test_tool_meta_gives_exact_exit_codes_to_the_facts() -> None:
    context = manager(window=200_000, keep_recent_tokens=0, strategy="truncate")
    call = ToolCall(id="b1", name="bash", arguments='{"command": "make test"}')
    output = "\n".join(f"test_{i} PASSED" for i in range(200)) + "\nok"  # enough for the summary to shrink it
    content = context.tool_content(call, ToolResult(output, meta={"exit_code": 2, "duration": 1.0}))
    history: list[Message] = [UserMessage(content="run"), AssistantMessage(tool_calls=(call,)),
                              ToolMessage(tool_call_id="b1", name="bash", content=content),
                              AssistantMessage(content="done"), UserMessage(content="next")]
    result = context.compact(history, ScriptedModel([]), trigger="manual")
    summary = next(m for m in result if isinstance(m, UserMessage) and m.kind == "summary")
    assert parse_facts(summary.content).commands == ["[exit 2] make test"]


# --- accounting -----------------------------------------------------------------------------------

def test_state_breaks_the_request_down_by_component() -> None:
    context = manager(window=100_000)
    history: list[Message] = [UserMessage(content="first task"), AssistantMessage(content="done"),
                              UserMessage(content="second task"), AssistantMessage(content="working")]
    state = context.state(history)
    counter = context.counter
    assert state.system == counter.system(SYSTEM) and state.memory == counter.system(MEMORY)
    assert state.tools == counter.tools(TOOLS.schemas())
    assert state.history == counter.messages(history)  # the model answered: between tasks, all is history
    assert state.total == state.raw_total == counter.request(context.request(history))
    assert state.exact and state.encoding == "o200k_base" and not state.calibrated
    assert current_turn_start(history) == 2
    working = AssistantMessage(content="working", tool_calls=(ToolCall(id="c1", name="list_files"),))
    in_progress = [*history[:3], working, ToolMessage(tool_call_id="c1", name="list_files", content="a.py")]
    state = context.state(in_progress)
    assert state.history == counter.messages(history[:2])
    assert state.current_turn > counter.messages(in_progress[2:])  # plus the reply priming


def test_observe_calibrates_later_estimates_and_keeps_the_raw_figure() -> None:
    context = manager(window=100_000)
    history: list[Message] = [UserMessage(content="hello " * 300)]
    request = context.request(history)
    local = context.counter.request(request)
    context.observe(request, Usage(input_tokens=int(local * 1.25), output_tokens=10))
    state = context.state(history)
    assert state.calibrated and abs(state.ratio - 1.25) < 0.01
    assert state.raw_total == local
    assert abs(state.total - local * 1.25) <= 6  # per-component rounding
    context.observe(request, None)  # a server without usage leaves it alone
    assert context.calibration.samples == 1


def test_from_settings_uses_the_window_and_sections() -> None:
    settings = Settings(model="gpt-4", context_limit=50_000, max_tokens=2_000,
                        context=ContextConfig(threshold=0.5), hooks=HookConfig(pre_compact="true"))
    context = ContextManager.from_settings(settings, Prompt(SYSTEM), root=Path("/tmp"))
    assert context.window == 50_000 and context.budget.limit == 25_000 and context.budget.reserve == 2_000
    assert context.counter.encoding_name == "cl100k_base" and context.compactor.hooks.pre_compact == "true"
    assert isinstance(context.mechanisms, Mechanisms)
    assert context.compactor.params("auto", "", PreCompactDecision()).sections  # the reference list


# --- a whole session through prepare(), like the loop -----------------------------------------------

@drawn(15, 100)
@given(st.data(), st.sampled_from(["summarize", "truncate", "importance"]), st.integers(6_000, 30_000),
       st.booleans())
def test_replaying_a_session_keeps_every_request_valid_and_under_the_threshold(
    data: st.DataObject, strategy: str, window: int, ahead: bool
) -> None:
    """Every request stays paired and under the compaction threshold; with a summary made in the
    background, under the hard limit (the loop works on past the threshold until the summary is in)."""
    context = manager(window=window, strategy=strategy, keep_recent_tokens=window // 5, background_compaction=ahead)
    summarizer = EchoSummarizer()
    history: list[Message] = []
    typed: list[str] = []
    for index in range(data.draw(st.integers(2, 10))):
        turn = data.draw(turns(index))
        typed.append(turn[0].content)
        for message in turn:
            history.append(message)
            if isinstance(message, AssistantMessage) and message.tool_calls:
                continue  # mid tool call: the loop does not call prepare here
            if isinstance(message, ToolMessage) and has_open_calls(history):
                continue
            history = context.prepare(history, summarizer)
            request = context.request(history)
            assert request.system == SYSTEM + MEMORY
            assert_pairing(request.messages)
            assert prompts(history) == typed
            ceiling = context.budget.hard_limit if ahead and strategy == "summarize" else context.budget.limit
            assert context.state(history).total <= ceiling
    context.close()
    event(f"compactions: {min(len(context.compactions), 3)}{'+' if len(context.compactions) > 3 else ''}")


def test_use_model_switches_window_encoding_and_resets_calibration() -> None:
    context = manager(window=100_000)
    context.calibration.observe(1_300, 1_000)
    context.use_model("gpt-4-turbo", 128_000)
    assert context.window == 128_000 and context.counter.encoding_name == "cl100k_base"
    assert context.calibration.samples == 0 and context.state([]).ratio == 1.0


def test_overflow_shrinks_the_history_even_when_our_count_says_it_fits() -> None:
    # A server whose real window is far smaller than the one configured.
    context = manager(window=1_000_000, keep_recent_tokens=500)
    history = long_history(rounds=4)
    request = context.request(history)
    before = context.counter.request(request)
    result = context.compact(history, ScriptedModel([say("short summary")]), trigger="overflow")
    assert context.counter.request(context.request(result)) <= before * 0.85
    assert context.compactions[-1].trigger == "overflow"


def test_prepare_records_the_state_even_with_auto_compaction_off() -> None:
    context = manager(auto_compact=False)
    history: list[Message] = [UserMessage(content="hello")]
    context.prepare(history, ScriptedModel([]))
    assert context.last_state is not None and context.last_state.total == context.state(history).total


# --- the budget: prompt + max_tokens always fits; the tail counts; what is kept scales ---------------

def test_every_request_leaves_room_for_its_reply_and_never_asks_more_than_the_window_allows() -> None:
    context = manager(window=1_024)
    context.max_tokens = 8_192
    history: list[Message] = [UserMessage(content="tell me about the parser " * 10)]
    for _ in range(6):
        request = context.request(history)
        prompt = context.counter.request(request)
        assert request.max_tokens <= context.budget.reserve == 256
        assert prompt + request.max_tokens <= 1_024 or prompt > 1_024 - 64
        history = [*history, AssistantMessage(content="more " * 40), UserMessage(content="go on " * 5)]


def test_the_dynamic_tail_counts_toward_the_compaction_trigger(tmp_path: Path) -> None:
    settings = Settings(model="scripted-model", max_tokens=16,
                        context=ContextConfig(keep_recent_tokens=300, background_compaction=False))
    context = ContextManager.from_settings(settings, Prompt(SYSTEM, TOOLS.schemas()), root=tmp_path)
    history: list[Message] = [UserMessage(content="make the build pass")]
    for i in range(3):  # the same command failing three times: the failure evidence speaks up in the tail
        call = ToolCall(id=f"m{i}", name="bash", arguments='{"command": "make"}')
        result = ToolResult("make: *** [all] Error 2\nexit code 2", is_error=True)
        history += [AssistantMessage(tool_calls=(call,)),
                    ToolMessage(tool_call_id=call.id, name="bash", content=context.tool_content(call, result))]
    history += [AssistantMessage(content="retrying " * 200), UserMessage(content="keep going")]
    without = context.state(history, tail="")
    tail = context.request(history).tail
    assert "[Failure evidence]" in tail
    with_tail = context.state(history, tail)
    assert with_tail.total == without.total + context.counter.text(tail) + 4
    # A window whose compaction level the history alone stays under, and the history with its tail passes.
    context.window = math.ceil((without.total + 2) / 0.8)
    assert without.total < context.budget.limit < with_tail.total
    summarizer = ScriptedModel([say("### Current task and state\nmake fails")])
    assert context.prepare(history, summarizer) is not history
    assert [c.trigger for c in context.compactions] == ["auto"]


def test_what_auto_compaction_keeps_verbatim_scales_with_the_window() -> None:
    kept = {}
    for window in (40_000, 80_000):
        context = ContextManager(Prompt(SYSTEM, TOOLS.schemas()), Limits(window=window, max_tokens=1_024),
                                 ContextConfig(threshold=0.5, background_compaction=False),
                                 wiring=Wiring(archive=MemoryArchive()))
        assert context.keep_recent_tokens == window // 4
        history: list[Message] = [UserMessage(content="read the module")]
        for i in range(120):
            call = ToolCall(id=f"r{i}", name="dump", arguments="{}")
            history += [AssistantMessage(tool_calls=(call,)),
                        ToolMessage(tool_call_id=call.id, name="dump", content=f"row {i} of the output\n" * 60)]
        history = history[: next(i for i in range(len(history)) if context.state(history[:i]).total > window // 2)
                          + 1]
        while has_open_calls(history):
            history.pop()
        compacted = context.prepare(history, ScriptedModel([say("### Current task and state\nreading")]))
        summary = next(i for i, m in enumerate(compacted) if isinstance(m, UserMessage) and m.kind == "summary")
        kept[window] = context.counter.messages(compacted[summary + 1:])
        assert window // 4 - 1_000 < kept[window] <= window // 4
    assert kept[80_000] > 1.8 * kept[40_000]
def test_an_overflow_naming_a_smaller_window_is_logged_adopted_and_explained() -> None:
    events: list[Event] = []
    context = manager(window=131_072, events=events, source="known-models table")
    context.note_overflow(ContextOverflowError("too long", server_window=4096, requested=5000))
    overflow = [e for e in events if isinstance(e, ContextOverflow)]
    assert overflow == [ContextOverflow(131_072, 4096, 5000, "too long", adopted=True)]
    assert context.window == 4096 and context.window_source == "server (its context-length error)"
    notice = next(e for e in events if isinstance(e, Notice))
    assert "4,096 tokens, smaller than the 131,072 swecli planned for" in notice.text
    assert "context_limit = 4096" in notice.text and "llama-server -c" in notice.text


@dataclass
class TokenizerOfItsOwn(ScriptedModel):
    """A server whose tokenizer counts `ratio` times swecli's count: a request that does not fit its window
    in its own tokens is rejected naming the prompt's size, as llama.cpp (n_prompt_tokens) and
    llama-cpp-python ("N in the messages") do."""

    window: int = 8_000
    ratio: float = 1.6
    counter: TokenCounter = field(default_factory=TokenCounter)
    rejected: list[int] = field(default_factory=list)

    def stream(self, request: ModelRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        size = math.ceil(self.counter.request(request) * self.ratio)
        if size + request.max_tokens > self.window:
            self.requests.append(request)
            self.rejected.append(len(self.requests) - 1)
            raise ContextOverflowError("too long", server_window=self.window, prompt_tokens=size)
        yield from super().stream(request, cancel)


def test_an_overflow_naming_the_prompts_size_calibrates_the_count_so_the_summary_request_fits(
        project: Path) -> None:
    """The server's count of the rejected prompt is the exact ratio to ours: taken at once, so the summary
    request and every request after it fit the server's window in its own tokens (before: a summary request
    of 4,585 tokens for a window of 4,096)."""
    context = manager(window=8_000)
    model = TokenizerOfItsOwn([dump_call(), dump_call(), dump_call(), say("summary after overflow"),
                               say("recovered")], counter=context.counter)
    turn = agent(model, context, project, []).run("go")
    model.assert_done()
    assert turn.answer == "recovered" and len(model.rejected) == 1
    assert context.calibration.ratio == pytest.approx(model.ratio, rel=0.02)
    after = model.requests[model.rejected[0] + 1:]
    assert is_summary_request(after[0]) and len(after) == 2


def test_an_overflow_without_numbers_or_with_a_larger_window_changes_nothing() -> None:
    events: list[Event] = []
    context = manager(window=8_192, events=events)
    context.note_overflow(ContextOverflowError("empty stream"))
    context.note_overflow(ContextOverflowError("too long", server_window=32_768))
    assert context.window == 8_192 and not any(isinstance(e, Notice) for e in events)
    assert [e.adopted for e in events if isinstance(e, ContextOverflow)] == [False, False]


def test_the_final_overflow_error_counts_every_request_and_names_the_fix() -> None:
    context = manager(window=32_768, source="default for unknown models")
    first = ContextOverflowError("empty stream").with_note("gave up after 2 attempts", 2)
    again = ContextOverflowError("empty stream").with_note("gave up after 2 attempts", 2)
    assert isinstance(first, ContextOverflowError) and isinstance(again, ContextOverflowError)
    error = context.overflow_failure(first, again)
    assert str(error) == ("empty stream; still too large after compacting (4 requests sent): swecli planned for "
                          "32,768 tokens (default for unknown models); if the server's window is smaller, set "
                          "context_limit to it or give the server a larger context.")
    named = context.overflow_failure(ContextOverflowError("x", server_window=4096),
                                     ContextOverflowError("x", server_window=4096, requested=6000))
    assert "(2 requests sent): the server's window is 4,096 tokens and the request 6,000" in str(named)


@pytest.mark.parametrize(("window", "thinking", "expected"), [
    (200_000, 8_192, (8_192, 8_192)),  # room for both: all of both
    (32_000, 8_192, (4_000, 4_000)),  # a quarter of the window, shared as asked (1:1)
    (32_000, 24_576, (2_000, 6_000)),  # shared 1:3
    (6_000, 8_192, (1_500, 0)),  # a budget under Anthropic's 1,024 minimum: no thinking for this request
])
def test_extended_thinking_shares_the_replys_room_and_the_whole_still_fits(
        window: int, thinking: int, expected: tuple[int, int]) -> None:
    context = manager(window=window)
    context.max_tokens = 8_192
    request = context.request([UserMessage(content="plan the refactor")], Thinking(thinking, "medium"))
    assert (request.max_tokens, request.thinking.budget) == expected
    # What a thinking wire asks for (max_tokens + budget) fits the window with the prompt.
    assert context.counter.request(request) + request.max_tokens + request.thinking.budget <= window


SETTLE_SCRIPT = r"""
import json, threading
from swecli.context import tokens
from swecli.context.manager import ContextManager, Limits, Prompt
from swecli.messages import SystemBlock, Usage, UserMessage

start = threading.Event()
tokens.prefetch("o200k_base", start)
context = ContextManager(Prompt((SystemBlock(text="You are a careful engineer. " * 40),)),
                         Limits(window=100_000, max_tokens=1_000, model="gpt-4o"))
history = [UserMessage(content="Rename parse_header to read_header everywhere. " * 20)]
request = context.request(history)
estimated = context.state(history).raw_total
context.observe(request, Usage(input_tokens=700, output_tokens=5))
samples_while_estimating = context.calibration.samples
start.set()
tokens._prefetches["o200k_base"].join(60)
history = context.prepare(history, None)
settled = context.state(history).raw_total
fresh = ContextManager(Prompt((SystemBlock(text="You are a careful engineer. " * 40),)),
                         Limits(window=100_000, max_tokens=1_000, model="gpt-4o"))
request = context.request(history)
context.observe(request, Usage(input_tokens=700, output_tokens=5))
print(json.dumps({"estimated": estimated, "settled": settled, "exact": fresh.state(history).raw_total,
                  "samples_while_estimating": samples_while_estimating, "samples": context.calibration.samples}))
"""


def test_counts_made_while_the_vocabulary_loads_are_made_again_once_it_is_in() -> None:
    # Its own process: the vocabulary must not be loaded yet (tokens.prefetch).
    import subprocess

    out = subprocess.run([sys.executable, "-c", SETTLE_SCRIPT], capture_output=True, text=True, timeout=120,
                         check=True)
    found = json.loads(out.stdout)
    assert found["estimated"] > found["exact"]  # the characters-based estimate errs high
    assert found["settled"] == found["exact"]  # the ledger counted again: nothing estimated is left
    assert found["samples_while_estimating"] == 0 and found["samples"] == 1  # calibrated on exact counts only


WAIT_SCRIPT = r"""
import json, threading
from swecli.context import tokens
from swecli.context.manager import ContextManager, Limits, Prompt
from swecli.messages import AssistantMessage, SystemBlock, UserMessage

tokens.prefetch("o200k_base", threading.Event())  # a start signal that never comes
context = ContextManager(Prompt((SystemBlock(text="system"),)),
                         Limits(window=100_000, max_tokens=1_000, model="gpt-4o"))
first = [UserMessage(content="a fresh session's task")]
context.prepare(first, None)
fresh = context.counter.generation
short = first + [AssistantMessage(content="an earlier answer"), UserMessage(content="go on")]
context.prepare(short, None)
kept_whole = context.counter.generation
long = short + [AssistantMessage(content="a long answer " * 20_000), UserMessage(content="go on")]
context.prepare(long, None)
print(json.dumps([fresh, kept_whole, context.counter.generation, tokens.loading("o200k_base")]))
"""


def test_a_history_with_answers_is_never_decayed_or_compacted_on_estimates() -> None:
    import subprocess

    out = subprocess.run([sys.executable, "-c", WAIT_SCRIPT], capture_output=True, text=True, timeout=120, check=True)
    fresh, kept_whole, resumed, still_loading = json.loads(out.stdout)
    assert fresh == 0  # the first request of a fresh session does not wait for the vocabulary
    assert kept_whole == 0  # nor a history decay keeps whole anyway (the first tool call's next request)
    assert resumed == 1 and not still_loading  # one decay could fold waits for it (started at once)


NEAR_LIMIT_SCRIPT = r"""
import json, threading
from swecli.context import tokens
from swecli.context.manager import ContextManager, Limits, Prompt
from swecli.messages import SystemBlock, UserMessage

tokens.prefetch("o200k_base", threading.Event())  # a start signal that never comes
probe = ContextManager(Prompt((SystemBlock(text="x"),)),
                         Limits(window=8_000, max_tokens=500, model="gpt-4o"))
words = int(0.8 * probe.budget.warning_limit)  # ~1 token each; the estimate counts ~1.7
context = ContextManager(Prompt((SystemBlock(text="word " * words),)),
                         Limits(window=8_000, max_tokens=500, model="gpt-4o"))
history = context.prepare([UserMessage(content="a fresh session's task")], None)
state = context.last_state
print(json.dumps([context.counter.generation, state.total < context.budget.warning_limit, len(history)]))
"""


def test_a_first_request_near_a_limit_is_counted_exactly_before_anything_is_decided() -> None:
    import subprocess

    out = subprocess.run([sys.executable, "-c", NEAR_LIMIT_SCRIPT], capture_output=True, text=True, timeout=120,
                         check=True)
    generation, below_warning, kept = json.loads(out.stdout)
    assert generation == 1  # the estimate crossed the warning level, so the vocabulary was waited for
    assert below_warning and kept == 1  # and the exact count is below it: nothing compacted
