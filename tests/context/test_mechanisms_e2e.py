"""Each context-engineering mechanism acting in the real loop: AgentSession + the real providers over
HTTP against the scripted LLM server, asserting on the requests the server recorded."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from swecli.assembly import AgentSession, open_session
from swecli.config import HookConfig, MemoryConfig
from swecli.context.decay import DIGEST_MARKER
from swecli.context.references import REFERENCES_HEADING
from swecli.events import CompactionDone, Event, Notice
from swecli.testing.server import Call, Reply, ScriptedLLM, Step
from tests.helpers import needs_sandbox, scripted_settings, tool_results


def session(root: Path, llm: ScriptedLLM, events: list[Event] | None = None, memory: dict[str, Any] | None = None,
            hooks: dict[str, Any] | None = None, resume: bool = False, top: dict[str, Any] | None = None,
            **context: Any) -> AgentSession:
    settings = scripted_settings(llm, context=context, **(top or {}),
                                 memory=MemoryConfig(**(memory or {"session_notes": False})),
                                 hooks=HookConfig(**(hooks or {})))
    sink = events if events is not None else []
    return open_session(root, settings, listeners=[sink.append], continue_latest=resume)


NOISY_APP = ("for i in range(300):\n    print('processing record', i)\n\n"
             "def main():\n    raise ValueError('boom')\n\nmain()\n")
"""Prints 300 lines, then crashes: a conversation big enough for a summary to shrink it."""


def test_offload_keeps_a_preview_and_the_rest_is_one_read_away(project: Path) -> None:
    def read_back(body: dict[str, Any]) -> Reply:
        path = re.search(r"\.swecli/tool_results/[\w.-]+\.txt", tool_results(body)[-1])
        assert path, tool_results(body)[-1]
        return Reply(calls=[Call("read_file", {"path": path.group(0), "offset": 2500, "limit": 3})])

    steps: list[Step] = [Reply(calls=[Call("bash", {"command": "seq 1 5000"})]), read_back, Reply("done")]
    events: list[Event] = []
    with ScriptedLLM(steps) as llm:
        s = session(project, llm, events, offload=True)
        s.run("count to 5000")
        s.close()
    preview = tool_results(llm.requests[1])[-1]
    assert len(preview) < 3000 and "read_file" in preview and "5,001 lines" in preview
    saved = next((project / ".swecli" / "tool_results").glob("*.txt")).read_text()
    assert saved.splitlines()[4999] == "5000"
    paged = tool_results(llm.requests[2])[-1]
    assert "2500" in paged and "2502" in paged
    assert any(isinstance(e, Notice) and "offloaded bash output" in e.text for e in events)


def test_decay_folds_old_outputs_in_one_batch(project: Path) -> None:
    for name in ("a", "b", "c"):
        (project / f"{name}.py").write_text("".join(f"value_{i} = {i}  # {name}\n" for i in range(400)))
    steps: list[Step] = [Reply(calls=[Call("read_file", {"path": f"{n}.py"})]) for n in "abc"]
    steps += [Reply(calls=[Call("list_files", {})]), Reply("done")]
    events: list[Event] = []
    with ScriptedLLM(steps) as llm:
        # A window where this history stays far below where a summary starts (the scripted model answers
        # at once, so at 32k the runway would start one at half the warning level and take a scripted step).
        s = session(project, llm, events, decay=True, keep_recent_tokens=300, decay_min_savings_tokens=9000,
                    top={"context_limit": 128_000})
        s.run("read the three modules")
        s.close()
    batches = [e for e in events if isinstance(e, CompactionDone) and e.strategy == "decay"]
    assert len(batches) == 1 and batches[0].tokens_after < batches[0].tokens_before
    first_seen = [n for n, body in enumerate(llm.requests) if any(DIGEST_MARKER in r for r in tool_results(body))]
    assert first_seen, "no request carried a digest"
    folded = tool_results(llm.requests[first_seen[0]])
    assert folded[0].startswith(DIGEST_MARKER) and 'read_file(path="a.py")' in folded[0]
    assert "tool_results" in folded[0]  # the full output stays reachable
    # before the batch, requests only grew: the earlier messages are a byte-identical prefix
    for before, after in zip(llm.requests[: first_seen[0] - 1], llm.requests[1: first_seen[0]], strict=True):
        assert after["messages"][: len(before["messages"])] == before["messages"]


def test_recitation_restates_goal_and_todo_progress_in_the_tail(project: Path) -> None:
    todo = {"items": [{"content": "find the bug", "status": "done"},
                      {"content": "write the fix", "status": "in_progress"},
                      {"content": "run the tests", "status": "pending"}]}
    steps: list[Step] = [Reply(calls=[Call("todo", todo)])]
    steps += [Reply(calls=[Call("list_files", {})]) for _ in range(5)] + [Reply("done")]
    with ScriptedLLM(steps) as llm:
        s = session(project, llm, recitation=True)
        s.run("fix the flaky date parsing bug")
        s.close()
    tails = [body["messages"][-1]["content"] for body in llm.requests
             if body["messages"][-1]["role"] == "user" and "[Reminder" in body["messages"][-1]["content"]]
    assert tails, "the recitation never reached a request"
    assert "fix the flaky date parsing bug" in tails[0] and "1/3" in tails[0] and "write the fix" in tails[0]
    assert len(tails) < len(llm.requests)  # refreshed every few iterations, not every request


def test_failure_evidence_after_three_identical_failures(project: Path) -> None:
    fail = Call("bash", {"command": "cat missing.txt"})
    steps: list[Step] = [Reply(calls=[fail]), Reply(calls=[fail]), Reply(calls=[fail]), Reply("giving up")]
    with ScriptedLLM(steps) as llm:
        s = session(project, llm, failure_evidence=True)
        s.run("show missing.txt")
        s.close()
    last = llm.requests[3]["messages"][-1]
    assert last["role"] == "user" and "[Failure evidence]" in last["content"]
    assert "cat missing.txt" in last["content"] and "3 times" in last["content"]
    assert "[Failure evidence]" not in json.dumps(llm.requests[2]["messages"])


def test_just_in_time_context_for_named_files_and_symbols(project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "calc.py").write_text("def compute_total(items):\n    return sum(items) + 1\n")
    with ScriptedLLM([Reply("There is an off-by-one.")]) as llm:
        s = session(project, llm, just_in_time=True)
        s.run("why is `compute_total` in src/calc.py wrong?")
        s.close()
    first = llm.requests[0]["messages"]
    context = [m for m in first if m["role"] == "user" and "return sum(items) + 1" in m["content"]]
    assert context and first.index(context[0]) < len(first) - 1  # attached before the prompt


def test_llm_reflection_grows_the_playbook_and_the_next_session_sees_it(project: Path) -> None:
    deltas = {"deltas": [{"op": "add", "section": "testing", "content": "Run tests with `pytest -q -x` here.",
                          "confidence": 0.9}]}
    with ScriptedLLM([Reply("All good."), Reply(json.dumps(deltas))]) as llm:
        s = session(project, llm, playbook=True, memory={"session_notes": False, "reflect_with_llm": True})
        s.run("check the project")
        s.close()
    stored = json.loads((project / ".swecli" / "playbook.json").read_text())
    assert "pytest -q -x" in json.dumps(stored)
    with ScriptedLLM([Reply("ok")]) as llm:
        s = session(project, llm, playbook=True)
        s.run("hello")
        s.close()
    assert "pytest -q -x" in llm.requests[0]["messages"][0]["content"]  # in the stable system prefix


@needs_sandbox
def test_compaction_lists_the_references_it_drops(project: Path) -> None:
    (project / "app.py").write_text(NOISY_APP)
    steps: list[Step] = [
        Reply(calls=[Call("read_file", {"path": "app.py"})]),
        Reply(calls=[Call("bash", {"command": "python3 app.py"})]),
        Reply("app.py raises ValueError."),
        Reply("## Current task\nExplained the crash."),  # the summary request
        Reply("ok"),
    ]
    with ScriptedLLM(steps) as llm:
        s = session(project, llm)
        s.run("why does app.py crash?")
        s.agent.replace_history(s.agent.context.compact(s.agent.history, s.provider, "manual"), "compaction")
        s.run("thanks")
        s.close()
    summary = next(m["content"] for m in llm.requests[-1]["messages"] if REFERENCES_HEADING in m["content"])
    assert "[exit 1] python3 app.py" in summary and "ValueError: boom" in summary
    assert ".swecli/compactions/" in summary


def test_anthropic_cache_breakpoints_and_cache_usage(project: Path) -> None:
    usage = {"prompt_tokens": 900, "completion_tokens": 10, "cached_tokens": 800, "cache_creation_tokens": 50}
    steps: list[Step] = [Reply(calls=[Call("list_files", {})], usage=usage), Reply("done", usage=usage)]
    with ScriptedLLM(steps, wire="anthropic") as llm:
        s = session(project, llm)
        turn = s.run("look around")
        s.close()
    body = llm.requests[1]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    last_block = body["messages"][-1]["content"][-1]
    assert last_block.get("cache_control") == {"type": "ephemeral"}
    assert turn.usage.cache_read_tokens == 1600 and turn.usage.cache_write_tokens == 100


@needs_sandbox
def test_compaction_references_reach_the_session_notes(project: Path) -> None:
    (project / "app.py").write_text(NOISY_APP)
    steps: list[Step] = [Reply(calls=[Call("bash", {"command": "python3 app.py"})]), Reply("It raises."),
                         Reply("## Current task\nExplained the crash.")]
    with ScriptedLLM(steps) as llm:
        s = session(project, llm, memory={"session_notes": True})
        s.run("why does app.py crash?")
        s.agent.replace_history(s.agent.context.compact(s.agent.history, s.provider, "manual"), "compaction")
        s.close()
    notes = (project / ".swecli" / "memory" / "notes" / f"{s.session_id}.md").read_text()
    assert "context compacted (summarize, manual)" in notes and "python3 app.py" in notes


def test_failure_evidence_survives_a_resume(project: Path) -> None:
    fail = Call("bash", {"command": "cat missing.txt"})
    with ScriptedLLM([Reply(calls=[fail]), Reply(calls=[fail]), Reply("stuck")]) as llm:
        s = session(project, llm, failure_evidence=True)
        s.run("show missing.txt")
        s.close()
    with ScriptedLLM([Reply(calls=[fail]), Reply("giving up")]) as llm:
        s = session(project, llm, failure_evidence=True, resume=True)
        s.run("try again")
        s.close()
    last = llm.requests[1]["messages"][-1]
    assert "[Failure evidence]" in last["content"] and "3 times" in last["content"]


def test_the_pre_compact_hook_steers_a_compaction_in_the_loop(project: Path) -> None:
    hook = Path(__file__).resolve().parents[2] / ".swecli.example" / "hooks" / "pre_compact.py"
    steps: list[Step] = [Reply(calls=[Call("list_files", {})]), Reply("listed"), Reply("## Current task\nListing.")]
    with ScriptedLLM(steps) as llm:
        s = session(project, llm, hooks={"pre_compact": f"{sys.executable} {hook}"})
        s.run("list the project")
        s.agent.replace_history(s.agent.context.compact(s.agent.history, s.provider, "manual"), "compaction")
        s.close()
    assert "Keep every decision about the public API" in json.dumps(llm.requests[2])  # the summary request


@pytest.mark.parametrize("strategy", ["truncate", "importance"])
def test_strategies_without_a_model_call_compact_in_the_loop(project: Path, strategy: str) -> None:
    for name in "ab":
        (project / f"{name}.py").write_text("".join(f"value_{name}_{i} = {i}\n" for i in range(400)))
    steps: list[Step] = [Reply(calls=[Call("list_files", {})]), Reply(calls=[Call("read_file", {"path": "a.py"})]),
                         Reply(calls=[Call("read_file", {"path": "b.py"})]), Reply("read both")]
    events: list[Event] = []
    with ScriptedLLM(steps) as llm:  # strict: a summary request would be an unexpected extra call
        # A window this tight is tuned to the default tools; the task tool's schema would tip importance over.
        s = session(project, llm, events, top={"context_limit": 9200, "max_tokens": 500,
                                                "subagents": {"enabled": False}},
                    strategy=strategy, keep_recent_tokens=500)
        s.run("read a.py and b.py")
        s.close()
    done = [e for e in events if isinstance(e, CompactionDone)]
    assert done and {e.strategy for e in done} == {strategy} and done[0].tokens_after < done[0].tokens_before
    last = llm.requests[-1]["messages"]
    prompts = [m["content"] for m in last if m["role"] == "user" and not m["content"].startswith("[swecli:")]
    assert "read a.py and b.py" in prompts
    called = {c["id"] for m in last if m["role"] == "assistant" for c in m.get("tool_calls", [])}
    assert called == {m["tool_call_id"] for m in last if m["role"] == "tool"}


def test_a_cut_output_is_saved_whole_unless_offload_is_off(project: Path) -> None:
    from swecli.config import ToolsConfig

    steps: list[Step] = [Reply(calls=[Call("bash", {"command": "seq 1 5000"})]), Reply("ok")]
    with ScriptedLLM(steps) as llm:
        s = session(project, llm, top={"tools": ToolsConfig(max_output_chars=1000)}, offload=True)
        s.run("count")
        s.close()
    (seen,) = tool_results(llm.requests[1])
    path = re.search(r"full text: `([^`]+)`", seen)
    assert path and (project / path.group(1)).read_text() == "".join(f"{i}\n" for i in range(1, 5001))
    with ScriptedLLM([*steps[:1], Reply("ok")]) as llm:
        s = session(project, llm, top={"tools": ToolsConfig(max_output_chars=1000)})  # offload off
        s.run("count")
        s.close()
    (seen,) = tool_results(llm.requests[1])
    assert "cut from the middle of the output" in seen
    assert seen.endswith("[swecli: the output above is cut and was not saved (context.offload is off); redirect "
                         "it to a file to keep all of it]")

