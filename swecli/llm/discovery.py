"""Pick a provider when none is configured, and the model a local server serves.

Order: an API key in the environment (`presets.KEY_ORDER`), then a local server on its usual port
(`presets.LOCAL_ORDER`: Ollama 11434, LM Studio 1234, llama.cpp 8080), asked for `GET /v1/models`
with a short timeout; else a `ConfigError` that explains in a few lines how to configure one.

A preset pointed at another server (`OPENAI_API_KEY=dummy OPENAI_BASE_URL=http://127.0.0.1:8080/v1`, the
usual way to reach a local server with tools written for OpenAI) and no model configured does not get
the preset's model (`gpt-4.1`, which that server does not have): the server's `/models` picks it, the
preset's own model when listed, else the first one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from swecli.config import ConfigError, Settings
from swecli.llm.transport import is_loopback_url, ssl_context
from swecli.models.presets import KEY_ORDER, LOCAL_ORDER, PRESETS

PROBE_TIMEOUT = 0.5
_BASE_URL_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}


@dataclass(frozen=True)
class LocalServer:
    provider: str
    base_url: str
    """Where its OpenAI-compatible API lives, e.g. http://127.0.0.1:11434/v1."""


def default_local_servers() -> list[LocalServer]:
    return [LocalServer(name, PRESETS[name].base_url) for name in LOCAL_ORDER]


def discover(settings: Settings, env: Mapping[str, str] | None = None,
             local_servers: Sequence[LocalServer] | None = None, timeout: float = PROBE_TIMEOUT) -> Settings:
    """Settings with provider, base_url, api_key and model resolved; raises ConfigError when impossible."""
    env = os.environ if env is None else env
    if settings.provider:
        return _with_model(settings, timeout)
    if settings.base_url:  # a base URL alone means an OpenAI-compatible server
        return _with_model(settings.model_copy(update={"provider": "openai-compatible"}), timeout)
    for name in KEY_ORDER:
        preset = PRESETS[name]
        key = env.get(preset.key_env or "", "")
        if key:
            base_url = env.get(_BASE_URL_ENV.get(name, ""), "") or preset.base_url
            found = settings.model_copy(update={"provider": name, "api_key": key, "base_url": base_url})
            return found.model_copy(update={"model": settings.model or served_model(found, timeout)})
    notes: list[str] = []
    for server in default_local_servers() if local_servers is None else local_servers:
        models = list_models(server.base_url, settings.api_key, timeout)
        if models is None:
            continue
        if not models and not settings.model:
            notes.append(f"{server.provider} at {server.base_url} is running but serves no model: load one.")
            continue
        return settings.model_copy(update={"provider": server.provider, "base_url": server.base_url,
                                           "model": settings.model or models[0]})
    raise ConfigError(_nothing_found(notes, local_servers))


def list_models(base_url: str, api_key: str = "", timeout: float = PROBE_TIMEOUT) -> list[str] | None:
    """Model ids served at an OpenAI-compatible base URL; None when nothing usable answers there."""
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.get(f"{base_url.rstrip('/')}/models", headers=headers, timeout=timeout,
                             trust_env=not is_loopback_url(base_url), verify=ssl_context())
        if response.status_code != 200:
            return None
        data = response.json().get("data")
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    if not isinstance(data, list):
        return None
    return [str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")]


def _with_model(settings: Settings, timeout: float) -> Settings:
    """A configured OpenAI-compatible server without a model name: use one it serves."""
    preset = PRESETS.get(settings.provider)
    if settings.model or preset is None or preset.wire != "openai" or not settings.base_url:
        return settings
    model = served_model(settings, timeout)
    if not model:
        raise ConfigError(
            f"provider '{settings.provider}' has no model configured and {settings.base_url}/models "
            f"named none; set one with --model, SWECLI_MODEL or model in .swecli/config.toml."
        )
    return settings.model_copy(update={"model": model})


def served_model(settings: Settings, timeout: float = PROBE_TIMEOUT) -> str:
    """The model to use when none is configured: the preset's own at the preset's URL; elsewhere one the
    server lists (the preset's when listed, else the first), or the preset's when the server lists none."""
    preset = PRESETS[settings.provider]
    if preset.wire != "openai" or settings.base_url.rstrip("/") == preset.base_url:
        return preset.default_model
    models = list_models(settings.base_url, settings.api_key, max(timeout, 2.0))
    if not models:
        return preset.default_model
    return preset.default_model if preset.default_model in models else models[0]


def _nothing_found(notes: list[str], local_servers: Sequence[LocalServer] | None) -> str:
    servers = default_local_servers() if local_servers is None else local_servers
    probed = ", ".join(f"{s.provider} {s.base_url}" for s in servers) or "none"
    keys = ", ".join(PRESETS[name].key_env or "" for name in KEY_ORDER)
    lines = [
        "No LLM provider is configured, no API key is set, and no local server answered "
        f"(tried {probed}).",
        *notes,
        "Configure one of these:",
        f"  - set an API key in the environment: {keys}",
        "  - start a local server (Ollama, LM Studio, llama.cpp) on its usual port",
        "  - point at any OpenAI-compatible server: swecli --base-url http://HOST:PORT/v1 --model NAME",
        "  - or set provider, model (and base_url) in .swecli/config.toml or ~/.config/swecli/config.toml",
    ]
    return "\n".join(lines)
