"""A folder of a checked path swapped for a link to outside before the file tool opens it: what a command running
beside the tool (a sub-agent's bash, looping `mv d d2; ln -s ~ d`) does. Measured before the fix: such a loop put
write_file's content outside the project 9 times and had read_file answer with an outside file 5 times in 10 s.
Here the swap happens at the worst moment, right after the check (`resolve_in_root`), every time."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from swecli.tools import files
from swecli.tools.base import ToolContext, ToolError
from swecli.tools.files import EditFileArgs, ReadFileArgs, WriteFileArgs, edit_file, read_file, write_file


@pytest.fixture
def swapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(project, outside): `project/d` becomes a link to `outside` as soon as a path in it has been checked."""
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "d").mkdir(parents=True)
    outside.mkdir()
    (project / "d" / "notes.txt").write_text("inside\n")
    (outside / "notes.txt").write_text("OUTSIDE secret\n")

    def swap_after(check: Callable[..., Path]) -> Callable[..., Path]:
        def checked(*args: Any) -> Path:
            target = check(*args)
            if (project / "d").is_dir() and not (project / "d").is_symlink():
                os.rename(project / "d", project / "d2")
                (project / "d").symlink_to(outside)
            return target
        return checked

    monkeypatch.setattr(files, "resolve_in_root", swap_after(files.resolve_in_root))
    monkeypatch.setattr(files, "resolve_readable", swap_after(files.resolve_readable))
    return project, outside


@pytest.mark.parametrize("name", ["notes.txt", "new.txt"])
def test_write_file_never_writes_through_a_folder_swapped_after_the_check(swapped: tuple[Path, Path],
                                                                          name: str) -> None:
    project, outside = swapped
    with pytest.raises(ToolError, match="became a symlink"):
        write_file(WriteFileArgs(path=f"d/{name}", content="planted\n"), ToolContext(root=project))
    assert sorted(p.name for p in outside.iterdir()) == ["notes.txt"]
    assert (outside / "notes.txt").read_text() == "OUTSIDE secret\n"


def test_edit_file_neither_reads_nor_writes_through_a_swapped_folder(swapped: tuple[Path, Path]) -> None:
    project, outside = swapped
    with pytest.raises(ToolError, match="became a symlink") as error:
        edit_file(EditFileArgs(path="d/notes.txt", old_string="inside", new_string="planted"),
                  ToolContext(root=project))
    assert "OUTSIDE" not in str(error.value) and (outside / "notes.txt").read_text() == "OUTSIDE secret\n"


def test_read_file_never_reads_through_a_swapped_folder(swapped: tuple[Path, Path]) -> None:
    project, _ = swapped
    with pytest.raises(ToolError, match="became a symlink") as error:
        read_file(ReadFileArgs(path="d/notes.txt"), ToolContext(root=project))
    assert "OUTSIDE" not in str(error.value)


def test_an_image_is_not_read_through_a_swapped_folder(swapped: tuple[Path, Path]) -> None:
    from PIL import Image

    project, outside = swapped
    Image.new("RGB", (4, 4), "red").save(outside / "shot.png")
    Image.new("RGB", (4, 4), "blue").save(project / "d" / "shot.png")
    with pytest.raises(ToolError, match="became a symlink"):
        read_file(ReadFileArgs(path="d/shot.png"), ToolContext(root=project, images=True))
