"""swecli's records under .swecli/ are the user's alone: folders 0700, files 0600, shared files untouched."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from swecli.session.private import ensure_private, make_private_dir, open_private, write_private
from swecli.session.store import SessionError, ensure_state_dir


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_new_records_are_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o002)
    try:
        make_private_dir(tmp_path / ".swecli" / "memory" / "notes")
        write_private(tmp_path / ".swecli" / "tool_results" / "a.txt", b"x")
        os.close(open_private(tmp_path / ".swecli" / "logs" / "s.jsonl", "a"))
    finally:
        os.umask(old)
    for folder in (".swecli", ".swecli/memory", ".swecli/memory/notes", ".swecli/tool_results", ".swecli/logs"):
        assert mode(tmp_path / folder) == 0o700, folder
    assert mode(tmp_path / ".swecli/tool_results/a.txt") == 0o600
    assert mode(tmp_path / ".swecli/logs/s.jsonl") == 0o600


def test_an_existing_file_opened_again_is_tightened(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text("old\n")
    path.chmod(0o644)
    os.close(open_private(path, "a"))
    assert mode(path) == 0o600 and path.read_text() == "old\n"


def test_an_earlier_install_is_tightened_at_start_and_shared_files_keep_their_modes(project: Path) -> None:
    dot = project / ".swecli"
    (dot / "sessions" / "sub").mkdir(parents=True)
    (dot / "hooks").mkdir()
    for name, file_mode in {"sessions/a.jsonl": 0o644, "sessions/sub/b.jsonl": 0o664, "history": 0o666,
                            "tool_results.txt": 0o755, "config.toml": 0o644, "hooks/pre.sh": 0o755}.items():
        (dot / name).write_text("x")
        (dot / name).chmod(file_mode)
    (dot / "sessions").chmod(0o755)
    dot.chmod(0o755)
    outside = project.parent / "outside.txt"
    outside.write_text("not a record")
    outside.chmod(0o644)
    (dot / "link").symlink_to(outside)
    ensure_state_dir(project)
    assert mode(dot) == 0o700 and mode(dot / "sessions") == 0o700 and mode(dot / "sessions" / "sub") == 0o700
    assert mode(dot / "sessions/a.jsonl") == 0o600 and mode(dot / "sessions/sub/b.jsonl") == 0o600
    assert mode(dot / "history") == 0o600
    assert mode(dot / "tool_results.txt") == 0o700  # the owner's executable bit stays; nobody else's
    assert mode(dot / "config.toml") == 0o644 and mode(dot / "hooks/pre.sh") == 0o755
    assert mode(outside) == 0o644  # a symlink is never followed
    assert ensure_private(dot) == 0  # nothing left to tighten


def test_links_among_the_records_are_removed_and_their_targets_left_alone(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / ".swecli" / "memory" / "notes").mkdir(parents=True)
    elsewhere.mkdir()
    (elsewhere / "passwd").write_text("root\n")
    (elsewhere / "passwd").chmod(0o644)
    state = project / ".swecli"
    (state / "logs").symlink_to(elsewhere)
    (state / "memory" / "notes" / "old.md").symlink_to(elsewhere / "passwd")
    (state / "skills").symlink_to(elsewhere)  # a shared entry is the project's own: kept
    warnings = ensure_state_dir(project)
    assert [w.split(":")[0] for w in warnings] == [
        f"removed .swecli/logs (a link to {elsewhere})", f"removed .swecli/memory/notes/old.md (a link to "
        f"{elsewhere / 'passwd'})"]
    assert not (state / "logs").exists() and (state / "skills").is_symlink()
    assert mode(elsewhere / "passwd") == 0o644 and sorted(p.name for p in elsewhere.iterdir()) == ["passwd"]
    assert ensure_state_dir(project) == []


def test_a_record_opened_for_writing_is_never_a_link(tmp_path: Path) -> None:
    # e.g. a saved output named after a call id a local server numbers in order (`call_0`), planted as a link
    (tmp_path / "bashrc").write_text("alias ll='ls -l'\n")
    (tmp_path / "tool_results").mkdir()
    (tmp_path / "tool_results" / "call_0.txt").symlink_to(tmp_path / "bashrc")
    with pytest.raises(OSError):
        open_private(tmp_path / "tool_results" / "call_0.txt", "w")
    assert (tmp_path / "bashrc").read_text() == "alias ll='ls -l'\n"


def test_a_state_folder_that_is_a_link_or_a_file_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    elsewhere.chmod(0o755)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / ".swecli").symlink_to(elsewhere)
    with pytest.raises(SessionError, match=r"\.swecli is a symlink \(to .*elsewhere\)"):
        ensure_state_dir(tmp_path / "a")
    assert mode(elsewhere) == 0o755 and list(elsewhere.iterdir()) == []
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / ".swecli").write_text("")
    with pytest.raises(SessionError, match="is not a directory"):
        ensure_state_dir(tmp_path / "b")
