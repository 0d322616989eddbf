from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swecli.context.decay import (
    DIGEST_MARKER,
    NO_REFERENCE,
    DecayPolicy,
    DecayScan,
    decay,
    is_digest,
    newest_zone_start,
    saving_reference,
)
from swecli.context.ledger import Ledger
from swecli.context.offload import offload
from swecli.context.prefix import PrefixMonitor
from swecli.context.todo import TODO_FACTS
from swecli.context.tokens import TokenCounter
from swecli.llm.base import ModelRequest
from swecli.messages import AssistantMessage, Message, ThinkingBlock, ToolCall, ToolMessage, UserMessage
from swecli.testing.shared import TRAJECTORIES, load_trajectory, trajectory_paths
from swecli.tools.base import ToolContext
from swecli.tools.builtin import default_registry

counter = TokenCounter()


def big(label: str, lines: int = 300) -> str:
    return "\n".join(f"{label} line {i}: some output text here" for i in range(lines))


def step(n: int, tool: str, args: dict[str, object], output: str, is_error: bool = False) -> list[Message]:
    call = ToolCall(id=f"c{n}", name=tool, arguments=json.dumps(args))
    return [AssistantMessage(content="", tool_calls=(call,)),
            ToolMessage(tool_call_id=call.id, name=tool, content=output, is_error=is_error)]


def session(steps: int, tool: str = "read_file") -> list[Message]:
    history: list[Message] = [UserMessage(content="fix the bug")]
    for n in range(steps):
        history += step(n, tool, {"path": f"src/m{n}.py"}, big(f"m{n}"))
    return history


def assert_same_shape(before: list[Message], after: list[Message]) -> None:
    """Pairing can never break: same length, order, roles, ids, names, error flags."""
    assert len(before) == len(after)
    for old, new in zip(before, after, strict=True):
        assert type(old) is type(new)
        if isinstance(old, ToolMessage):
            assert isinstance(new, ToolMessage)
            assert (old.tool_call_id, old.name, old.is_error) == (new.tool_call_id, new.name, new.is_error)
        else:
            assert old is new


def test_below_the_batch_threshold_the_history_is_returned_unchanged() -> None:
    history = session(10)
    result = decay(history, counter, keep_recent_tokens=3000, min_savings_tokens=10**9)
    assert result.history is history
    assert (result.folded, result.saved_tokens) == (0, 0)
    assert result.pending_tokens > 0 and not result.changed


def test_folds_old_results_into_digests_and_keeps_the_newest_zone_verbatim() -> None:
    history = session(12)
    keep = 3 * counter.message(history[2]) + 200
    result = decay(history, counter, keep_recent_tokens=keep, min_savings_tokens=1000)
    assert result.changed
    assert_same_shape(history, result.history)
    zone = newest_zone_start(history, counter, keep)
    assert isinstance(history[zone], AssistantMessage)  # the zone starts at a whole step
    assert result.history[zone:] == history[zone:]
    assert all(a is b for a, b in zip(result.history[zone:], history[zone:], strict=True))
    folded = [m for m in result.history[:zone] if isinstance(m, ToolMessage)]
    assert folded and all(is_digest(m) for m in folded)
    assert result.folded == len(folded)
    before = counter.messages(history)
    assert result.saved_tokens == before - counter.messages(result.history)
    assert result.saved_tokens >= 1000


def test_the_latest_step_is_never_folded_whatever_its_size() -> None:
    history = session(4)
    history += step(9, "read_file", {"path": "huge.py"}, big("huge", 5000))
    result = decay(history, counter, keep_recent_tokens=0, min_savings_tokens=0)
    assert result.history[-1] is history[-1]
    assert newest_zone_start(history, counter, 0) == len(history) - 2
    assert result.folded == 4


def test_a_digest_names_tool_argument_outcome_size_and_reference() -> None:
    history = session(3)
    result = decay(history, counter, keep_recent_tokens=0, min_savings_tokens=0)
    first = result.history[2]
    assert isinstance(first, ToolMessage)
    assert first.content.startswith(DIGEST_MARKER)
    assert 'read_file(path="src/m0.py")' in first.content
    assert "-> ok" in first.content
    assert "300 lines" in first.content
    assert NO_REFERENCE in first.content
    assert "\n" not in first.content


def test_bash_outcome_is_the_exit_code_and_errors_show_their_first_line() -> None:
    history: list[Message] = [UserMessage(content="run tests")]
    history += step(0, "bash", {"command": "pytest -q"}, big("FAILED test_x") + "\nexit code 1", is_error=True)
    history += step(1, "grep", {"pattern": "foo", "path": "src"}, "Error: bad regex\n" + big("x"), is_error=True)
    history += [AssistantMessage(content=f"step {i}") for i in range(5)]
    result = decay(history, counter, keep_recent_tokens=0, min_savings_tokens=0)
    bash, grep = result.history[2], result.history[4]
    assert "bash(command=\"pytest -q\") -> exit code 1" in bash.content
    assert 'grep(pattern="foo", path="src") -> error: Error: bad regex' in grep.content


