from __future__ import annotations

import json
from pathlib import Path

import pytest

from swecli.memory.playbook import (
    PLAYBOOK_FILE,
    Playbook,
    PlaybookError,
    format_playbook,
    section_prefix,
    similarity,
)


def words(text: str) -> int:
    return len(text.split())


def test_add_assigns_section_prefixed_ids_and_persists_across_sessions(project: Path) -> None:
    pb = Playbook.for_project(project)
    a = pb.add("files", "Read a file before editing it.").bullet
    b = pb.add("commands", "Run the tests with `python3 -m pytest -q`.").bullet
    assert (a.id, b.id) == ("fil-00001", "com-00002")
    pb.save()
    again = Playbook.for_project(project)
    assert {x.id: x.content for x in again.bullets.values()} == {a.id: a.content, b.id: b.content}
    assert again.get("fil-00001").section == "files"
    c = again.add("testing", "Check the CI config for the exact test command.").bullet
    assert c.id == "tes-00003"  # the counter survives; ids are never reused
    again.remove(c.id)
    again.save()
    third = Playbook.for_project(project)
    assert third.add("testing", "Something else entirely about fixtures.").bullet.id == "tes-00004"


def test_section_prefix() -> None:
    assert section_prefix("files") == "fil"
    assert section_prefix("Test Strategy") == "tes"
    assert section_prefix("io") == "iox"


def test_near_duplicates_merge_into_the_existing_bullet() -> None:
    pb = Playbook()
    first = pb.add("files", "Read a file before you edit it.").bullet
    change = pb.add("files", "Read the file before you edit it")
    assert change.action == "merged" and change.bullet is first
    assert first.helpful == 1 and len(pb.bullets) == 1
    assert pb.add("files", "Use grep to find where a symbol is defined.").action == "added"
    assert similarity("Read a file before you edit it.", "read a file before you edit it") == 1.0
    assert similarity("Read a file before you edit it.", "Use grep to find a symbol") < 0.5


def test_merge_duplicates_folds_existing_twins() -> None:
    pb = Playbook(merge_threshold=1.1)  # nothing merges while adding
    a = pb.add("files", "Read a file before you edit it.").bullet
    b = pb.add("files", "Read a file before you edit it!").bullet
    pb.tag(b.id, "helpful", 2)
    pb.merge_threshold = 0.8
    changes = pb.merge_duplicates()
    assert [c.detail for c in changes] == [f"absorbed {b.id}"]
    assert list(pb.bullets) == [a.id] and a.helpful == 2


def test_tag_and_remove_with_clear_errors() -> None:
    pb = Playbook()
    bid = pb.add("general", "Prefer small edits.").bullet.id
    pb.tag(bid, "helpful")
    pb.tag(bid, "harmful", 3)
    assert pb.get(bid).score == -2
    with pytest.raises(PlaybookError, match="use 'helpful' or 'harmful'"):
        pb.tag(bid, "great")
    with pytest.raises(PlaybookError, match="no playbook bullet 'gen-99999'"):
        pb.remove("gen-99999")
    with pytest.raises(PlaybookError, match="needs content"):
        pb.add("general", "   ")
    with pytest.raises(PlaybookError, match="needs a section"):
        pb.add("  ", "text")
    with pytest.raises(PlaybookError, match="at most"):
        pb.add("general", "x " * 300)


def test_as_context_orders_by_score_groups_by_section_and_respects_the_budget() -> None:
    pb = Playbook()
    low = pb.add("files", "Use list_files on unfamiliar directories before reading.").bullet
    best = pb.add("testing", "Run pytest -q tests/unit after every edit.").bullet
    mid = pb.add("files", "Open large files with offset and limit.").bullet
    bad = pb.add("commands", "Use python not python3 here.").bullet
    pb.tag(best.id, "helpful", 5)
    pb.tag(mid.id, "helpful", 2)
    pb.tag(bad.id, "harmful", 1)
    text = pb.as_context(1000, words)
    lines = text.splitlines()
    assert lines[0].startswith("## Playbook")
    assert lines[1:] == ["### testing", f"- [{best.id}] {best.content}", "### files",
                         f"- [{mid.id}] {mid.content}", f"- [{low.id}] {low.content}"]
    assert bad.id not in text  # net-harmful advice is not shown
    small = pb.as_context(words(lines[0]) + 1 + 2 + 12, words)
    assert best.id in small and low.id not in small
    assert words(small) <= words(lines[0]) + 1 + 2 + 12 + 5
    assert pb.as_context(3, words) == ""
    assert Playbook().as_context(1000, words) == ""


