"""Background compaction in the real loop, over real HTTP, on both wires.

The agent talks to one scripted server; the background summary to another (its own provider, as a
session makes it), whose step blocks on an event the test controls. So each test decides exactly
when the summary comes back relative to the loop's requests, with no timing in any assertion.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from swecli.agent import Agent
from swecli.config import ContextConfig, Settings
from swecli.context.compaction import SAVED_PATH, SUMMARY_MARKER, SUMMARY_SYSTEM
from swecli.context.hooks import PreCompactInput
from swecli.context.manager import ContextManager, Prompt, Wiring
from swecli.events import BackgroundSummary, CompactionDone, Event, ModelCallStarted, Notice
from swecli.llm.base import Provider
from swecli.messages import SystemBlock
from swecli.permissions import Policy
from swecli.testing.server import Call, Fail, Reply, ScriptedLLM, Step
from swecli.tools.base import Tool, ToolContext, ToolRegistry, ToolResult

SYSTEM = (SystemBlock(text="You are swecli, a coding agent.", cache=True),)
SUMMARY = "### Current task and state\nDumping the module, one page at a time."
TASK = "dump the module page by page, then say finished"
WIRES = ["openai", "anthropic"]


class DumpArgs(BaseModel):
    page: int = 0


def dump(args: DumpArgs, ctx: ToolContext) -> ToolResult:
    body = "\n".join(f"src/pkg/module.py:{i}: value_{i} = compute({i}, page={args.page})" for i in range(60))
    return ToolResult(body, meta={"exit_code": 0})


class Nothing(BaseModel):
    pass


def stop(args: Nothing, ctx: ToolContext) -> ToolResult:
    ctx.cancel.cancel()  # what Esc does
    return ToolResult("stopped")


def note(args: Nothing, ctx: ToolContext) -> ToolResult:
    return ToolResult("noted")


TOOLS = ToolRegistry([Tool("dump", "Print one page of the module.", DumpArgs, dump),
                      Tool("stop", "Simulates Esc.", Nothing, stop),
                      Tool("note", "Takes a note.", Nothing, note)])


def provider_for(llm: ScriptedLLM, wire: str) -> Provider:
    if wire == "anthropic":
        from swecli.llm.anthropic import AnthropicProvider

        return AnthropicProvider(model="scripted-model", base_url=llm.base_url, api_key="test-key",
                                 sleep=lambda s: None, max_retries=0)
    from swecli.llm.openai import OpenAIProvider

    return OpenAIProvider(model="scripted-model", base_url=llm.base_url, api_key="test-key",
                          name="openai-compatible", sleep=lambda s: None, max_retries=0)


def is_summary_request(body: dict[str, Any]) -> bool:
    system = body.get("system")
    if system is not None:  # Anthropic: the system prompt is its own field
        text = system if isinstance(system, str) else " ".join(b.get("text", "") for b in system)
        return SUMMARY_SYSTEM in text
    return body["messages"][0]["content"] == SUMMARY_SYSTEM


TAIL_MARKERS = ("[Reminder: current goal and progress]", "[Failure evidence]")


def without_tail(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history a request carries, without its dynamic tail (its own message on the OpenAI wire, a
    last text block on the Anthropic one) and without Anthropic's cache breakpoints (they move)."""
    out = [{**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]}
           if isinstance(m.get("content"), list) else dict(m) for m in messages]
    last = out[-1] if out else None
    if last is None or last["role"] != "user":
        return out
    content = last["content"]
    if isinstance(content, str):
        return out[:-1] if content.startswith(TAIL_MARKERS) else out
    kept = [b for b in content if not str(b.get("text", "")).startswith(TAIL_MARKERS)]
    if kept:
        out[-1] = {**last, "content": kept}
        return out
    return out[:-1]


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(b.get("text", b.get("content", ""))) for b in content)
    return str(content or "")