def test_offloaded_previews_fold_to_their_offload_file(project: Path) -> None:
    content = big("log", 3000)
    off = offload(project, "c0", "bash", content, counter.text, 2000, 40)
    assert off is not None
    history: list[Message] = [UserMessage(content="go")]
    history += step(0, "bash", {"command": "make"}, off.content + "\nexit code 0")
    history += [AssistantMessage(content=f"step {i}") for i in range(5)]
    result = decay(history, counter, keep_recent_tokens=0, min_savings_tokens=0)
    digest = result.history[2].content
    assert f"`{off.path}`" in digest
    assert "3,000 lines" in digest and f"{off.tokens:,} tokens" in digest  # the full output's size
    assert "exit code 0" in digest


def test_policies_keep_edits_longer_and_never_fold_kept_tools() -> None:
    assert TODO_FACTS.fold_after is None  # the todo tool says so itself (and is declared by importing it)
    history: list[Message] = [UserMessage(content="edit")]
    history += step(0, "edit_file", {"path": "a.py"}, big("diff"))
    history += step(1, "todo", {"items": "x"}, big("todo"))
    history += step(2, "list_files", {"path": "."}, big("listing"))
    for n in range(3, 8):
        history += step(n, "read_file", {"path": f"f{n}.py"}, "tiny")
    result = decay(history, counter, keep_recent_tokens=0, min_savings_tokens=0)
    by_name = {m.name: m for m in result.history if isinstance(m, ToolMessage)}
    assert is_digest(by_name["list_files"])
    assert not is_digest(by_name["edit_file"])  # age 7 < 20
    assert not is_digest(by_name["todo"])
    assert by_name["read_file"].content == "tiny"  # too small to be worth folding
    custom = {"edit_file": DecayPolicy(min_age=3), "list_files": DecayPolicy(keep=True)}  # the rest: their own
    result = decay(history, counter, keep_recent_tokens=0, min_savings_tokens=0, policies=custom)
    by_name = {m.name: m for m in result.history if isinstance(m, ToolMessage)}
    assert is_digest(by_name["edit_file"]) and not is_digest(by_name["list_files"])


def test_unknown_tools_use_the_star_policy() -> None:
    history: list[Message] = [UserMessage(content="x")]
    history += step(0, "mcp_search", {"query": "q"}, big("hits"))
    history += [AssistantMessage(content=f"s{i}") for i in range(2)]
    assert not decay(history, counter, 0, 0).changed  # age 2 < 4
    history += [AssistantMessage(content=f"t{i}") for i in range(2)]
    assert decay(history, counter, 0, 0).changed


def test_digests_are_never_digested_again() -> None:
    history = session(6)
    once = decay(history, counter, keep_recent_tokens=0, min_savings_tokens=0)
    assert once.changed
    twice = decay(once.history, counter, keep_recent_tokens=0, min_savings_tokens=0)
    assert twice.history is once.history and not twice.changed and twice.pending_tokens == 0


def test_reference_for_is_called_only_for_folded_results() -> None:
    history = session(6)
    calls: list[str] = []

    def reference(msg: ToolMessage) -> str:
        calls.append(msg.tool_call_id)
        return f"archive/{msg.tool_call_id}.txt"

    decay(history, counter, 0, min_savings_tokens=10**9, reference_for=reference)
    assert calls == []
    result = decay(history, counter, 0, min_savings_tokens=0, reference_for=reference)
    assert calls == [f"c{n}" for n in range(5)]  # c5 is the latest step: verbatim
    assert "`archive/c0.txt` (read_file with offset/limit" in result.history[2].content


def test_saving_reference_makes_folded_outputs_readable(project: Path) -> None:
    history = session(4)
    result = decay(history, counter, 0, 0, reference_for=saving_reference(project))
    digest = result.history[2].content
    path = digest.split("`")[1]
    assert path.startswith(".swecli/tool_results/")
    original = history[2]
    assert isinstance(original, ToolMessage)
    assert (project / path).read_text() == original.content
    call = ToolCall(id="r", name="read_file", arguments=json.dumps({"path": path, "offset": 100, "limit": 1}))
    page = default_registry().run(call, ToolContext(root=project)).content
    assert page.startswith("   100\tm0 line 99:")


# --- properties over random histories ------------------------------------------------------------

