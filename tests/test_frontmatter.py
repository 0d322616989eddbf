"""Markdown with front matter, and the one loader the skills and agents catalogs share."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from swecli.frontmatter import MAX_BYTES, FrontMatterError, load_named, read_front_matter, read_regular


@dataclass(frozen=True)
class Note:
    name: str
    path: Path | None
    where: str


def parse(path: Path, where: str) -> Note:
    meta, _ = read_front_matter(path)
    return Note(str(meta.get("name") or path.stem), path, where)


def test_read_front_matter_names_what_is_wrong(tmp_path: Path) -> None:
    good = tmp_path / "good.md"
    good.write_text("---\nname: a\n---\nbody\n")
    assert read_front_matter(good) == ({"name": "a"}, "body\n")
    with pytest.raises(FrontMatterError, match=r"cannot read it"):
        read_front_matter(tmp_path / "missing.md")
    (tmp_path / "plain.md").write_text("no front matter\n")
    with pytest.raises(FrontMatterError, match="it has no YAML front matter"):
        read_front_matter(tmp_path / "plain.md")


def test_load_named_keeps_the_first_of_a_name_and_says_why_each_file_was_skipped(tmp_path: Path) -> None:
    for folder, name in (("first", "a"), ("second", "a"), ("second", "b")):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / f"{name}.md").write_text(f"---\nname: {name}\n---\n")
    (tmp_path / "second" / "bad.md").write_text("nothing\n")
    (tmp_path / "linked").symlink_to(tmp_path / "first")
    files = [(p, folder) for folder in ("first", "linked", "second") for p in sorted((tmp_path / folder).glob("*.md"))]
    notes, warnings = load_named(files, parse, "note", known=[Note("b", None, "built in")])
    assert [(n.name, n.where) for n in notes] == [("b", "built in"), ("a", "first")]
    assert warnings == [
        f"note skipped: {tmp_path / 'second' / 'a.md'}: the name 'a' is already taken by {tmp_path / 'first' / 'a.md'}",
        f"note skipped: {tmp_path / 'second' / 'b.md'}: the name 'b' is already taken by the built-in note",
        f"note skipped: {tmp_path / 'second' / 'bad.md'}: it has no YAML front matter (the file must start with a "
        "`---` line)",
    ]


# -- what a hostile repository can ship (docs/security/redteam.md) ------------------------------------------


def test_a_fifo_or_a_link_to_a_device_is_refused_without_waiting(tmp_path: Path) -> None:
    """`.claude/agents/x.md` as a FIFO waited for a writer forever; as a link to /dev/zero it read until
    memory ran out: swecli never started (found by the independent check)."""
    os.mkfifo(tmp_path / "fifo.md")
    (tmp_path / "zero.md").symlink_to("/dev/zero")
    for name in ("fifo.md", "zero.md"):
        with pytest.raises(FrontMatterError, match="not a regular file"):
            read_front_matter(tmp_path / name)


def test_a_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_text("---\nname: a\n---\n" + "x" * MAX_BYTES)
    with pytest.raises(FrontMatterError, match="larger than 1 MB"):
        read_front_matter(big)
    assert read_regular(big, 10) == b"---\nname: a"  # limit + 1 bytes: enough to tell it is over
