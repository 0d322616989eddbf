"""The digests a fold at the hard limit writes, made ahead on a worker thread (`context/foldahead.py`)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from swecli.context.decay import DecayScan, fold_older, is_digest, room_policy, saving_reference
from swecli.context.foldahead import FoldsAhead
from swecli.context.ledger import Ledger
from swecli.context.offload import OFFLOAD_DIR, STAGING_DIR
from swecli.context.tokens import TokenCounter
from swecli.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from swecli.session.secrets import Redactor

counter = TokenCounter()
SECRET = "sk-live-0123456789abcdef"


def session(steps: int) -> list[Message]:
    history: list[Message] = [UserMessage(content="fix the bug")]
    for n in range(steps):
        call = ToolCall(id=f"c{n}", name="read_file", arguments=json.dumps({"path": f"src/m{n}.py"}))
        output = "\n".join(f"m{n} line {i}: text {SECRET if i == 3 else ''}" for i in range(300))
        history += [AssistantMessage(content="", tool_calls=(call,)),
                    ToolMessage(tool_call_id=call.id, name="read_file", content=output)]
    return history


def saved(root: Path) -> dict[str, str]:
    folder = root / OFFLOAD_DIR
    return {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.txt")} if folder.is_dir() else {}


def staged(root: Path) -> list[Path]:
    folder = root / OFFLOAD_DIR / STAGING_DIR
    return list(folder.iterdir()) if folder.is_dir() else []


def made_ahead(history: list[Message], root: Path, keep: int) -> tuple[FoldsAhead, Ledger, DecayScan]:
    """Every output older than `keep` handed to the worker, and the worker finished (as the loop does it,
    a step at a time, with the fold coming later)."""
    ledger = Ledger(counter.message).sync(history)
    scan = DecayScan(counter, default=room_policy)
    scan.saving(ledger, keep)
    ahead = FoldsAhead(counter, root, Redactor([SECRET]))
    assert ahead.submit(scan.candidates(ledger)) == len(scan.candidates(ledger)) > 0
    assert ahead.submit(scan.candidates(ledger)) == 0  # each output is handed over once
    assert ahead._pool is not None
    ahead._pool.submit(lambda: None).result(timeout=30)  # one worker: what was queued before is done
    return ahead, ledger, scan


def test_a_fold_with_digests_made_ahead_is_the_fold_made_on_the_spot_and_saves_only_what_it_folds(
        tmp_path: Path) -> None:
    history = session(12)
    ahead_root, spot_root = tmp_path / "ahead", tmp_path / "spot"
    ahead, ledger, scan = made_ahead(history, ahead_root, 8_000)
    assert not saved(ahead_root) and staged(ahead_root)  # written, but nothing names them yet: not saved

    result = fold_older(history, ledger, scan, 8_000, ahead.reference_for, made=ahead.made)
    assert not staged(ahead_root)  # the fold used every digest made ahead: each staged file was moved in place
    spot_ledger = Ledger(counter.message).sync(history)
    on_the_spot = fold_older(history, spot_ledger, DecayScan(counter, default=room_policy), 8_000,
                             saving_reference(spot_root, Redactor([SECRET])))

    assert [m.content.replace(str(ahead_root), "") for m in result.history] == \
        [m.content.replace(str(spot_root), "") for m in on_the_spot.history]
    assert result.saved_tokens == on_the_spot.saved_tokens and result.folded == on_the_spot.folded > 0
    assert saved(ahead_root) == saved(spot_root) and len(saved(ahead_root)) == result.folded
    assert all(SECRET not in text for text in saved(ahead_root).values())  # masked, as a fold's save is
    assert all(f"`{OFFLOAD_DIR}/{name}`" in " ".join(m.content for m in result.history)
               for name in saved(ahead_root))  # every saved file is named by its digest
    ahead.close()
    assert not staged(ahead_root)


def test_outputs_made_ahead_but_never_folded_leave_nothing_behind(tmp_path: Path) -> None:
    history = session(8)
    ahead, _, _ = made_ahead(history, tmp_path, 2_000)
    assert staged(tmp_path)
    ahead.close()  # the summary came first: no fold
    assert not staged(tmp_path) and not saved(tmp_path)
    assert ahead.submit([]) == 0


def test_a_fold_that_reaches_outputs_not_made_ahead_makes_them_on_the_spot(tmp_path: Path) -> None:
    history = session(12)
    ahead, ledger, scan = made_ahead(history, tmp_path, 8_000)
    ahead.close()  # the worker is stopped: the staged files are gone, and so must be the digests naming them
    result = fold_older(history, ledger, scan, 8_000, ahead.reference_for, made=ahead.made)
    digests = [m for m in result.history if isinstance(m, ToolMessage) and is_digest(m)]
    assert len(digests) == result.folded == len(saved(tmp_path)) > 0
    assert all((tmp_path / OFFLOAD_DIR / name).is_file() for name in saved(tmp_path))


def test_outputs_of_one_call_id_made_ahead_keep_a_file_each(tmp_path: Path) -> None:
    """Some providers reuse call ids: two outputs staged for the same file before either was saved must
    not overwrite each other (the second is saved beside the first, as `save_output` saves it)."""
    history = [m.model_copy(update={"tool_call_id": "same"}) if isinstance(m, ToolMessage) else
               m.model_copy(update={"tool_calls": tuple(c.model_copy(update={"id": "same"}) for c in m.tool_calls)})
               if isinstance(m, AssistantMessage) else m for m in session(12)]
    ahead, ledger, scan = made_ahead(history, tmp_path, 8_000)
    result = fold_older(history, ledger, scan, 8_000, ahead.reference_for, made=ahead.made)
    firsts = {text.splitlines()[0] for text in saved(tmp_path).values()}
    assert result.folded > 1 and len(saved(tmp_path)) == len(firsts) == result.folded
    folded = " ".join(m.content for m in result.history)
    assert all(f"`{OFFLOAD_DIR}/{name}`" in folded for name in saved(tmp_path))
    ahead.close()


def test_the_worker_reads_older_messages_as_a_truncation_would_and_waits_while_the_loop_compacts(
        tmp_path: Path) -> None:
    from swecli.context import diagnostics

    history = session(6)
    ledger = Ledger(counter.message).sync(history)
    scan = DecayScan(counter, default=room_policy)
    scan.saving(ledger, 2_000)
    loop_free = threading.Event()  # the loop is compacting: nothing may run beside it
    ahead = FoldsAhead(counter, tmp_path, Redactor([SECRET]), loop_free)
    candidates = scan.candidates(ledger)
    assert ahead.submit(candidates, history[:1]) == len(candidates) > 0
    assert not ahead.settled(0.2) and not staged(tmp_path)  # held while the loop compacts
    loop_free.set()
    assert ahead.settled(30) and staged(tmp_path)
    misses = diagnostics._scanned.cache_info().misses
    for candidate in candidates:  # what a truncation scans is cached: no new scan
        diagnostics.scan(candidate.message.content)
    assert diagnostics._scanned.cache_info().misses == misses
    ahead.close()
    assert not staged(tmp_path)


def test_closing_while_the_loop_compacts_does_not_wait_for_the_held_worker(tmp_path: Path) -> None:
    history = session(4)
    ledger = Ledger(counter.message).sync(history)
    scan = DecayScan(counter, default=room_policy)
    scan.saving(ledger, 1_000)
    loop_free = threading.Event()  # cleared: the loop is compacting (and closes it from there, a new counter)
    ahead = FoldsAhead(counter, tmp_path, Redactor([SECRET]), loop_free)
    assert ahead.submit(scan.candidates(ledger)) > 0
    closing = threading.Thread(target=ahead.close)
    closing.start()
    closing.join(30)
    assert not closing.is_alive() and not staged(tmp_path) and not saved(tmp_path)
