from __future__ import annotations

import threading
from pathlib import Path

import pytest

from swecli.config import ConfigError, Settings, load_settings
from swecli.llm.discovery import LocalServer, discover, list_models
from swecli.testing.server import ScriptedLLM, ServerInfo

NOWHERE = [LocalServer("ollama", "http://127.0.0.1:9/v1")]  # port 9 (discard): refused at once


def test_configured_provider_is_kept() -> None:
    settings = Settings(provider="openai", model="gpt-4.1", base_url="https://api.openai.com/v1", api_key="k")
    assert discover(settings, env={"ANTHROPIC_API_KEY": "other"}, local_servers=NOWHERE) == settings


def test_key_order_decides() -> None:
    env = {"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a"}
    found = discover(Settings(), env=env, local_servers=NOWHERE)
    assert (found.provider, found.api_key, found.base_url) == ("anthropic", "sk-a", "https://api.anthropic.com")
    assert found.model == "claude-sonnet-4-5"


def test_openai_key_with_base_url_and_chosen_model() -> None:
    env = {"OPENAI_API_KEY": "sk-o", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
    found = discover(Settings(model="gpt-4o"), env=env, local_servers=NOWHERE)
    assert (found.provider, found.base_url, found.model) == ("openai", "http://127.0.0.1:1/v1", "gpt-4o")


def test_local_server_and_its_model() -> None:
    with ScriptedLLM(model="qwen2.5-coder:7b") as llm:
        base_url = llm.base_url
        found = discover(Settings(), env={}, local_servers=[*NOWHERE, LocalServer("llamacpp", base_url)])
    assert (found.provider, found.base_url, found.model) == ("llamacpp", base_url, "qwen2.5-coder:7b")
    assert found.api_key == ""


def test_nothing_found_explains_how_to_configure() -> None:
    with pytest.raises(ConfigError) as info:
        discover(Settings(), env={}, local_servers=NOWHERE)
    message = str(info.value)
    assert "No LLM provider is configured" in message and "ollama http://127.0.0.1:9/v1" in message
    assert "ANTHROPIC_API_KEY" in message and "--base-url" in message and "config.toml" in message
    assert len(message.splitlines()) <= 8


def test_base_url_alone_means_openai_compatible_and_asks_for_the_model() -> None:
    with ScriptedLLM(model="served-model") as llm:
        found = discover(Settings(base_url=llm.base_url), env={}, local_servers=NOWHERE)
    assert (found.provider, found.model) == ("openai-compatible", "served-model")


def test_configured_local_provider_without_model() -> None:
    with ScriptedLLM(model="llama3.1") as llm:
        found = discover(Settings(provider="ollama", base_url=llm.base_url), env={})
    assert found.model == "llama3.1"
    with pytest.raises(ConfigError, match=r"no model configured.*--model"):
        discover(Settings(provider="ollama", base_url="http://127.0.0.1:9/v1"), env={})


def test_list_models_tolerates_non_servers() -> None:
    assert list_models("http://127.0.0.1:9/v1") is None
    with ScriptedLLM() as llm:
        assert list_models(llm.base_url) == ["scripted-model"]


def test_dummy_key_and_a_local_base_url_use_the_served_model() -> None:
    """OPENAI_API_KEY=dummy + OPENAI_BASE_URL at a local server: its model, not gpt-4.1."""
    with ScriptedLLM(model="qwen2.5-coder:7b") as llm:
        found = discover(Settings(), env={"OPENAI_API_KEY": "dummy", "OPENAI_BASE_URL": llm.base_url},
                         local_servers=NOWHERE)
    assert (found.provider, found.model, found.api_key) == ("openai", "qwen2.5-coder:7b", "dummy")


def test_a_server_that_lists_nothing_keeps_the_presets_model() -> None:
    found = discover(Settings(), env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
                     local_servers=NOWHERE)
    assert found.model == "gpt-4.1"


def test_configured_preset_at_another_url_asks_the_server(project: Path) -> None:
    with ScriptedLLM(model="served") as llm:
        loaded = load_settings(project, {"provider": "openai", "base_url": llm.base_url},
                               env={"OPENAI_API_KEY": "dummy"})
        assert loaded.model == ""
        assert discover(loaded, env={}).model == "served"
    assert load_settings(project, {"provider": "openai"}, env={"OPENAI_API_KEY": "k"}).model == "gpt-4.1"


def test_a_configured_server_slow_to_list_its_models_is_waited_for_and_the_wait_is_said() -> None:
    """A busy llama-server answering `/v1/models` after the quiet wait (2 s by default; 0.1 s here): start-up
    waits (up to request_timeout) and says what for, instead of failing with "named none". The server answers
    once the wait was said (at most 10 s: a start-up that never says it fails on `said`)."""
    said: list[str] = []
    notice_said = threading.Event()

    def say(text: str) -> None:
        said.append(text)
        notice_said.set()

    busy = ServerInfo("llamacpp", window=4096, metadata_delay=10, metadata_gate=notice_said)
    with ScriptedLLM(model="gemma-3-270m", info=busy) as llm:
        found = discover(Settings(base_url=llm.base_url, wait_notice=0.1), env={}, local_servers=NOWHERE,
                         on_wait=say)
        waited_for = f"waiting for {llm.base_url}/models"
    assert found.model == "gemma-3-270m"
    assert len(said) == 1 and waited_for in said[0] and "--model NAME" in said[0]


def test_a_listing_slower_than_request_timeout_fails_with_what_to_do() -> None:
    with ScriptedLLM(info=ServerInfo(metadata_delay=0.8)) as llm, pytest.raises(ConfigError) as info:
        discover(Settings(base_url=llm.base_url, request_timeout=0.2), env={}, local_servers=NOWHERE,
                 on_wait=lambda text: None)
    message = str(info.value)
    assert "did not answer within 0.5 s" in message and "--model NAME" in message and "named none" not in message


def test_an_auto_detected_server_too_busy_to_answer_is_named() -> None:
    with ScriptedLLM(info=ServerInfo(metadata_delay=0.5)) as llm, pytest.raises(ConfigError) as info:
        base_url = llm.base_url
        discover(Settings(), env={}, local_servers=[LocalServer("llamacpp", base_url)], timeout=0.1)
    assert f"llamacpp at {base_url} accepted the connection but did not list its models" in str(info.value)
