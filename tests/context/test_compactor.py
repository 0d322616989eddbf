"""The compactor's ways to make room: on the spot, a prepared summary, and the two without a model call."""

from __future__ import annotations

import json
from pathlib import Path

from swecli.config import ContextConfig
from swecli.context.compaction import SAVED_PATH, SUMMARY_MARKER, is_summary, summary_body
from swecli.context.decay import DIGEST_MARKER
from swecli.context.hooks import PreCompactDecision
from swecli.context.manager import ContextManager, Limits, Prompt, Wiring
from swecli.events import CompactionDone, Event, Notice
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolCall, ToolMessage, UserMessage
from swecli.testing.model import ScriptedModel, say
from tests.context.histories import assert_pairing, prompts

SYSTEM = (SystemBlock(text="You are swecli, a coding agent."),)


def engine(root: Path, events: list[Event], window: int = 20_000, **config: object) -> ContextManager:
    cfg = ContextConfig(**{"keep_recent_tokens": 2_000, **config})
    return ContextManager(Prompt(SYSTEM), Limits(window=window, max_tokens=2_000), cfg, root=root,
                          wiring=Wiring(on_event=events.append))


def session(pages: int, lines: int = 60) -> list[Message]:
    """A task reading one page after the other: each output ~900 tokens, each with a needle line."""
    history: list[Message] = [UserMessage(content="read the module page by page; keep page 0's secret")]
    for page in range(pages):
        call = ToolCall(id=f"call_{page}", name="read_file", arguments=json.dumps({"path": f"src/page_{page}.py"}))
        body = "\n".join(f"src/page_{page}.py:{i}: value_{i} = compute({i})" for i in range(lines))
        history += [AssistantMessage(content=f"Reading page {page}.", tool_calls=(call,)),
                    ToolMessage(tool_call_id=call.id, name="read_file", content=f"needle_{page}\n{body}")]
    return history


def test_a_fold_turns_older_outputs_into_digests_that_name_their_saved_files(tmp_path: Path) -> None:
    events: list[Event] = []
    context = engine(tmp_path, events)
    history = session(16)
    before = context.state(history)
    folded = context.compactor.fold(history, before, target=before.total - 5_000)
    assert len(folded) == len(history) and [type(m) for m in folded] == [type(m) for m in history]
    assert_pairing(folded)
    digests = [m for m in folded if isinstance(m, ToolMessage) and m.content.startswith(DIGEST_MARKER)]
    assert digests and folded[-1] == history[-1]  # the newest output stays whole
    for digest in digests:  # each names the file that holds the whole output, needle and all
        (path,) = SAVED_PATH.findall(digest.content)
        page = digest.tool_call_id.removeprefix("call_")
        assert f"needle_{page}\n" in (tmp_path / path).read_text(encoding="utf-8")
    (done,) = [e for e in events if isinstance(e, CompactionDone)]
    assert (done.strategy, done.trigger, done.background) == ("fold", "auto", True)
    assert done.tokens_after <= before.total - 5_000 < done.tokens_before and done.waited == 0
    assert context.compactions == [done]


def test_a_fold_goes_deeper_when_the_newest_zone_is_too_big_to_make_room(tmp_path: Path) -> None:
    context = engine(tmp_path, [], keep_recent_tokens=8_000)
    history = session(16)
    before = context.state(history)
    shallow = context.compactor.fold(history, before, target=before.total)
    deep = engine(tmp_path, []).compactor.fold(history, before, target=before.total - 10_000)
    count = len([m for m in deep if isinstance(m, ToolMessage) and m.content.startswith(DIGEST_MARKER)])
    assert count > len([m for m in shallow if isinstance(m, ToolMessage) and m.content.startswith(DIGEST_MARKER)])
    assert not deep[-1].content.startswith(DIGEST_MARKER)


def test_nothing_to_fold_leaves_the_history_itself(tmp_path: Path) -> None:
    context = engine(tmp_path, [])
    history: list[Message] = [UserMessage(content="hi"), AssistantMessage(content="long answer " * 900)]
    assert context.compactor.fold(history, context.state(history), target=0) is history
    assert context.compactions == []


