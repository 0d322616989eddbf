"""Provider presets and the known-models table (context windows)."""

from __future__ import annotations

from typing import Literal

from swecli.records import datarecord

Wire = Literal["openai", "anthropic"]


@datarecord(frozen=True)
class Preset:
    """A provider swecli knows by name: its wire format, URL and key variable."""

    name: str
    wire: Wire
    base_url: str
    key_env: str | None
    """The conventional environment variable holding this provider's key (None: no key needed)."""
    default_model: str = ""


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in [
        Preset("openai", "openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-4.1"),
        Preset("anthropic", "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY", "claude-sonnet-4-5"),
        Preset("fireworks", "openai", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY",
               "accounts/fireworks/models/kimi-k2-instruct"),
        Preset("openrouter", "openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY",
               "anthropic/claude-sonnet-4.5"),
        Preset("ollama", "openai", "http://127.0.0.1:11434/v1", None, ""),
        Preset("lmstudio", "openai", "http://127.0.0.1:1234/v1", None, ""),
        Preset("llamacpp", "openai", "http://127.0.0.1:8080/v1", None, ""),
        Preset("vllm", "openai", "http://127.0.0.1:8000/v1", None, ""),
        Preset("openai-compatible", "openai", "", None, ""),
    ]
}

# Order in which keys found in the environment pick a provider when none is configured.
KEY_ORDER = ["anthropic", "openai", "openrouter", "fireworks"]
LOCAL_ORDER = ["ollama", "lmstudio", "llamacpp"]

DEFAULT_CONTEXT_WINDOW = 32_768
"""Used for models not in the table below: small enough to be safe on most local servers."""

# Prefix match, longest first; the context window the provider enforces for that family.
KNOWN_MODELS: dict[str, int] = {
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude-": 200_000,
    "anthropic/claude": 200_000,
    "deepseek": 128_000,
    "qwen3-coder": 262_144,
    "qwen2.5-coder": 32_768,
    "qwen": 131_072,
    "llama-3": 128_000,
    "llama3": 128_000,
    "kimi-k2": 131_072,
    "glm-4": 131_072,
    "mistral": 32_768,
    "codestral": 256_000,
    "gemma": 131_072,
}


def known_context_window(model: str) -> int | None:
    """The window of the model's family in the table, or None for a model it does not know."""
    name = model.lower().rsplit("/", 1)[-1] if not model.lower().startswith("anthropic/") else model.lower()
    for prefix in sorted(KNOWN_MODELS, key=len, reverse=True):
        if name.startswith(prefix) or f"/{prefix}" in model.lower():
            return KNOWN_MODELS[prefix]
    return None


def context_window(model: str) -> int:
    return known_context_window(model) or DEFAULT_CONTEXT_WINDOW

