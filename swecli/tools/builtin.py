"""The tools every session starts with."""

from __future__ import annotations

from typing import Any

from swecli.tools.base import Tool, ToolRegistry


def default_tools() -> list[Tool[Any]]:
    """Read-only tools first (list_files, read_file, grep), then the mutating ones (write, edit, bash)."""
    from swecli.tools.bash import BASH
    from swecli.tools.files import EDIT_FILE, LIST_FILES, READ_FILE, WRITE_FILE
    from swecli.tools.grep import GREP

    return [LIST_FILES, READ_FILE, GREP, WRITE_FILE, EDIT_FILE, BASH]


def default_registry() -> ToolRegistry:
    return ToolRegistry(default_tools())