def test_a_truncation_drops_older_turns_and_keeps_the_prompts_facts_and_transcript(tmp_path: Path) -> None:
    events: list[Event] = []
    context = engine(tmp_path, events)
    history = session(16)
    truncated = context.compactor.truncate(history, context.state(history))
    assert_pairing(truncated)
    assert prompts(truncated) == prompts(history)
    summary = next(m for m in truncated if is_summary(m))
    assert "dropped (truncated, no summary written)" in summary.content
    archive = next(p for p in SAVED_PATH.findall(summary.content) if p.endswith(".jsonl"))
    assert "needle_0" in (tmp_path / archive).read_text(encoding="utf-8")  # nothing is lost for good
    (done,) = [e for e in events if isinstance(e, CompactionDone)]
    assert done.strategy == "truncate" and "takes their place when it is ready" in done.note


def test_a_summary_that_arrives_after_a_truncation_takes_the_place_of_its_missing_body(tmp_path: Path) -> None:
    from swecli.context.compaction import CompactionIO, plan_span, prepare_span

    events: list[Event] = []
    context = engine(tmp_path, events)
    history = session(16)
    counter, params = context.counter, context.compactor.params("auto", "", PreCompactDecision())
    cut = plan_span(history, params, counter.message, counter.text)
    summarizer = ScriptedModel([say("### Current task and state\nreading page by page")])
    prepared, _, _ = prepare_span(history, cut, params, counter.message, counter.text,
                                  CompactionIO(context.compactor.archive(), summarizer))
    assert prepared is not None
    truncated = context.compactor.truncate(history, context.state(history))
    upgraded = context.compactor.overtaken(truncated, prepared, context.state(truncated))
    assert upgraded is not None and len(upgraded) == len(truncated)
    summary = next(m for m in upgraded if is_summary(m))
    assert summary.content.startswith(SUMMARY_MARKER) and "summarized in part" in summary.content
    assert summary_body(summary.content) == "### Current task and state\nreading page by page"
    old = next(m for m in truncated if is_summary(m))
    assert SAVED_PATH.findall(summary.content) == SAVED_PATH.findall(old.content)  # the same pointers
    assert [e.strategy for e in events if isinstance(e, CompactionDone)] == ["truncate", "summarize"]


def test_a_compaction_that_would_not_shrink_the_conversation_is_not_applied(tmp_path: Path) -> None:
    events: list[Event] = []
    context = engine(tmp_path, events, window=200_000, keep_recent_tokens=0)
    history: list[Message] = [UserMessage(content="hi"), AssistantMessage(content="hello"),
                              UserMessage(content="and now?"), AssistantMessage(content="now this")]
    long = "### Current task and state\n" + "a summary much longer than what it replaces " * 200
    assert context.compact(history, ScriptedModel([say(long)]), trigger="manual") is history
    assert any(isinstance(e, Notice) and "would not shrink" in e.text for e in events)
    assert context.compactions == []


def outputs_made_ahead(context: ContextManager, history: list[Message]) -> set[str]:
    """The tool-call ids whose digest the worker has made (it finished what it was handed first)."""
    ahead = context.compactor.folds_ahead
    assert ahead is not None and ahead.settled(30)
    return {m.tool_call_id for m in history if isinstance(m, ToolMessage) and ahead.made(m) is not None}


def test_outputs_are_handed_to_the_worker_as_they_grow_old_and_again_after_a_rewrite(tmp_path: Path) -> None:
    """A step hands over only what it added (positions are remembered), yet nothing is skipped; a rewrite
    (new message objects at the same positions) starts the handing over again."""
    context = engine(tmp_path, [])
    full = session(16)
    history = full[:3]
    for end in range(5, len(full) + 1, 2):  # one step at a time, as the loop grows it
        history = full[:end]
        context.compactor.look_ahead(history, make_digests=True)
    zone = context.meter.sync(history).zone_start(2_000)
    older = {m.tool_call_id for m in history[:zone] if isinstance(m, ToolMessage)}
    assert len(older) >= 10 and outputs_made_ahead(context, history) == older
    rewritten = [m.model_copy() for m in history]  # equal, but other objects: what a rewrite hands in
    context.compactor.look_ahead(rewritten, make_digests=True)
    assert outputs_made_ahead(context, rewritten) == older
    context.close()