TOOLS = ("read_file", "grep", "list_files", "bash", "edit_file", "write_file", "todo", "other")


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    history: list[Message] = []
    n = 0
    for _turn in range(draw(st.integers(1, 4))):
        history.append(UserMessage(content=draw(st.sampled_from(["go", "fix it", "next"]))))
        for _ in range(draw(st.integers(0, 8))):
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                calls.append(ToolCall(id=f"c{n}", name=draw(st.sampled_from(TOOLS)),
                                      arguments=json.dumps({"path": f"f{n}"})))
                n += 1
            history.append(AssistantMessage(content="", tool_calls=tuple(calls)))
            for call in calls:
                size = draw(st.sampled_from([1, 5, 60, 400]))
                history.append(ToolMessage(tool_call_id=call.id, name=call.name, content=big(call.id, size),
                                           is_error=draw(st.booleans())))
        history.append(AssistantMessage(content="done"))
    return history


@settings(max_examples=60, deadline=None)
@given(histories(), st.integers(0, 20_000), st.integers(0, 30_000))
def test_decay_invariants(history: list[Message], keep: int, threshold: int) -> None:
    result = decay(history, counter, keep, threshold)
    if not result.changed:
        assert result.history is history and result.saved_tokens == 0
        return
    assert_same_shape(history, result.history)
    assert result.saved_tokens >= threshold
    zone = newest_zone_start(history, counter, keep)
    assert all(a is b for a, b in zip(result.history[zone:], history[zone:], strict=True))
    last_call = max(i for i, m in enumerate(history) if isinstance(m, AssistantMessage))
    assert zone <= last_call
    changed = [i for i, (a, b) in enumerate(zip(history, result.history, strict=True)) if a is not b]
    assert len(changed) == result.folded and all(i < zone for i in changed)
    folded = [result.history[i] for i in changed]
    assert all(isinstance(m, ToolMessage) and is_digest(m) for m in folded)


# --- a loop over real sessions --------------------------------------------------------------------

@pytest.mark.skipif(not TRAJECTORIES.is_dir(), reason="../shared/trajectories not present")
@pytest.mark.parametrize("path", trajectory_paths(), ids=lambda p: p.name[:12])
def test_a_loop_over_a_real_session_decays_in_rare_batches_and_keeps_the_prefix(path: Path) -> None:
    """Each step appends the real messages, decays like the loop would, and sends a request: the
    prefix monitor sees only appends between decay events, and events stay rare. Decayed as the loop
    does (`Mechanisms.decay`): one `DecayScan` and one `Ledger` for the session, each step reading only
    what was appended (a fresh `decay` of the whole history per step, the same decisions as the
    incremental-scan test below shows, made this test quadratic: ~1 s of CPU per session)."""
    source = load_trajectory(path)[2]
    monitor = PrefixMonitor(counter)
    scan, ledger = DecayScan(counter), Ledger(counter.message)
    history: list[Message] = []
    events = saved = 0
    for message in source:
        if isinstance(message, AssistantMessage) and history:  # the loop asks the model: prepare, request
            result = scan.run(history, ledger.sync(history), keep_recent_tokens=8_000, min_savings_tokens=10_000)
            if result.changed:
                assert_same_shape(history, result.history)
                monitor.mark_rewrite("decay")
                history, events, saved = list(result.history), events + 1, saved + result.saved_tokens
            report = monitor.observe(ModelRequest(system=(), messages=tuple(history)))
            assert not report.warning, report.warning
        history.append(message)
    assert events <= saved // 10_000
    assert monitor.stats.breaks == events
    total = counter.messages(source)
    if total > 40_000:  # long sessions: decay must have acted
        assert events > 0


# --- the incremental scan -------------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(histories(), st.integers(0, 6_000), st.sampled_from([0, 300, 2_000]))
def test_the_loops_incremental_scan_decides_exactly_what_reading_the_whole_history_decides(
        history: list[Message], keep: int, threshold: int) -> None:
    """Grown message by message, folding when it decides to (as the loop does), the scan that reads only
    new messages agrees with a fresh `decay` of the whole history at every step."""
    scan, ledger = DecayScan(counter), Ledger(counter.message)
    live: list[Message] = []
    for message in history:
        live.append(message)
        fresh = decay(live, counter, keep, threshold)
        result = scan.run(live, ledger.sync(live), keep, threshold)
        assert (result.folded, result.saved_tokens, result.pending_tokens) == \
            (fresh.folded, fresh.saved_tokens, fresh.pending_tokens)
        assert [m.content for m in result.history] == [m.content for m in fresh.history]
        if result.changed:
            live = list(result.history)


