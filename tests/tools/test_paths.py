"""Confinement: file tools only ever touch paths that really live inside the project root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swecli.tools.base import ToolError
from swecli.tools.paths import display_path, resolve_in_root


def test_relative_paths_resolve_inside_the_root(project: Path) -> None:
    (project / "src").mkdir()
    assert resolve_in_root(project, "src/a.py") == (project / "src" / "a.py").resolve()
    assert resolve_in_root(project, ".") == project.resolve()
    assert resolve_in_root(project, "src/../b.py") == (project / "b.py").resolve()


def test_absolute_paths_inside_the_root_are_accepted(project: Path) -> None:
    inside = project / "pkg" / "mod.py"
    assert resolve_in_root(project, str(inside)) == inside.resolve()


@pytest.mark.parametrize("path", ["../x", "../../etc/passwd", "/etc/passwd", "src/../../x", "~/secrets"])
def test_paths_outside_the_root_are_refused(project: Path, path: str) -> None:
    with pytest.raises(ToolError, match="is outside the project root"):
        resolve_in_root(project, path)


def test_a_symlink_pointing_outside_is_refused_and_named(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s3cret\n")
    (project / "escape").symlink_to(outside)
    with pytest.raises(ToolError, match="through a symlink") as info:
        resolve_in_root(project, "escape/secret.txt")
    assert "outside the project root" in str(info.value)
    # A new file "through" the link is just as outside as an existing one.
    with pytest.raises(ToolError, match="outside the project root"):
        resolve_in_root(project, "escape/new.txt")


def test_a_dangling_symlink_to_outside_is_refused(project: Path, tmp_path: Path) -> None:
    (project / "dangling").symlink_to(tmp_path / "does-not-exist-yet")
    with pytest.raises(ToolError, match="outside the project root"):
        resolve_in_root(project, "dangling")


def test_a_symlink_inside_the_root_is_followed(project: Path) -> None:
    (project / "real").mkdir()
    (project / "alias").symlink_to(project / "real")
    assert resolve_in_root(project, "alias/f.txt") == (project / "real" / "f.txt").resolve()


def test_a_root_reached_through_a_symlink_still_works(project: Path, tmp_path: Path) -> None:
    link = tmp_path / "link-to-project"
    link.symlink_to(project)
    (project / "a.txt").write_text("a")
    assert resolve_in_root(link, "a.txt") == (project / "a.txt").resolve()
    assert resolve_in_root(link, str(link / "a.txt")) == (project / "a.txt").resolve()


def test_nul_bytes_are_refused(project: Path) -> None:
    with pytest.raises(ToolError, match="NUL"):
        resolve_in_root(project, "a\0b")


def test_display_path_is_relative_posix(project: Path) -> None:
    assert display_path(project, (project / "a" / "b.py").resolve()) == "a/b.py"
    assert display_path(project, project.resolve()) == "."
    assert os.sep not in display_path(project, (project / "x" / "y").resolve()).replace("/", "")


def test_credentials_are_refused_when_the_project_holds_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("KEY\n")
    (home / "link").symlink_to(home / ".ssh" / "id_rsa")
    monkeypatch.setenv("HOME", str(home))
    for path in (".ssh/id_rsa", "link", str(home / ".ssh")):
        with pytest.raises(ToolError, match=r"is in ~/\.ssh, which holds credentials"):
            resolve_in_root(home, path)
    assert resolve_in_root(home, ".bashrc") == (home / ".bashrc").resolve()
