from __future__ import annotations

import pytest

from swecli.config import ConfigError, Settings
from swecli.llm.anthropic import AnthropicProvider
from swecli.llm.base import ModelRequest, ResponseDone
from swecli.llm.factory import make_provider
from swecli.llm.openai import OpenAIProvider
from swecli.messages import UserMessage
from swecli.testing.server import Fail, Reply, ScriptedLLM


def test_wire_follows_the_preset() -> None:
    anthropic = make_provider(Settings(provider="anthropic", model="claude-x", api_key="k"))
    assert isinstance(anthropic, AnthropicProvider) and anthropic.base_url == "https://api.anthropic.com"
    for name in ("openai", "openrouter", "fireworks", "ollama", "lmstudio", "llamacpp", "vllm"):
        provider = make_provider(Settings(provider=name, model="m"))
        assert isinstance(provider, OpenAIProvider) and provider.name == name


def test_bad_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown provider 'nope'"):
        make_provider(Settings(provider="nope", model="m"))
    with pytest.raises(ConfigError, match="needs a model"):
        make_provider(Settings(provider="llamacpp"))
    with pytest.raises(ConfigError, match="needs a base URL"):
        make_provider(Settings(provider="openai-compatible", model="m"))


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_settings_reach_the_provider(wire: str) -> None:
    slept: list[float] = []
    provider_name = "llamacpp" if wire == "openai" else "anthropic"
    with ScriptedLLM([Fail.overloaded(502), Reply("ok")], wire=wire) as llm:  # type: ignore[arg-type]
        settings = Settings(provider=provider_name, model="m", base_url=llm.base_url, max_retries=1,
                            retry_base_delay=0.25)
        provider = make_provider(settings, sleep=slept.append)
        events = list(provider.stream(ModelRequest(system=(), messages=(UserMessage(content="hi"),))))
        provider.close()
    assert isinstance(events[-1], ResponseDone) and events[-1].message.content == "ok"
    assert len(slept) == 1 and 0.125 <= slept[0] <= 0.25  # the first retry waits half to all of the base delay
