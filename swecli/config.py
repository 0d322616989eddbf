"""Layered, validated configuration.

Precedence, lowest first: defaults < user file (`$XDG_CONFIG_HOME/swecli/config.toml`) < project
file (`.swecli/config.toml`) < environment (`SWECLI_<KEY>`, nested with `__`, plus the conventional
provider variables) < CLI flags. Every setting has one name: the config key, `SWECLI_<KEY>` and
(where it makes sense) `--key`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from swecli.llm.presets import PRESETS, context_window

Mode = Literal["default", "auto", "plan"]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class HookConfig(Section):
    pre_compact: str = ""
    """Shell command run before each compaction; gets JSON on stdin, may answer JSON."""
    timeout: float = 30.0


WARNING_MARGIN = 0.1
"""The background summary starts this far (as a fraction of the window) below the compaction threshold."""


class ContextConfig(Section):
    threshold: float = Field(0.8, gt=0.1, le=1.0)
    """Fraction of the window at which auto-compaction fires (a ready background summary is applied then)."""
    warning_threshold: float | None = Field(None, gt=0.0, le=1.0)
    """Fraction of the window at which the older history starts being summarized in the background.
    Unset: 0.1 below `threshold` (0.7 by default)."""
    background_compaction: bool = True
    """Summarize ahead, past `warning_threshold`, while the loop works: compaction then does not stop it."""
    strategy: Literal["summarize", "truncate", "importance"] = "summarize"
    keep_recent_tokens: int | None = Field(None, ge=0)
    """Recent history kept verbatim by compaction (a token budget, not a message count). Unset: a quarter
    of the window, at least 2,000 and at most 40,000 tokens (decay then keeps at most 12,000 verbatim)."""
    auto_compact: bool = True
    offload: bool = True
    offload_threshold_tokens: int = Field(8_000, ge=200)
    offload_preview_lines: int = Field(40, ge=4)
    decay: bool = True
    decay_min_savings_tokens: int = Field(20_000, ge=0)
    recitation: bool = True
    failure_evidence: bool = True
    playbook: bool = True
    just_in_time: bool = True
    just_in_time_tokens: int = Field(4_000, ge=0)
    """Budget for files and symbols a prompt names, attached before the first model call."""

    @model_validator(mode="after")
    def _levels_in_order(self) -> ContextConfig:
        warning = self.warning_threshold
        if self.background_compaction and warning is not None and warning >= self.threshold:
            raise ValueError(f"warning_threshold ({warning:g}) must be below threshold ({self.threshold:g}); "
                             "lower it, or set background_compaction = false")
        return self

    @property
    def warning_level(self) -> float:
        """`warning_threshold`, or its default relative to `threshold`."""
        if self.warning_threshold is not None:
            return self.warning_threshold
        return max(0.05, round(self.threshold - WARNING_MARGIN, 4))


class ToolsConfig(Section):
    bash_timeout: float = Field(120.0, gt=0)
    max_output_chars: int = Field(30_000, ge=1_000)


class MemoryConfig(Section):
    memory_budget_tokens: int = Field(4_000, ge=0)
    """OPENCLI.md / AGENTS.md / CLAUDE.md in the system prompt."""
    notes_budget_tokens: int = Field(1_500, ge=0)
    playbook_budget_tokens: int = Field(1_000, ge=0)
    session_notes: bool = True
    reflect_with_llm: bool = False


class Settings(Section):
    provider: str = ""
    model: str = ""
    base_url: str = ""
    api_key: str = Field("", repr=False)
    context_limit: int | None = Field(None, ge=1024)
    mode: Mode = "default"
    max_iterations: int = Field(200, ge=1)
    max_tokens: int = Field(8_192, ge=16)
    """Output tokens requested per response, and the room every request leaves for the reply (at most a
    quarter of the window; shrunk for a request whose prompt would otherwise not fit with it)."""
    request_timeout: float = Field(600.0, gt=0)
    max_retries: int = Field(5, ge=0)
    context: ContextConfig = Field(default_factory=ContextConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    hooks: HookConfig = Field(default_factory=HookConfig)

    @property
    def context_window(self) -> int:
        return self.context_limit or context_window(self.model)


class ConfigError(Exception):
    """One clear sentence naming the file, the key and the fix."""


def user_config_path(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".config")
    return Path(base) / "swecli" / "config.toml"


def project_config_path(root: Path) -> Path:
    return root / ".swecli" / "config.toml"


def load_settings(
    root: Path, flags: dict[str, Any] | None = None, env: dict[str, str] | None = None
) -> Settings:
    env = dict(os.environ) if env is None else env
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for path in (user_config_path(env), project_config_path(root)):
        layer = _read_toml(path)
        _check_keys(layer, Settings, str(path))
        _merge(merged, layer, sources, str(path))
    env_layer = _env_layer(env)
    _merge(merged, env_layer, sources, "environment")
    _merge(merged, {k: v for k, v in (flags or {}).items() if v is not None}, sources, "command line")
    settings = _validate(merged, sources)
    return _resolve_provider(settings, env, sources)


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib

    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix the syntax at that position.") from None


REMOVED_KEYS = {
    "context.reserve_output_tokens": "it was merged into max_tokens (the reply reserve is the max_tokens every "
                                     "request sends); remove it and set max_tokens instead",
}
"""Keys older versions accepted, with what to do instead."""


def _check_keys(data: dict[str, Any], model: type[BaseModel], where: str, prefix: str = "") -> None:
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None and f"{prefix}{key}" in REMOVED_KEYS:
            raise ConfigError(f"{where}: '{prefix}{key}' is no longer a setting: {REMOVED_KEYS[prefix + key]}.")
        if field is None:
            known = ", ".join(sorted(model.model_fields))
            raise ConfigError(f"{where}: unknown key '{prefix}{key}'; remove it or use one of: {known}.")
        sub = field.annotation
        if isinstance(value, dict) and isinstance(sub, type) and issubclass(sub, BaseModel):
            _check_keys(value, sub, where, f"{prefix}{key}.")


def _merge(into: dict[str, Any], layer: dict[str, Any], sources: dict[str, str], where: str, prefix: str = "") -> None:
    for key, value in layer.items():
        if isinstance(value, dict):
            _merge(into.setdefault(key, {}), value, sources, where, f"{prefix}{key}.")
        else:
            into[key] = value
            sources[f"{prefix}{key}"] = where


def _env_layer(env: dict[str, str]) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    for name, value in env.items():
        if not name.startswith("SWECLI_") or not value:
            continue
        path = name[len("SWECLI_"):].lower().split("__")
        node: Any = Settings
        target = layer
        for i, part in enumerate(path):
            field = node.model_fields.get(part) if isinstance(node, type) and issubclass(node, BaseModel) else None
            if field is None:
                break  # unknown SWECLI_* variables belong to someone else (SWECLI_HOME...): ignore
            if i == len(path) - 1:
                target[part] = value
            else:
                node = field.annotation
                target = target.setdefault(part, {})
    return layer


def _validate(merged: dict[str, Any], sources: dict[str, str]) -> Settings:
    try:
        return Settings.model_validate(merged)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        where = sources.get(key, "configuration")
        if err["type"] == "value_error" and not isinstance(merged.get(key), str | int | float):
            # A section's own check across its keys: its message already names them and the fix.
            where = next((sources[k] for k in sources if k.startswith(key + ".")), where)
            raise ConfigError(f"{where}: in [{key}], {err['ctx']['error']}.") from None
        env_name = "SWECLI_" + key.upper().replace(".", "__")
        raise ConfigError(
            f"{where}: '{key}' is invalid ({err['msg'].lower()}); set it to a valid value "
            f"(config key '{key}', environment variable {env_name})."
        ) from None


def _resolve_provider(settings: Settings, env: dict[str, str], sources: dict[str, str]) -> Settings:
    """Fill base_url and api_key from the preset and the conventional environment variables."""
    if not settings.provider:
        return settings  # auto-detected later (llm.discovery), which may probe local ports
    preset = PRESETS.get(settings.provider)
    if preset is None:
        where = sources.get("provider", "configuration")
        raise ConfigError(
            f"{where}: unknown provider '{settings.provider}'; use one of: {', '.join(PRESETS)} "
            f"(or 'openai-compatible' with base_url)."
        )
    updates: dict[str, Any] = {}
    if not settings.base_url:
        conventional = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}.get(preset.name)
        updates["base_url"] = (conventional and env.get(conventional)) or preset.base_url
    if not settings.api_key and preset.key_env:
        updates["api_key"] = env.get(preset.key_env, "")
    if not settings.model:
        updates["model"] = preset.default_model
    settings = settings.model_copy(update=updates)
    if not settings.base_url:
        raise ConfigError(
            f"provider '{preset.name}' needs a base URL; set base_url in .swecli/config.toml, "
            f"SWECLI_BASE_URL, or pass --base-url."
        )
    if preset.key_env and not settings.api_key:
        raise ConfigError(
            f"provider '{preset.name}' needs an API key; set {preset.key_env} (or SWECLI_API_KEY, "
            f"or api_key in ~/.config/swecli/config.toml)."
        )
    return settings
