"""`swecli mcp add/remove` edits of the scopes' files: comments survive, the result is validated, a token
stays out of the project unless the project scope is asked for."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swecli.config import ConfigError, McpServerConfig, load_settings
from swecli.mcp.configfile import McpConfigError, add_server, remove_server, server_scopes

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
    add_server(project, "time", server, validate(project), "project")  # type: ignore[arg-type]
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
    add_server(project, "docs", server, validate(project), "project")  # type: ignore[arg-type]
    settings = load_settings(project, env=dict(os.environ), resolve_provider=False, trust_project=True)
    assert settings.mcp.servers["docs"] == server


def test_the_local_scope_is_private_to_the_user_and_keyed_by_the_project(project: Path, tmp_path: Path) -> None:
    server = McpServerConfig(url="https://mcp.example.com/mcp", headers={"Authorization": "Bearer secret-token"})
    target = add_server(project, "docs", server, validate(project))  # type: ignore[arg-type]
    local = Path(os.environ["XDG_CONFIG_HOME"]) / "swecli" / "local.toml"
    assert (target.scope, target.path) == ("local", local) and not (project / ".swecli").exists()
    assert local.read_text() == (f'[projects."{project.resolve()}".mcp.servers.docs]\nurl = "https://mcp.example.com/mcp"\n'
                                 'headers = {Authorization = "Bearer secret-token"}\n')
    assert local.stat().st_mode & 0o777 == 0o600
    assert load_settings(project, env=dict(os.environ), resolve_provider=False).mcp.servers["docs"] == server
    other = tmp_path / "other"
    other.mkdir()
    assert load_settings(other, env=dict(os.environ), resolve_provider=False).mcp.servers == {}  # this project's only
    assert server_scopes(project) == {"docs": "local"}
    remove_server(project, "docs", validate(project))  # type: ignore[arg-type]
    assert local.read_text() == ""


def test_the_local_layer_overrides_the_project_and_its_mistakes_name_the_file(project: Path) -> None:
    (project / ".swecli").mkdir()
    (project / ".swecli" / "config.toml").write_text("max_iterations = 50\n")
    local = Path(os.environ["XDG_CONFIG_HOME"]) / "swecli" / "local.toml"
    local.parent.mkdir(parents=True)
    local.write_text(f'[projects."{project.resolve()}"]\nmax_iterations = 7\n')
    assert load_settings(project, env=dict(os.environ), resolve_provider=False).max_iterations == 7
    local.write_text(f'[projects."{project.resolve()}"]\nmax_iteration = 7\n')
    with pytest.raises(ConfigError, match=r'local\.toml \[projects\.".*"\]: unknown key .max_iteration. \(did you'):
        load_settings(project, env=dict(os.environ), resolve_provider=False)
    local.write_text("model = 'x'\n")
    with pytest.raises(ConfigError, match=r"local\.toml: unknown key 'model'; this file holds only \[projects"):
        load_settings(project, env=dict(os.environ), resolve_provider=False)


def test_mistakes_are_one_sentence_and_change_nothing(project: Path) -> None:
    server = McpServerConfig(command="x")
    add_server(project, "one", server, validate(project), "project")  # type: ignore[arg-type]
    path = project / ".swecli" / "config.toml"
    before = path.read_text()
    with pytest.raises(McpConfigError, match=r"already configured in .*\(project scope\); remove it first"):
        add_server(project, "one", server, validate(project), "user")  # type: ignore[arg-type]
    with pytest.raises(McpConfigError, match="letters, digits"):
        add_server(project, "two words", server, validate(project))  # type: ignore[arg-type]
    with pytest.raises(McpConfigError, match="no MCP server named 'nope'"):
        remove_server(project, "nope", validate(project))  # type: ignore[arg-type]
    assert path.read_text() == before


def test_an_edit_that_leaves_the_settings_invalid_is_rolled_back(project: Path) -> None:
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "swecli" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[mcp.servers.web]\nurl = "https://example.com/mcp"\n')
    (project / ".swecli").mkdir()
    (project / ".swecli" / "config.toml").write_text("max_iterations = 0\n")
    with pytest.raises(ConfigError, match=r"'max_iterations' is invalid"):
        add_server(project, "time", McpServerConfig(command="x"), validate(project))  # type: ignore[arg-type]
    assert not (user.parent / "local.toml").exists()
    (project / ".swecli" / "config.toml").write_text("")
    target = remove_server(project, "web", validate(project))  # type: ignore[arg-type]
    assert target.scope == "user" and user.read_text() == ""