def test_a_result_too_young_for_its_policy_folds_once_it_is_old_enough() -> None:
    """A bash output lives 4 steps: the scan keeps it waiting, then counts it without rereading."""
    scan, ledger = DecayScan(counter), Ledger(counter.message)
    live: list[Message] = [UserMessage(content="run the tests"), *step(0, "bash", {"command": "pytest"}, big("t"))]
    seen = []
    for n in range(1, 6):
        live += step(n, "read_file", {"path": f"f{n}.py"}, "small")
        seen.append(scan.run(live, ledger.sync(live), 0, 10**9).pending_tokens)
    assert seen[:3] == [0, 0, 0] and seen[3] == seen[4] > 0
def thinking_session(steps: int) -> list[Message]:
    history: list[Message] = [UserMessage(content="fix the bug")]
    for n in range(steps):
        call = ToolCall(id=f"c{n}", name="todo", arguments="{}")  # a kept tool: only thinking can fold
        history += [AssistantMessage(content="", reasoning=f"thought {n}", tool_calls=(call,),
                                     thinking=(ThinkingBlock(text=big(f"t{n}", 40), signature=f"s{n}"),)),
                    ToolMessage(tool_call_id=call.id, name="todo", content="ok")]
    return history


def test_old_thinking_blocks_are_dropped_in_the_batch_and_the_newest_zone_keeps_them() -> None:
    history = thinking_session(12)
    result = decay(history, counter, keep_recent_tokens=1_500, min_savings_tokens=1_000)
    assert result.changed and result.saved_tokens > 1_000
    zone = newest_zone_start(history, counter, 1_500)
    for old, new in zip(history, result.history, strict=True):
        if isinstance(old, AssistantMessage):
            assert isinstance(new, AssistantMessage)
            assert new.tool_calls == old.tool_calls and new.reasoning == old.reasoning  # only thinking goes
            kept = history.index(old) >= zone
            assert new.thinking == (old.thinking if kept else ())
    assert any(isinstance(m, AssistantMessage) and m.thinking for m in result.history)  # the newest keep theirs
    assert counter.messages(result.history) == counter.messages(history) - result.saved_tokens


def test_thinking_below_the_batch_threshold_is_left_alone() -> None:
    history = thinking_session(4)
    result = decay(history, counter, keep_recent_tokens=500, min_savings_tokens=1_000_000)
    assert result.history is history and result.pending_tokens > 0


def test_the_incremental_scan_drops_old_thinking_exactly_when_a_fresh_decay_does() -> None:
    scan, ledger = DecayScan(counter), Ledger(counter.message)
    live: list[Message] = []
    batches = 0
    for message in thinking_session(14):
        live.append(message)
        fresh = decay(live, counter, 1_500, 1_000)
        result = scan.run(live, ledger.sync(live), 1_500, 1_000)
        assert (result.folded, result.saved_tokens, result.pending_tokens) == \
            (fresh.folded, fresh.saved_tokens, fresh.pending_tokens)
        assert result.history == fresh.history
        if result.changed:
            batches += 1
            live = list(result.history)
    assert batches >= 1


# --- folding for room, at once (the compaction that needs no model call) ------------------------------

def test_folding_for_room_folds_every_tool_but_the_kept_ones_and_leaves_the_newest_zone(tmp_path: Path) -> None:
    from swecli.context.decay import fold_older, room_policy

    history: list[Message] = [UserMessage(content="fix the bug")]
    for n, tool in enumerate(["edit_file"] * 3 + ["todo"] * 3 + ["read_file"] * 2):
        history += step(n, tool, {"path": f"src/m{n}.py"}, big(f"m{n}"))
    ledger = Ledger(counter.message).sync(history)
    result = fold_older(history, ledger, DecayScan(counter, default=room_policy), 1_500, saving_reference(tmp_path))
    assert_same_shape(history, result.history)
    folded = [m.tool_call_id for m in result.history if isinstance(m, ToolMessage) and is_digest(m)]
    assert folded == ["c0", "c1", "c2", "c6"]  # edits too, however young; todo results never; the newest stays
    assert decay(history, counter, 1_500, 0).folded == 1  # decay's own policies: only the read is old enough


def test_folding_for_room_goes_deeper_until_it_saves_what_is_needed_and_writes_only_what_it_folds(
        tmp_path: Path) -> None:
    from swecli.context.decay import fold_older, room_policy

    history = session(12)
    ledger = Ledger(counter.message).sync(history)
    scan = DecayScan(counter, default=room_policy)
    shallow = scan.saving(ledger, 8_000)
    assert shallow > 0 and not (tmp_path / ".swecli").exists()  # estimating writes nothing
    result = fold_older(history, ledger, scan, 8_000, saving_reference(tmp_path), needed=shallow + 1_000)
    assert result.saved_tokens >= shallow + 1_000 and not is_digest(result.history[-1])
    saved = list((tmp_path / ".swecli" / "tool_results").glob("*.txt"))
    assert len(saved) == result.folded