def test_save_is_atomic_and_leaves_no_temp_files(project: Path) -> None:
    pb = Playbook.for_project(project)
    pb.add("files", "Content with {braces} and $dollars and \"quotes\".")
    pb.save()
    path = project / PLAYBOOK_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["version"] == 1 and data["next_id"] == 2
    assert data["bullets"][0]["content"] == "Content with {braces} and $dollars and \"quotes\"."
    assert set(data["bullets"][0]) == {"id", "section", "content", "helpful", "harmful", "created", "updated"}
    assert sorted(p.name for p in path.parent.iterdir()) == ["playbook.json"]


def test_corrupt_file_is_moved_aside_not_overwritten(project: Path) -> None:
    path = project / PLAYBOOK_FILE
    path.parent.mkdir(parents=True)
    path.write_text("{ not json", encoding="utf-8")
    pb = Playbook.for_project(project)
    assert pb.bullets == {} and "could not be read" in pb.warnings[0]
    aside = [p for p in path.parent.iterdir() if p.name.startswith("playbook.json.corrupt-")]
    assert len(aside) == 1 and aside[0].read_text(encoding="utf-8") == "{ not json"
    pb.add("files", "new")
    pb.save()
    assert json.loads(path.read_text(encoding="utf-8"))["bullets"][0]["content"] == "new"


@pytest.mark.parametrize("payload", [
    {"bullets": [{"id": "x-1", "section": "s"}]},
    {"bullets": [{"id": "x-1", "section": "s", "content": "c", "helpful": "many"}]},
    {"nothing": []},
    [1, 2],
])
def test_wrong_shapes_count_as_corrupt(project: Path, payload: object) -> None:
    path = project / PLAYBOOK_FILE
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(payload), encoding="utf-8")
    assert Playbook.for_project(project).warnings


def test_unreadable_file_is_left_alone_and_not_saved_over(project: Path) -> None:
    path = project / PLAYBOOK_FILE
    path.mkdir(parents=True)  # reading a directory fails like an unreadable file does, even as root
    pb = Playbook.for_project(project)
    assert pb.path is None and "not used or saved" in pb.warnings[0]
    pb.add("files", "x")
    pb.save()
    assert path.is_dir() and list(path.parent.iterdir()) == [path]


def test_save_error_is_clear(project: Path) -> None:
    blocker = project / "file"
    blocker.write_text("", encoding="utf-8")
    pb = Playbook(blocker / "playbook.json")
    pb.add("files", "x")
    with pytest.raises(PlaybookError, match="cannot write"):
        pb.save()


def test_cap_drops_the_worst_bullets() -> None:
    pb = Playbook(max_bullets=3, merge_threshold=1.1)
    ids = [pb.add("general", f"distinct advice number {i} about topic {'abcdefgh'[i]}").bullet.id for i in range(3)]
    pb.tag(ids[0], "harmful")
    pb.add("general", "one more piece of advice")
    assert ids[0] not in pb.bullets and len(pb.bullets) == 3


def test_format_playbook_lists_everything_with_counters(project: Path) -> None:
    pb = Playbook.for_project(project)
    assert "No playbook bullets yet" in format_playbook(pb)
    a = pb.add("files", "Read before edit.").bullet
    b = pb.add("commands", "Use `make test`.").bullet
    pb.tag(b.id, "helpful", 2)
    pb.tag(a.id, "harmful")
    out = format_playbook(pb).splitlines()
    assert out[0].endswith("2 bullets, best first") and str(project / PLAYBOOK_FILE) in out[0]
    assert out[1:] == ["commands", f"  {b.id}  +2/-0  Use `make test`.", "files", f"  {a.id}  +0/-1  Read before edit."]