@dataclass
class Run:
    """One session: the loop's server, the summary's server, what the loop reported."""

    wire: str
    window: int = 6_000
    events: list[Event] = field(default_factory=list)
    gate: threading.Event = field(default_factory=threading.Event)
    """Set it and the summary server answers."""
    context: ContextManager | None = None
    pages: int = 0
    root: Path = Path()
    """The project (a temporary folder, while the session is open)."""

    def page(self) -> Reply:
        self.pages += 1
        return Reply(calls=[Call("dump", {"page": self.pages})], usage=False)

    def seen(self, kind: type, **fields: object) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)
                and all(getattr(e, k) == v for k, v in fields.items())]

    def phases(self) -> list[str]:
        return [e.phase for e in self.seen(BackgroundSummary)]

    def compacted(self) -> bool:
        return bool(self.seen(CompactionDone))


@contextmanager
def session(run: Run, main: Callable[[dict[str, Any]], Step], summary: Step | None = None,
            hook: Callable[[PreCompactInput], Any] | None = None) -> Iterator[tuple[Agent, ScriptedLLM, ScriptedLLM]]:
    def summarize(body: dict[str, Any]) -> Step:
        run.gate.wait(30)
        return Reply(SUMMARY, usage=False)

    settings = Settings(model="scripted-model", context_limit=run.window, max_tokens=512,
                        context=ContextConfig(keep_recent_tokens=1_000))
    with ScriptedLLM([main] * 40, wire=run.wire, strict=False) as llm, \
            ScriptedLLM([summary or summarize], wire=run.wire, strict=False) as summarizer, \
            tempfile.TemporaryDirectory() as root:
        wiring = Wiring(on_event=run.events.append, pre_compact=hook,
                        summary_provider=lambda: provider_for(summarizer, run.wire))
        context = ContextManager.from_settings(settings, Prompt(SYSTEM, TOOLS.schemas()), root=Path(root),
                                               wiring=wiring)
        run.context, run.root = context, Path(root)
        provider = provider_for(llm, run.wire)
        agent = Agent(provider, TOOLS, context, ToolContext(root=Path(root)), Policy("auto"),
                      on_event=run.events.append)
        try:
            yield agent, llm, summarizer
        finally:
            run.gate.set()  # never leave a server thread waiting
            context.close()
            provider.close()


def main_requests(llm: ScriptedLLM) -> list[dict[str, Any]]:
    return [body for body in llm.requests if not is_summary_request(body)]


# --- the summary is made while the loop works -------------------------------------------------------

@pytest.mark.parametrize("wire", WIRES)
def test_the_loop_goes_on_while_the_summary_is_made_and_applies_it_at_the_threshold(wire: str,
                                                                                     project: Path) -> None:
    run = Run(wire)
    served_while_summarizing: list[int] = []

    def main(body: dict[str, Any]) -> Step:
        if run.compacted():
            return Reply("finished", usage=False)
        job = run.context.background_job if run.context else None
        if job is not None and not run.gate.is_set():
            # The summary was started before this request and cannot have come back: the loop asked
            # the model regardless. Let it come back now, before the loop's next step.
            served_while_summarizing.append(len(main_requests(llm)))
            run.gate.set()
            job.done.wait(30)
        return run.page()

    with session(run, main) as (agent, llm, summarizer):
        assert agent.run(TASK).answer == "finished"
    assert served_while_summarizing, "the loop should have asked the model while the summary was being made"
    assert len(summarizer.requests) == 1 and is_summary_request(summarizer.requests[0])
    assert not any(is_summary_request(b) for b in llm.requests)  # nothing waited on the loop's server
    assert run.phases() == ["started", "used"]
    (done,) = run.seen(CompactionDone)
    assert done.background and done.trigger == "auto" and done.tokens_after < done.tokens_before
    assert not [n for n in run.seen(Notice) if "waiting for the background summary" in n.text]
    # The request after the compaction: the summary, then what was appended since the snapshot, verbatim.
    bodies = main_requests(llm)
    after = next(i for i, b in enumerate(bodies) if any(SUMMARY_MARKER in text_of(m) for m in b["messages"]))
    messages = without_tail(bodies[after]["messages"])
    start = next(i for i, m in enumerate(messages) if SUMMARY_MARKER in text_of(m)) + 1
    kept, before = messages[start:], without_tail(bodies[after - 1]["messages"])
    assert len(kept) >= 4 and kept[:-2] == before[-(len(kept) - 2):]
    assert SUMMARY.splitlines()[1] in text_of(messages[start - 1])
    assert_paired(messages, wire)


