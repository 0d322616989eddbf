"""Pick a provider when none is configured, and the model a local server serves.

Order: an API key in the environment (`presets.KEY_ORDER`), then a local server on its usual port
(`presets.LOCAL_ORDER`: Ollama 11434, LM Studio 1234, llama.cpp 8080), asked for `GET /v1/models`
with a short timeout; else a `ConfigError` that explains in a few lines how to configure one.

A preset pointed at another server (`OPENAI_API_KEY=dummy OPENAI_BASE_URL=http://127.0.0.1:8080/v1`, the
usual way to reach a local server with tools written for OpenAI) and no model configured does not get
the preset's model (`gpt-4.1`, which that server does not have): the server's `/models` picks it, the
preset's own model when listed, else the first one.

A configured server is waited for: a local server busy with another request on a loaded machine can take
seconds to list its models, and start-up must not fail for that. After `wait_notice` seconds swecli says
what it waits for, and it waits up to `request_timeout` (the silence it accepts from a server anyway);
only then does it give up, with a sentence naming the wait and how to skip it (`--model`). An unconfigured
port probed during auto-detection gets `PROBE_TIMEOUT`; one that accepted the connection but did not
answer in time is named in the "nothing found" message.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence

from swecli.config import ConfigError, Settings
from swecli.llm.transport import client_tls, is_loopback_url
from swecli.models.presets import KEY_ORDER, LOCAL_ORDER, PRESETS
from swecli.records import datarecord

PROBE_TIMEOUT = 0.5
_BASE_URL_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}


@datarecord(frozen=True)
class LocalServer:
    provider: str
    base_url: str
    """Where its OpenAI-compatible API lives, e.g. http://127.0.0.1:11434/v1."""


def default_local_servers() -> list[LocalServer]:
    return [LocalServer(name, PRESETS[name].base_url) for name in LOCAL_ORDER]


@datarecord(frozen=True)
class Listing:
    """What `GET {base}/models` gave: the model ids (None: nothing usable answered), and whether the
    question timed out (a busy server: no answer is not "no models")."""

    models: list[str] | None
    timed_out: bool = False


def discover(settings: Settings, env: Mapping[str, str] | None = None,
             local_servers: Sequence[LocalServer] | None = None, timeout: float = PROBE_TIMEOUT,
             on_wait: Callable[[str], None] | None = None) -> Settings:
    """Settings with provider, base_url, api_key and model resolved; raises ConfigError when impossible.
    `on_wait` hears what swecli waits for when a configured server is slow to list its models (default:
    a line on stderr), after the `wait_notice` setting's seconds."""
    env = os.environ if env is None else env
    waiting = _Waiting(on_wait or _say, settings.wait_notice)
    if settings.provider:
        return _with_model(settings, timeout, waiting)
    if settings.base_url:  # a base URL alone means an OpenAI-compatible server
        return _with_model(settings.model_copy(update={"provider": "openai-compatible"}), timeout, waiting)
    for name in KEY_ORDER:
        preset = PRESETS[name]
        key = env.get(preset.key_env or "", "")
        if key:
            base_url = env.get(_BASE_URL_ENV.get(name, ""), "") or preset.base_url
            found = settings.model_copy(update={"provider": name, "api_key": key, "base_url": base_url})
            return found.model_copy(update={"model": settings.model or served_model(found, timeout, waiting)})
    notes: list[str] = []
    for server in default_local_servers() if local_servers is None else local_servers:
        listing = ask_models(server.base_url, settings.api_key, timeout)
        if listing.timed_out:
            notes.append(f"{server.provider} at {server.base_url} accepted the connection but did not list its models "
                         f"within {timeout:g} s (busy?); to wait for it: swecli --base-url {server.base_url}")
        if listing.models is None:
            continue
        if not listing.models and not settings.model:
            notes.append(f"{server.provider} at {server.base_url} is running but serves no model: load one.")
            continue
        return settings.model_copy(update={"provider": server.provider, "base_url": server.base_url,
                                           "model": settings.model or listing.models[0]})
    raise ConfigError(_nothing_found(notes, local_servers))


