"""Control characters made visible: what reaches the model and the terminal is seen, not obeyed."""

from __future__ import annotations

from pathlib import Path

from swecli.tools.visible import invisible, visible, without_colours
from tests.tools.conftest import RunTool


def test_escape_sequences_are_escaped_and_a_commands_colours_dropped() -> None:
    assert visible("\x1b]0;pwned\x07\x1b[2J") == r"\x1b]0;pwned\x07\x1b[2J"
    coloured = "\x1b[1;31mFAILED\x1b[0m test_x\r\n\tdetail\n"
    assert visible(without_colours(coloured)) == "FAILED test_x\n\tdetail\n"
    assert visible(coloured) == "\\x1b[1;31mFAILED\\x1b[0m test_x\n\tdetail\n"  # a file's are kept, escaped
    assert visible("50%\r100%\x08 \x9b6n \x7f") == r"50%\r100%\x08 \x9b6n \x7f"
    assert visible("plain, ünïcode → ok\n") == "plain, ünïcode → ok\n"
    assert visible(visible("\x1b[2J")) == visible("\x1b[2J")  # idempotent: showing twice changes nothing


def test_escapes_turn_back_into_the_characters_they_stand_for() -> None:
    assert invisible(visible("page\x0cbreak\x1b[2J\r")) == "page\x0cbreak\x1b[2J\r"
    assert invisible(r"a literal \x41 stays") == r"a literal \x41 stays"  # not a control character


def test_a_binary_file_through_cat_reaches_the_model_escaped(project: Path, run_tool: RunTool) -> None:
    (project / "blob.bin").write_bytes(b"\x7fELF\x02\x01\x00\x1b[2J\x1b]0;title\x07\x1b[32mrest")
    result = run_tool("bash", command="cat blob.bin")
    assert result.content.startswith(r"\x7fELF\x02\x01\x00\x1b[2J\x1b]0;title\x07rest")
    assert not any(c in result.content for c in "\x00\x1b\x07")


def test_a_line_holding_control_characters_is_edited_as_read_file_showed_it(project: Path,
                                                                            run_tool: RunTool) -> None:
    (project / "old.py").write_bytes(b"x = 1\n\x0c\ndef f():\n    return '\x1b[0m'\n")
    shown = run_tool("read_file", path="old.py").content
    assert "     2\t\\x0c" in shown and "return '\\x1b[0m'" in shown
    edited = run_tool("edit_file", path="old.py", old_string="\\x0c\ndef f():\n    return '\\x1b[0m'",
                      new_string="\\x0c\ndef f():\n    return ''")
    assert not edited.is_error, edited.content
    assert (project / "old.py").read_bytes() == b"x = 1\n\x0c\ndef f():\n    return ''\n"
