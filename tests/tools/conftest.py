"""Shared helpers for the tool tests: a ToolContext on the `project` fixture and a way to call tools
exactly as the agent does (raw JSON arguments through ToolRegistry.run)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from swecli.messages import ToolCall
from swecli.tools.base import ToolContext, ToolResult
from swecli.tools.builtin import default_registry

RunTool = Callable[..., ToolResult]


@pytest.fixture
def ctx(project: Path) -> ToolContext:
    return ToolContext(root=project, bash_timeout=30.0)


@pytest.fixture
def run_tool(ctx: ToolContext) -> RunTool:
    registry = default_registry()

    def run(name: str, raw: str | None = None, /, **args: Any) -> ToolResult:
        arguments = raw if raw is not None else json.dumps(args)
        return registry.run(ToolCall(id="call_1", name=name, arguments=arguments), ctx)

    return run