def list_models(base_url: str, api_key: str = "", timeout: float = PROBE_TIMEOUT) -> list[str] | None:
    """Model ids served at an OpenAI-compatible base URL; None when nothing usable answers there."""
    return ask_models(base_url, api_key, timeout).models


def ask_models(base_url: str, api_key: str = "", timeout: float = PROBE_TIMEOUT) -> Listing:
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx.Client(trust_env=not is_loopback_url(base_url), **client_tls(base_url)) as client:
            response = client.get(f"{base_url.rstrip('/')}/models", headers=headers, timeout=timeout)
        if response.status_code != 200:
            return Listing(None)
        data = response.json().get("data")
    except httpx.TimeoutException:
        return Listing(None, timed_out=True)
    except (httpx.HTTPError, ValueError, AttributeError):
        return Listing(None)
    if not isinstance(data, list):
        return Listing(None)
    return Listing([str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")])


@datarecord(frozen=True)
class _Waiting:
    """How a slow model listing is announced: `say` after `quiet` seconds (0: before asking)."""

    say: Callable[[str], None]
    quiet: float


def _say(text: str) -> None:
    sys.stderr.write(f"swecli: {text}\n")
    sys.stderr.flush()


def _with_model(settings: Settings, timeout: float, waiting: _Waiting) -> Settings:
    """A configured OpenAI-compatible server without a model name: use one it serves."""
    preset = PRESETS.get(settings.provider)
    if settings.model or preset is None or preset.wire != "openai" or not settings.base_url:
        return settings
    model = served_model(settings, timeout, waiting)
    if not model:
        raise ConfigError(
            f"provider '{settings.provider}' has no model configured and {settings.base_url}/models "
            f"named none; set one with --model, SWECLI_MODEL or model in .swecli/config.toml."
        )
    return settings.model_copy(update={"model": model})


def served_model(settings: Settings, timeout: float = PROBE_TIMEOUT, waiting: _Waiting | None = None) -> str:
    """The model to use when none is configured: the preset's own at the preset's URL; elsewhere one the
    server lists (the preset's when listed, else the first), or the preset's when the server lists none.
    A server slow to answer is waited for (see the module's docstring)."""
    preset = PRESETS[settings.provider]
    if preset.wire != "openai" or (preset.default_model and settings.base_url.rstrip("/") == preset.base_url):
        return preset.default_model
    waiting = waiting or _Waiting(_say, settings.wait_notice)
    models = _patient_listing(settings, waiting, max(timeout, settings.request_timeout))
    if not models:
        return preset.default_model
    return preset.default_model if preset.default_model in models else models[0]


def _patient_listing(settings: Settings, waiting: _Waiting, limit: float) -> list[str] | None:
    """The server's models, waiting up to `limit` seconds; after `waiting.quiet` seconds it says so (with 0,
    before it asks: a note that cannot come after the answer)."""
    url = f"{settings.base_url.rstrip('/')}/models"
    after = f"no answer after {waiting.quiet:g} s: the server may be busy; " if waiting.quiet else ""
    text = (f"waiting for {url} to list the models it serves ({after}swecli waits up to {limit:g} s, "
            "request_timeout; --model NAME skips this question)")
    note = threading.Timer(waiting.quiet, waiting.say, [text])
    note.daemon = True
    if waiting.quiet:
        note.start()
    else:
        waiting.say(text)
    try:
        listing = ask_models(settings.base_url, settings.api_key, limit)
    finally:
        note.cancel()
    if listing.timed_out:
        raise ConfigError(f"{url} did not answer within {limit:g} s (request_timeout): the server is busy or stuck. "
                          "Name the model with --model NAME (or SWECLI_MODEL, or model in .swecli/config.toml) and "
                          "swecli need not ask, or wait for the server and try again.")
    return listing.models


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