def assert_paired(messages: list[dict[str, Any]], wire: str) -> None:
    """Every tool call answered before the next message, on either wire."""
    if wire == "openai":
        pending: set[str] = set()
        for m in messages:
            if m["role"] == "tool":
                pending.discard(m["tool_call_id"])
                continue
            assert not pending
            pending = {c["id"] for c in m.get("tool_calls", [])}
        assert not pending
        return
    for i, m in enumerate(messages):
        uses = [b["id"] for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"] \
            if isinstance(m["content"], list) else []
        if uses:
            answer = messages[i + 1]["content"]
            assert {b["tool_use_id"] for b in answer if b.get("type") == "tool_result"} == set(uses)


@pytest.mark.parametrize("wire", WIRES)
def test_at_the_hard_limit_older_outputs_fold_instead_of_waiting_and_the_summary_is_applied_later(
        wire: str) -> None:
    run = Run(wire)

    def main(body: dict[str, Any]) -> Step:
        if run.seen(CompactionDone, strategy="summarize"):
            return Reply("finished", usage=False)
        job = run.context.background_job if run.context else None
        if run.seen(CompactionDone, strategy="fold") and job is not None and not run.gate.is_set():
            run.gate.set()  # the summary comes back only once the loop has gone past the hard limit without it
            job.done.wait(30)
        return run.page()

    with session(run, main) as (agent, llm, _summarizer):
        assert agent.run(TASK).answer == "finished"
        hard = agent.context.budget.hard_limit
        saved = {f".swecli/tool_results/{p.name}" for p in (run.root / ".swecli" / "tool_results").glob("*.txt")}
        applied = next(b for b in main_requests(llm) if any(SUMMARY_MARKER in text_of(m) for m in b["messages"]))
        named = set(SAVED_PATH.findall(" ".join(text_of(m) for m in applied["messages"])))
        reached = named | {path for index in named if "-index-" in index
                           for path in SAVED_PATH.findall((run.root / index).read_text(encoding="utf-8"))}
    assert not [n for n in run.seen(Notice) if "waiting for the background summary" in n.text]
    # Every output the fold saved is named by the request after the summary, or by the index it names.
    assert saved and saved <= reached
    fold, summary = run.seen(CompactionDone)
    assert (fold.strategy, summary.strategy) == ("fold", "summarize")
    assert fold.tokens_before > hard >= fold.tokens_after and fold.waited == 0 and fold.background
    assert summary.background and run.phases() == ["started", "used"]
    sent = [e.context_tokens for e in run.seen(ModelCallStarted)]
    assert max(sent) <= hard  # no request went out past the hard limit, and none waited for the summary
    # The request after the fold: older pages are digests that name the file holding them; the newest are whole.
    bodies = main_requests(llm)
    folded = next(b for b in bodies if any("[swecli: decayed]" in text_of(m) for m in b["messages"]))
    digests = [text_of(m) for m in folded["messages"] if "[swecli: decayed]" in text_of(m)]
    assert all(".swecli/tool_results/" in d for d in digests)
    assert "page=" in text_of(without_tail(folded["messages"])[-1])
    assert_paired(without_tail(folded["messages"]), wire)
    assert_paired(without_tail(applied["messages"]), wire)


@pytest.mark.parametrize("wire", WIRES)
def test_when_folding_cannot_make_room_older_turns_go_and_the_summary_takes_their_place_later(wire: str) -> None:
    """The history grows by the model's own long answers (tool outputs are a line): nothing to fold, so the
    oldest turns are dropped (no model call); the summary, when it arrives, fills the truncation's summary."""
    run = Run(wire)

    def main(body: dict[str, Any]) -> Step:
        if run.seen(CompactionDone, strategy="summarize"):
            return Reply("finished", usage=False)
        job = run.context.background_job if run.context else None
        if run.seen(CompactionDone, strategy="truncate") and job is not None and not run.gate.is_set():
            run.gate.set()  # the summary comes back only after the loop made room without it
            job.done.wait(30)
        run.pages += 1
        return Reply(f"Step {run.pages}: I think the module " + "parses tokens and builds a tree; " * 90,
                     calls=[Call("note", {})], usage=False)

    with session(run, main) as (agent, llm, _summarizer):
        assert agent.run(TASK).answer == "finished"
        hard = agent.context.budget.hard_limit
    assert not [n for n in run.seen(Notice) if "waiting for the background summary" in n.text]
    truncation, summary = run.seen(CompactionDone)
    assert (truncation.strategy, summary.strategy) == ("truncate", "summarize")
    assert truncation.tokens_after < hard < truncation.tokens_before and truncation.waited == 0
    assert run.phases() == ["started", "used"]
    assert run.seen(BackgroundSummary, phase="used")[0].note == "it took the place of the truncation's summary"
    sent = [e.context_tokens for e in run.seen(ModelCallStarted)]
    assert max(sent) <= hard
    # The last request: the truncation's pointers, the model's summary in place of the missing one.
    last = without_tail(main_requests(llm)[-1]["messages"])
    text = next(text_of(m) for m in last if SUMMARY_MARKER in text_of(m))
    assert "summarized in part" in text and SUMMARY.splitlines()[1] in text and ".swecli/compactions/" in text
    assert "Step 1:" not in " ".join(text_of(m) for m in last)  # the oldest turns went
    assert_paired(last, wire)


# --- a summary that fails or is cancelled is dropped; the normal path runs ------------------------------

@pytest.mark.parametrize("wire", WIRES)
def test_a_failed_summary_is_dropped_and_the_hook_still_runs_once(wire: str) -> None:
    run = Run(wire)
    hook_calls: list[PreCompactInput] = []

    def main(body: dict[str, Any]) -> Step:
        if is_summary_request(body):
            return Reply(SUMMARY, usage=False)  # the normal path summarizes with the loop's provider
        job = run.context.background_job if run.context else None
        if job is not None:
            job.done.wait(30)  # the failure is known before the loop's next step
        return Reply("finished", usage=False) if run.compacted() else run.page()

    def hook(payload: PreCompactInput) -> dict[str, str]:
        hook_calls.append(payload)
        return {"instructions": "keep the page numbers"}

    failure = Fail(400, {"error": {"message": "summary model unavailable", "type": "invalid_request_error"}})
    with session(run, main, summary=failure, hook=hook) as (agent, llm, _):
        assert agent.run(TASK).answer == "finished"
    assert run.phases() == ["started", "failed"]
    assert "summary model unavailable" in run.seen(BackgroundSummary, phase="failed")[0].note
    (done,) = run.seen(CompactionDone)
    assert not done.background and done.strategy == "summarize"
    assert len(hook_calls) == 1 and hook_calls[0].background  # ran once, on the summary's thread
    summary_requests = [b for b in llm.requests if is_summary_request(b)]
    assert summary_requests and all("keep the page numbers" in str(b) for b in summary_requests)


@pytest.mark.parametrize("wire", WIRES)
def test_clear_drops_a_summary_under_way(wire: str) -> None:
    run = Run(wire, window=5_000)

    def main(body: dict[str, Any]) -> Step:
        job = run.context.background_job if run.context else None
        return Reply("paused here", usage=False) if job is not None else run.page()

    with session(run, main) as (agent, _, _summarizer):
        assert agent.run(TASK).answer == "paused here"
        job = agent.context.background_job
        assert job is not None and job.phase == "running"
        agent.replace_history([], "clear")
        assert agent.context.background_job is None and job.cancel.cancelled
        run.gate.set()
        assert job.done.wait(30)
    assert run.phases() == ["started", "cancelled"]
    assert run.seen(BackgroundSummary, phase="cancelled")[0].note == "clear"
    assert not run.compacted()


@pytest.mark.parametrize("wire", WIRES)
def test_esc_drops_a_summary_under_way(wire: str) -> None:
    run = Run(wire, window=5_000)

    def main(body: dict[str, Any]) -> Step:
        job = run.context.background_job if run.context else None
        return Reply(calls=[Call("stop", {})], usage=False) if job is not None else run.page()

    with session(run, main) as (agent, _, _summarizer):
        turn = agent.run(TASK)
        assert turn.stop_reason == "interrupted"
    assert run.phases() == ["started", "cancelled"]
    assert run.seen(BackgroundSummary, phase="cancelled")[0].note == "interrupted by the user"
    assert not run.compacted()


@pytest.mark.parametrize("wire", WIRES)
def test_the_hook_can_cancel_a_compaction_whose_summary_was_to_be_made_ahead(wire: str) -> None:
    run = Run(wire)
    hook_calls: list[PreCompactInput] = []

    def main(body: dict[str, Any]) -> Step:
        return Reply("finished", usage=False) if run.seen(BackgroundSummary, phase="declined") else run.page()

    def hook(payload: PreCompactInput) -> dict[str, bool]:
        hook_calls.append(payload)
        return {"cancel": True}

    with session(run, main, hook=hook) as (agent, _, summarizer):
        assert agent.run(TASK).answer == "finished"
    assert run.phases()[:2] == ["started", "declined"]
    assert len(hook_calls) == run.phases().count("started")  # once per compaction attempt
    assert summarizer.requests == []  # no summary was asked for
    assert [n.text for n in run.seen(Notice)].count("compaction cancelled by the PreCompact hook") >= 1
    assert not run.compacted()


# --- a job still matches the history after the engine's own rewrites -------------------------------------

def test_a_job_matches_its_span_after_folds_and_stand_ins_but_not_after_another_history() -> None:
    from swecli.context.background import SummaryJob
    from swecli.context.compaction import CompactionParams
    from swecli.context.decay import fold
    from swecli.context.tokens import TokenCounter
    from swecli.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage

    call = ToolCall(id="c1", name="dump", arguments='{"page": 1}')
    page = dump(DumpArgs(page=1), ToolContext(root=Path())).content
    output = ToolMessage(tool_call_id="c1", name="dump", content=page)
    span: list[Message] = [UserMessage(content="dump it"), AssistantMessage(content="", tool_calls=(call,)), output]
    job = SummaryJob(tuple([*span, AssistantMessage(content="done")]), len(span), CompactionParams(limit=1_000), 0)
    folded = fold(output, call, ".swecli/tool_results/c1.txt", TokenCounter())
    assert job.matches([*span[:2], folded, AssistantMessage(content="done"), UserMessage(content="more")])
    stand_in = UserMessage(content="dump it\n[image: screen.png]")
    assert job.matches([stand_in, *span[1:]])
    other = ToolMessage(tool_call_id="c9", name="dump", content="other")
    assert not job.matches([*span[:2], other]) and not job.matches(span[:2])
    assert not job.matches([UserMessage(content="something else"), *span[1:]])


# --- the digests made ahead of a fold, for outputs that are not offloaded ------------------------------

class ReportArgs(BaseModel):
    section: int = 0


def report(args: ReportArgs, ctx: ToolContext) -> ToolResult:
    """A mid-sized output (~700 tokens, far under the offload threshold: it stays in the context whole until
    a fold), with a needle of its own on its first line."""
    lines = [f"needle_{args.section}_{args.section * 7919 % 10007}"]
    lines += [f"src/app/report_{args.section}.py:{i}: total_{i} = sum(rows[{i}], start={args.section})"
              for i in range(45)]
    return ToolResult("\n".join(lines), meta={"exit_code": 0})


REPORT_TOOLS = ToolRegistry([Tool("report", "Print one section of the report.", ReportArgs, report)])


def tool_outputs(body: dict[str, Any], wire: str) -> dict[str, str]:
    """The tool outputs a request carries, by call id, on either wire."""
    if wire == "openai":
        return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}
    return {b["tool_use_id"]: text_of(b) for m in body["messages"] if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result"}


def reachable_text(root: Path, text: str) -> str:
    """`text` and every saved file it names, and every file those name (an index, a transcript), in full."""
    seen: set[str] = set()
    todo, out = [text], [text]
    while todo:
        for path in SAVED_PATH.findall(todo.pop()):
            if path not in seen and (root / path).is_file():
                seen.add(path)
                todo.append((root / path).read_text(encoding="utf-8"))
                out.append(todo[-1])
    return "\n".join(out)


@pytest.mark.parametrize("wire", WIRES)
def test_outputs_staged_ahead_are_published_by_the_fold_and_nothing_staged_outlives_the_session(wire: str) -> None:
    run = Run(wire, window=8_000)
    staged_before_fold: list[dict[str, int]] = []
    """At each request while the summary was on its way, before the fold: the staged files and their inodes."""
    sections = 0

    def main(body: dict[str, Any]) -> Step:
        nonlocal sections
        if run.seen(CompactionDone, strategy="summarize"):
            return Reply("finished", usage=False)
        assert run.context is not None
        job, ahead = run.context.background_job, run.context.compactor.folds_ahead
        if job is not None and ahead is not None and not run.seen(CompactionDone, strategy="fold"):
            assert ahead.settled(30)  # what the worker was handed so far is on disk: a fold would only swap it
            staged_before_fold.append({p.name: p.stat().st_ino for p in staging.glob("*")})
        if run.seen(CompactionDone, strategy="fold") and job is not None and not run.gate.is_set():
            run.gate.set()  # the summary comes back only once the loop has gone past the hard limit without it
            job.done.wait(30)
        sections += 1
        return Reply(calls=[Call("report", {"section": sections})], usage=False)

    settings = Settings(model="scripted-model", context_limit=run.window, max_tokens=512,
                        context=ContextConfig(keep_recent_tokens=1_000))

    def summarize(body: dict[str, Any]) -> Step:
        run.gate.wait(30)
        return Reply(SUMMARY, usage=False)

    with ScriptedLLM([main] * 60, wire=wire, strict=False) as llm, \
            ScriptedLLM([summarize], wire=wire, strict=False) as summarizer, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        saved_dir = root / ".swecli" / "tool_results"
        staging = saved_dir / ".staged"
        context = ContextManager.from_settings(
            settings, Prompt(SYSTEM, REPORT_TOOLS.schemas()), root=root,
            wiring=Wiring(on_event=run.events.append, summary_provider=lambda: provider_for(summarizer, wire)))
        run.context = context
        provider = provider_for(llm, wire)
        agent = Agent(provider, REPORT_TOOLS, context, ToolContext(root=root), Policy("auto"),
                      on_event=run.events.append)
        try:
            assert agent.run("print the report section by section, then say finished").answer == "finished"
            hard = context.budget.hard_limit
            bodies = main_requests(llm)
            staged_left = {p.name for p in staging.glob("*")}
        finally:
            run.gate.set()
            context.close()
            provider.close()
        left_after_close = list(staging.glob("*"))
        # What the run sent: every output whole (none offloaded) until the fold, then older ones as digests.
        originals: dict[str, str] = {}
        for body in bodies:
            for call_id, text in tool_outputs(body, wire).items():
                if "[swecli: decayed]" not in text:
                    originals.setdefault(call_id, text)
        assert all(text.startswith("needle_") for text in originals.values())  # whole: not offloaded previews
        folded = next(b for b in bodies if any("[swecli: decayed]" in t for t in tool_outputs(b, wire).values()))
        digests = {i: t for i, t in tool_outputs(folded, wire).items() if "[swecli: decayed]" in t}
        published = {p.name: p.stat().st_ino for p in saved_dir.glob("*.txt")}
        final = reachable_text(root, " ".join(text_of(m) for m in bodies[-1]["messages"]))
        needles = {text.split("\n", 1)[0] for text in originals.values()}
        named = {call_id: {p for p in SAVED_PATH.findall(digest) if "tool_results" in p}
                 for call_id, digest in digests.items()}
        holding = {call_id: [(root / p).read_text(encoding="utf-8") for p in paths] for call_id, paths in named.items()}

    fold, summary = run.seen(CompactionDone)
    assert (fold.strategy, summary.strategy) == ("fold", "summarize") and fold.waited == 0
    assert max(e.context_tokens for e in run.seen(ModelCallStarted)) <= hard
    # The worker staged outputs before the fold (under .staged, named by no digest yet) ...
    assert staged_before_fold and staged_before_fold[-1], "outputs should have been staged before the fold"
    # ... and the fold published them: each digest names a file that holds exactly the output it replaced.
    assert digests and len(digests) >= len(staged_before_fold[-1])
    assert all(holding[call_id] == [originals[call_id]] for call_id in digests), holding
    # The very files staged (the same inodes: published by a link, not written again on the spot).
    assert {name.split("-", 1)[1]: ino for name, ino in staged_before_fold[-1].items()}.items() <= published.items()
    # Nothing staged outlives the session (what was staged after the fold was never published) ...
    assert not left_after_close, left_after_close
    assert not staged_left & set(published)
    # ... and no needle is lost: each is in the last request or in a file it names (or one those name).
    assert needles and all(needle in final for needle in needles)


def test_work_made_ahead_waits_while_the_loop_prepares_a_request_and_goes_on_while_the_loop_waits_for_it(
        tmp_path: Path) -> None:
    from swecli.context import background
    from swecli.context.background import SummaryJob, SummaryWork
    from swecli.context.hooks import PreCompactDecision
    from swecli.messages import UserMessage

    context = ContextManager.from_settings(Settings(model="scripted-model", context_limit=6_000),
                                           Prompt(SYSTEM, TOOLS.schemas()), root=tmp_path)
    compactor, hook_ran = context.compactor, threading.Event()

    def hook() -> PreCompactDecision:
        hook_ran.set()
        return PreCompactDecision(cancel=True)  # the job ends there: no summary request

    params = compactor.params("auto", "", PreCompactDecision())
    job = SummaryJob((UserMessage(content="task"),), 1, params, 100)
    work = SummaryWork(hook=hook, provider=lambda: (provider_for(ScriptedLLM([]), "openai"), True),
                       encoding="o200k_base", include_reasoning=False, archive=compactor.archive(), meta={},
                       loop_free=compactor.loop_free)
    with compactor.loop_compacting():
        background.start(job, work)
        with compactor.loop_compacting():
            pass
        assert not compactor.loop_free.is_set()  # nested: still held
        assert not hook_ran.wait(0.3)  # the job waits for the loop's context work
        with compactor.loop_waiting():  # the loop waits for the summary: the job goes on meanwhile
            assert hook_ran.wait(30) and job.done.wait(30)
        assert not compactor.loop_free.is_set()
    assert compactor.loop_free.is_set() and job.phase == "declined"
    context.close()
