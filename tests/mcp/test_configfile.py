"""`swecli mcp add/remove` edits of .swecli/config.toml: comments survive, the result is validated."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swecli.config import ConfigError, McpServerConfig, load_settings
from swecli.mcp.configfile import McpConfigError, add_server, remove_server

ORIGINAL = """# project settings, kept by hand
model = "gpt-4o"  # the team's model

[context]
threshold = 0.7  # compact early
"""


def validate(root: Path) -> object:
    return lambda: load_settings(root, env=dict(os.environ), resolve_provider=False)


def test_add_writes_the_documented_shape_and_keeps_everything_else(project: Path) -> None:
    path = project / ".swecli" / "config.toml"
    path.parent.mkdir()
    path.write_text(ORIGINAL)
    server = McpServerConfig(command="mcp-server-time", args=["--local-timezone", "UTC"], env={"TZ": "UTC"})
    add_server(project, "time", server, validate(project))  # type: ignore[arg-type]
    text = path.read_text()
    assert text.startswith(ORIGINAL)
    assert text[len(ORIGINAL):] == ('\n[mcp.servers.time]\ncommand = "mcp-server-time"\n'
                                    'args = ["--local-timezone", "UTC"]\nenv = {TZ = "UTC"}\n')
    settings = load_settings(project, env=dict(os.environ), resolve_provider=False, trust_project=True)
    assert settings.mcp.servers["time"] == server and settings.context.threshold == 0.7
    remove_server(project, "time", validate(project))  # type: ignore[arg-type]
    assert path.read_text().rstrip("\n") == ORIGINAL.rstrip("\n")


def test_add_to_a_project_without_config_and_http_servers(project: Path) -> None:
    server = McpServerConfig(url="https://mcp.example.com/mcp", headers={"Authorization": "Bearer t"},
                             always_load=True)
    add_server(project, "docs", server, validate(project))  # type: ignore[arg-type]
    settings = load_settings(project, env=dict(os.environ), resolve_provider=False, trust_project=True)
    assert settings.mcp.servers["docs"] == server


def test_mistakes_are_one_sentence_and_change_nothing(project: Path) -> None:
    server = McpServerConfig(command="x")
    add_server(project, "one", server, validate(project))  # type: ignore[arg-type]
    path = project / ".swecli" / "config.toml"
    before = path.read_text()
    with pytest.raises(McpConfigError, match=r"already in .*remove it first"):
        add_server(project, "one", server, validate(project))  # type: ignore[arg-type]
    with pytest.raises(McpConfigError, match="letters, digits"):
        add_server(project, "two words", server, validate(project))  # type: ignore[arg-type]
    with pytest.raises(McpConfigError, match="no MCP server named 'nope'"):
        remove_server(project, "nope", validate(project))  # type: ignore[arg-type]
    assert path.read_text() == before


def test_an_edit_that_makes_the_settings_invalid_is_rolled_back(project: Path) -> None:
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "swecli" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[mcp.servers.web]\nurl = "https://example.com/mcp"\n')
    with pytest.raises(ConfigError, match=r"'mcp\.servers\.web' is invalid .*either command"):
        add_server(project, "web", McpServerConfig(command="x"), validate(project))  # type: ignore[arg-type]
    assert not (project / ".swecli" / "config.toml").exists()
    with pytest.raises(McpConfigError, match=r"configured in .*config\.toml: edit that file"):
        remove_server(project, "web", validate(project))  # type: ignore[arg-type]
