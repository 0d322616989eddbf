"""Build the provider for resolved settings (see `discovery.discover` for unresolved ones)."""

from __future__ import annotations

from collections.abc import Callable

from swecli.config import ConfigError, Settings
from swecli.llm.base import Provider
from swecli.llm.retry import RetryNotice
from swecli.models.presets import PRESETS


def make_provider(settings: Settings, *, sleep: Callable[[float], None] | None = None,
                  on_retry: Callable[[RetryNotice], None] | None = None) -> Provider:
    """The provider for `settings.provider`, speaking its preset's wire format.

    `sleep` replaces the retry wait (tests); `on_retry` is told before each retry wait (a front end
    shows "rate limited, retrying in 20s" instead of looking frozen).
    """
    preset = PRESETS.get(settings.provider)
    if preset is None:
        known = ", ".join(PRESETS)
        raise ConfigError(f"unknown provider '{settings.provider}'; use one of: {known} "
                          "(or leave it empty to detect one).")
    if not settings.model:
        raise ConfigError(f"provider '{preset.name}' needs a model; set --model, SWECLI_MODEL or model "
                          "in .swecli/config.toml.")
    base_url = settings.base_url or preset.base_url
    if not base_url:
        raise ConfigError(f"provider '{preset.name}' needs a base URL; set --base-url, SWECLI_BASE_URL or "
                          "base_url in .swecli/config.toml.")
    images = None if settings.images.accept == "auto" else settings.images.accept == "yes"
    if preset.wire == "anthropic":
        from swecli.llm.anthropic import AnthropicProvider

        anthropic = AnthropicProvider(model=settings.model, base_url=base_url, api_key=settings.api_key,
                                      name=preset.name, key_env=preset.key_env, timeout=settings.request_timeout,
                                      max_retries=settings.max_retries, sleep=sleep, on_retry=on_retry,
                                      deadline=settings.request_deadline, retry_base_delay=settings.retry_base_delay)
        anthropic.images = images
        return anthropic
    from swecli.llm.openai import OpenAIProvider

    openai = OpenAIProvider(model=settings.model, base_url=base_url, api_key=settings.api_key, name=preset.name,
                            key_env=preset.key_env, timeout=settings.request_timeout,
                            max_retries=settings.max_retries, sleep=sleep, on_retry=on_retry,
                            deadline=settings.request_deadline, retry_base_delay=settings.retry_base_delay)
    openai.images = images
    return openai
