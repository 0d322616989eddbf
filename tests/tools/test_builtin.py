"""The default tool set: names, read-only vs mutating, schemas the providers can send."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any, cast

from swecli.tools.builtin import default_registry, default_tools

READ_ONLY = {"list_files", "read_file", "grep"}
MUTATING = {"write_file", "edit_file", "bash"}


def test_the_six_tools_and_who_needs_approval() -> None:
    tools = {tool.name: tool for tool in default_tools()}
    assert set(tools) == READ_ONLY | MUTATING
    assert {name for name, tool in tools.items() if tool.mutating} == MUTATING
    assert all(tools[name].preview is not None for name in MUTATING)


def test_schemas_are_json_objects_with_descriptions() -> None:
    registry = default_registry()
    schemas = registry.schemas()
    assert [s.name for s in schemas] == sorted(READ_ONLY | MUTATING)
    for schema in schemas:
        assert len(schema.description) > 80, schema.name
        params: dict[str, Any] = dict(schema.parameters)
        assert params["type"] == "object"
        assert "title" not in params
        for name, prop in params["properties"].items():
            assert prop.get("description"), f"{schema.name}.{name} has no description"
        json.dumps(params)  # serializable as-is


def test_required_arguments() -> None:
    required = {s.name: set(cast(list[str], s.parameters.get("required", []))) for s in default_registry().schemas()}
    assert required == {
        "bash": {"command"},
        "edit_file": {"path", "old_string", "new_string"},
        "grep": {"pattern"},
        "list_files": set(),
        "read_file": {"path"},
        "write_file": {"path", "content"},
    }


def test_importing_the_tools_stays_light() -> None:
    code = ("import sys, swecli.tools.builtin as b; b.default_registry(); "
            "print(','.join(m for m in ('pathspec', 'httpx', 'tiktoken') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""
