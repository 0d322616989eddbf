from __future__ import annotations

from pathlib import Path

import pytest

from swecli.config import ConfigError, load_settings


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_defaults_with_provider_from_flags(project: Path) -> None:
    s = load_settings(project, {"provider": "ollama", "model": "qwen3-coder:30b"}, env={})
    assert s.base_url == "http://127.0.0.1:11434/v1"
    assert s.mode == "default"
    assert s.context.threshold == 0.8
    assert s.context_window == 262_144


def test_layers_in_order(project: Path, tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    write(xdg / "swecli" / "config.toml", 'provider = "openai"\nmodel = "gpt-4o"\nmode = "plan"\n'
                                          "[context]\nthreshold = 0.7\n")
    write(project / ".swecli" / "config.toml", 'model = "gpt-4.1"\n[context]\nkeep_recent_tokens = 5000\n')
    env = {"XDG_CONFIG_HOME": str(xdg), "OPENAI_API_KEY": "sk-test-123456", "SWECLI_MODE": "auto",
           "SWECLI_CONTEXT__THRESHOLD": "0.6"}
    s = load_settings(project, {"mode": None}, env=env, trust_project=True)
    assert (s.provider, s.model, s.mode) == ("openai", "gpt-4.1", "auto")
    assert s.context.threshold == 0.6 and s.context.keep_recent_tokens == 5000
    assert s.api_key == "sk-test-123456"
    s = load_settings(project, {"mode": "default", "model": "gpt-4o"}, env=env, trust_project=True)
    assert (s.mode, s.model) == ("default", "gpt-4o")
    # Untrusted, the project's model (which your key pays for) waits; its context tuning applies.
    s = load_settings(project, {"mode": None}, env=env)
    assert (s.model, s.context.keep_recent_tokens, s.ignored_project_settings) == ("gpt-4o", 5000, ("model",))


def test_context_limit_env_shrinks_window(project: Path) -> None:
    env = {"SWECLI_CONTEXT_LIMIT": "64000", "ANTHROPIC_API_KEY": "x" * 20}
    s = load_settings(project, {"provider": "anthropic"}, env=env)
    assert s.model.startswith("claude") and s.context_window == 64_000


def test_conventional_base_url(project: Path) -> None:
    env = {"OPENAI_API_KEY": "k" * 12, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    assert load_settings(project, {"provider": "openai"}, env=env).base_url == "http://127.0.0.1:9/v1"


def test_unknown_key_names_file_and_key(project: Path) -> None:
    write(project / ".swecli" / "config.toml", "[context]\nthreshhold = 0.5\n")
    with pytest.raises(ConfigError) as err:
        load_settings(project, {}, env={})
    msg = str(err.value)
    assert "config.toml" in msg and "context.threshhold" in msg and "threshold" in msg


def test_wrong_type_names_source_and_env_var(project: Path) -> None:
    write(project / ".swecli" / "config.toml", 'max_iterations = "lots"\n')
    with pytest.raises(ConfigError) as err:
        load_settings(project, {}, env={})
    assert "max_iterations" in str(err.value) and "SWECLI_MAX_ITERATIONS" in str(err.value)
    assert str(project / ".swecli" / "config.toml") in str(err.value)


def test_env_wrong_type(project: Path) -> None:
    with pytest.raises(ConfigError, match=r"environment: 'context\.threshold'"):
        load_settings(project, {}, env={"SWECLI_CONTEXT__THRESHOLD": "high"})


def test_unknown_provider(project: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown provider 'openia'.*openai"):
        load_settings(project, {"provider": "openia"}, env={})


def test_missing_api_key_says_which_variable(project: Path) -> None:
    with pytest.raises(ConfigError, match="FIREWORKS_API_KEY"):
        load_settings(project, {"provider": "fireworks"}, env={})


def test_openai_compatible_needs_base_url(project: Path) -> None:
    with pytest.raises(ConfigError, match="base_url"):
        load_settings(project, {"provider": "openai-compatible"}, env={})
    s = load_settings(project, {"provider": "openai-compatible", "base_url": "http://127.0.0.1:1/v1",
                                "model": "m"}, env={})
    assert s.api_key == "" and s.context_window == 32_768


def test_invalid_toml(project: Path) -> None:
    write(project / ".swecli" / "config.toml", "model = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(project, {}, env={})


def test_a_config_that_leads_to_a_huge_file_is_refused_unread(project: Path, tmp_path: Path) -> None:
    huge = tmp_path / "sparse"
    with huge.open("wb") as handle:
        handle.truncate(1 << 40)  # a terabyte of nothing, on no disk: read whole, it was a MemoryError
    (project / ".swecli").mkdir()
    (project / ".swecli" / "config.toml").symlink_to(huge)
    with pytest.raises(ConfigError, match=r"config\.toml is over 4 MB"):
        load_settings(project, {}, env={})
    (project / ".swecli" / "config.toml").unlink()
    (project / ".swecli" / "config.toml").write_bytes(b"model = '\xff'\n")
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        load_settings(project, {}, env={})


def test_example_config_is_valid(project: Path) -> None:
    example = Path(__file__).resolve().parents[1] / ".swecli.example" / "config.toml"
    write(project / ".swecli" / "config.toml", example.read_text())
    s = load_settings(project, {}, env={"OPENAI_API_KEY": "sk-" + "x" * 20}, trust_project=True)
    assert s.provider


def test_the_warning_level_follows_the_threshold_unless_set(project: Path) -> None:
    write(project / ".swecli" / "config.toml", "[context]\nthreshold = 0.6\n")
    s = load_settings(project, {}, env={})
    assert s.context.warning_threshold is None and s.context.warning_level == 0.5
    write(project / ".swecli" / "config.toml", "[context]\nthreshold = 0.6\nwarning_threshold = 0.3\n")
    assert load_settings(project, {}, env={}).context.warning_level == 0.3


def test_a_warning_level_not_below_the_threshold_is_one_sentence_naming_both(project: Path) -> None:
    write(project / ".swecli" / "config.toml", "[context]\nthreshold = 0.6\nwarning_threshold = 0.7\n")
    with pytest.raises(ConfigError) as err:
        load_settings(project, {}, env={})
    msg = str(err.value)
    assert "config.toml" in msg and "warning_threshold (0.7) must be below threshold (0.6)" in msg
    assert "background_compaction = false" in msg and "\n" not in msg
    write(project / ".swecli" / "config.toml",
          "[context]\nthreshold = 0.6\nwarning_threshold = 0.7\nbackground_compaction = false\n")
    assert not load_settings(project, {}, env={}).context.background_compaction


def test_the_removed_reply_reserve_key_says_what_replaced_it(project: Path) -> None:
    write(project / ".swecli" / "config.toml", "[context]\nreserve_output_tokens = 4000\n")
    with pytest.raises(ConfigError) as err:
        load_settings(project, {}, env={})
    assert "'context.reserve_output_tokens' is no longer a setting" in str(err.value)
    assert "set max_tokens instead" in str(err.value)
def test_mcp_servers_layer_like_every_setting(project: Path, tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    write(xdg / "swecli" / "config.toml", '[mcp.servers.time]\ncommand = "mcp-server-time"\n'
                                          '[mcp.servers.docs]\nurl = "https://example.com/mcp"\n'
                                          'headers = { Authorization = "Bearer t" }\n')
    write(project / ".swecli" / "config.toml", '[mcp]\nschema_budget = 5000\n'
                                               '[mcp.servers.time]\nargs = ["--local-timezone", "UTC"]\n'
                                               '[mcp.servers.docs]\nenabled = false\n')
    s = load_settings(project, {}, env={"XDG_CONFIG_HOME": str(xdg), "SWECLI_MCP__TOOL_TIMEOUT": "30"},
                      trust_project=True)
    time, docs = s.mcp.servers["time"], s.mcp.servers["docs"]
    assert (time.command, time.args, time.enabled, time.always_load) == \
        ("mcp-server-time", ["--local-timezone", "UTC"], True, False)
    assert docs.url == "https://example.com/mcp" and docs.headers == {"Authorization": "Bearer t"} and not docs.enabled
    assert s.mcp.tool_timeout == 30 and s.mcp.budget_tokens(200_000) == 5000
    assert load_settings(tmp_path, {}, env={}).mcp.budget_tokens(200_000) == 20_000  # default: 10% of the window


@pytest.mark.parametrize(("table", "message"), [
    ('[mcp.servers.x]\ncomand = "a"\n',
     "unknown key 'mcp.servers.x.comand' (did you mean 'mcp.servers.x.command'?); remove it or use one of: "
     "always_load"),
    ("[mcp.servers.x]\nargs = []\n", "'mcp.servers.x' is invalid (set either command (a stdio server) or url"),
    ('[mcp.servers.x]\ncommand = "a"\nurl = "https://h/mcp"\n', "not both or neither"),
    ('[mcp.servers.x]\nurl = "ftp://h"\n', "url must start with http:// or https://"),
    ('[mcp.servers."a b"]\ncommand = "a"\n', "server name 'a b' may use only letters"),
    ("[mcp]\nschema_budget = -1\n", "'mcp.schema_budget' is invalid"),
])
def test_bad_mcp_settings_name_file_and_key(project: Path, table: str, message: str) -> None:
    write(project / ".swecli" / "config.toml", table)
    with pytest.raises(ConfigError) as err:
        load_settings(project, {}, env={})
    assert message in str(err.value) and str(project / ".swecli" / "config.toml") in str(err.value)
    assert "SWECLI_MCP__SERVERS" not in str(err.value)  # no environment variable sets a server


def test_a_relative_config_home_is_never_read_as_the_user_s_settings(tmp_path: Path) -> None:
    # a relative $XDG_CONFIG_HOME (or $HOME) names a place in the project: its config.toml would be the user's
    # own, trusted layer, and its trusted.json the trust store
    import os
    import pwd

    from swecli.config import trust_store_path, user_config_path

    home = str(tmp_path)
    assert user_config_path({"XDG_CONFIG_HOME": ".config", "HOME": home}) == tmp_path / ".config/swecli/config.toml"
    account = Path(pwd.getpwuid(os.getuid()).pw_dir)
    assert user_config_path({"HOME": "project"}) == account / ".config/swecli/config.toml"
    assert trust_store_path({"XDG_CONFIG_HOME": "x", "HOME": "y"}).is_absolute()
    assert user_config_path({"XDG_CONFIG_HOME": "/etc/xdg", "HOME": home}) == Path("/etc/xdg/swecli/config.toml")
