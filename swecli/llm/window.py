"""The context window a server actually runs, asked of the server itself.

A model's name does not say how large a window the server gives it: `llama-server -c 4096` serves a
gemma model with 4,096 tokens although the family supports 131,072. When the user set no
`context_limit`, swecli asks (the first answer wins):

- llama.cpp: `GET {root}/props`, `default_generation_settings.n_ctx` (per slot), else `n_ctx`;
- vLLM, OpenRouter, Groq, Together, Mistral: `GET {base}/models`, the model's `max_model_len`,
  `context_length`, `context_window` or `max_context_length`;
- LM Studio: `GET {root}/api/v0/models`, `loaded_context_length`; for a model not loaded yet, its
  default load size;
- Ollama: `GET {root}/api/ps` (the loaded model's `context_length`), else `POST {root}/api/show`
  (`num_ctx` in its parameters, else Ollama's default).

(`{root}` is the base URL without its `/v1`.) The official OpenAI and Anthropic APIs are not asked: their
model lists carry no window and the known-models table is right for them. Asking is time-boxed
(`PROBE_BUDGET` seconds in all). A server on this machine is asked at every start (a few milliseconds on
loopback), because its window changes whenever it is restarted with another `-c`; a remote one's answer
is cached per base URL and model in `$XDG_CACHE_HOME/swecli/context-windows.json` for a day. A server
that answered every question but reports no window is cached as such (remote: it costs nothing on the
next start); a question that timed out or found no server proves nothing and is never cached as "no
window" (an earlier answer stands in, if the cache holds one).

A window learnt from a server's context-length error (llama-cpp-python reports its window nowhere else)
is cached too (`remember_learnt`, for a day): the next start plans with it instead of the model family's
131,072 and a failed request. llama.cpp's `/props` also says whether the chat template renders tool
schemas (`chat_template_caps.supports_tools`); `ServerWindow.tools` carries it, and a session on a
template without tools says so once (`template_without_tools`) and does not count the schemas. With
`context_limit` set, only a server on this machine is asked, and only llama.cpp's `/props` (for the
template's capabilities: the user's window stands).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swecli.config import ServerWindow, Settings
from swecli.llm.transport import client_tls, is_loopback_url
from swecli.models.presets import PRESETS

if TYPE_CHECKING:
    import httpx

PROBE_BUDGET = 3.0
"""Seconds all the questions to one server may take together."""
LOCAL_TTL = 600.0
"""How long a local server's answer may stand in when asking it again fails (it is asked at every start)."""
REMOTE_TTL = 86_400.0
LEARNT_TTL = 86_400.0
"""A window learnt from a context-length error: there is no cheaper way to learn it again."""
LEARNT_SOURCE = "its context-length error"
DEFAULT_LOAD_CONTEXT = 4_096
"""What Ollama and LM Studio give a model nobody configured (Ollama: on less than 24 GiB of VRAM; set
`OLLAMA_CONTEXT_LENGTH` / `num_ctx` or LM Studio's context length for more)."""
_WINDOW_KEYS = ("max_model_len", "context_length", "context_window", "max_context_length")
_OFFICIAL = {"https://api.openai.com/v1", "https://api.anthropic.com", "https://api.anthropic.com/v1"}

Probe = Callable[["_Asker", str], "tuple[int, str] | None"]


def resolve_window(settings: Settings, cache: WindowCache | None = None, budget: float = PROBE_BUDGET) -> Settings:
    """`settings` planning with the server's own window when it reports one (and the user set none)."""
    if not settings.probe_context_window or not worth_asking(settings):
        return settings
    local = is_loopback_url(settings.base_url)
    if settings.context_limit:  # the user's window stands; a local llama.cpp still says what its template does
        return settings.with_server_window(ask_server(settings, budget, [_llamacpp])[0]) if local else settings
    cache = cache if cache is not None else WindowCache.default()
    if not local:
        hit, window = cache.get(settings.base_url, settings.model)
        if hit:
            return settings.with_server_window(window)
    window, settled = ask_server(settings, budget)
    if window is not None:
        cache.put(settings.base_url, settings.model, window)
        return settings.with_server_window(window)
    _, earlier = cache.get(settings.base_url, settings.model)
    if settled and not (earlier is not None and earlier.learnt):
        cache.put(settings.base_url, settings.model, None)  # it reports none (a learnt window stays)
        earlier = None
    return settings.with_server_window(earlier)


def remember_learnt(settings: Settings, tokens: int, cache: WindowCache | None = None) -> None:
    """Cache the window a server's context-length error named, for the next start (`LEARNT_TTL`)."""
    if not settings.base_url or not settings.model:
        return
    cache = cache if cache is not None else WindowCache.default()
    known = settings.server_window
    cache.put(settings.base_url, settings.model,
              ServerWindow(tokens, LEARNT_SOURCE, settings.base_url, settings.model,
                           tools=known.tools if known is not None else None))


def template_without_tools(window: ServerWindow | None) -> str:
    """What to tell the user when the server's chat template drops the tool schemas ("" when it does not)."""
    if window is None or window.tools is not False:
        return ""
    return ("the server's chat template has no tools section (llama.cpp /props: chat_template_caps.supports_tools "
            "is false), so it leaves swecli's tool schemas out of the prompt: the model cannot call a tool (read, "
            "edit or run anything) and can only answer in text. To fix it, start llama-server with --jinja and a "
            "chat template that supports tools (--chat-template-file FILE.jinja, e.g. one of llama.cpp's "
            "models/templates/), or serve a model whose own template does.")


def worth_asking(settings: Settings) -> bool:
    preset = PRESETS.get(settings.provider)
    base = settings.base_url.rstrip("/")
    return bool(base and settings.model) and preset is not None and preset.wire == "openai" and base not in _OFFICIAL


def probe_window(settings: Settings, budget: float = PROBE_BUDGET) -> ServerWindow | None:
    """Ask the server at `settings.base_url` for the window it runs `settings.model` with."""
    return ask_server(settings, budget)[0]


def ask_server(settings: Settings, budget: float = PROBE_BUDGET,
               probes: list[Probe] | None = None) -> tuple[ServerWindow | None, bool]:
    """(the window, settled): `settled` is False when a question timed out or reached no server, so a
    None proves nothing about the server (it must not be cached as "reports no window")."""
    asker = _Asker(settings.base_url, settings.api_key, time.monotonic() + budget)
    try:
        for probe in probes or _probes_for(settings.provider):
            found = probe(asker, settings.model)
            if found is not None:
                return ServerWindow(found[0], found[1], settings.base_url, settings.model, tools=asker.tools), True
            if asker.out_of_time:
                break
    finally:
        asker.close()
    return None, not asker.unsettled


def _probes_for(provider: str) -> list[Probe]:
    native: dict[str, list[Probe]] = {"llamacpp": [_llamacpp], "lmstudio": [_lmstudio], "ollama": [_ollama]}
    first = native.get(provider, [])
    return first + [p for p in (_model_list, _llamacpp, _lmstudio, _ollama) if p not in first]


# -- the probes: each returns (tokens, where it was read) or None ----------------------------------

def _llamacpp(ask: _Asker, model: str) -> tuple[int, str] | None:
    props = ask.get_json(ask.root + "/props")
    if not isinstance(props, dict):
        return None
    caps = props.get("chat_template_caps")
    if isinstance(caps, dict) and isinstance(caps.get("supports_tools"), bool):
        ask.tools = caps["supports_tools"]
    settings = props.get("default_generation_settings")
    per_slot = settings.get("n_ctx") if isinstance(settings, dict) else None
    for value, where in ((per_slot, "default_generation_settings.n_ctx"), (props.get("n_ctx"), "n_ctx")):
        if (tokens := _tokens(value)) is not None:
            return tokens, f"llama.cpp /props {where}"
    return None


def _model_list(ask: _Asker, model: str) -> tuple[int, str] | None:
    entry = _listed(ask, ask.base + "/models", model)
    if entry is None:
        return None
    for key in _WINDOW_KEYS:
        if (tokens := _tokens(entry.get(key))) is not None:
            return tokens, f"/models {key}"
    return None


def _lmstudio(ask: _Asker, model: str) -> tuple[int, str] | None:
    entry = _listed(ask, ask.root + "/api/v0/models", model)
    if entry is None:
        return None
    if (loaded := _tokens(entry.get("loaded_context_length"))) is not None:
        return loaded, "LM Studio /api/v0/models loaded_context_length"
    most = _tokens(entry.get("max_context_length"))
    if most is None:
        return None
    if entry.get("state") == "loaded":
        return most, "LM Studio /api/v0/models max_context_length"
    return min(most, DEFAULT_LOAD_CONTEXT), "LM Studio's default load size (the model is not loaded yet)"


def _ollama(ask: _Asker, model: str) -> tuple[int, str] | None:
    running = ask.get_json(ask.root + "/api/ps")
    entry = _entry_for(running.get("models") if isinstance(running, dict) else None, model, "name")
    if entry is not None and (running_size := _tokens(entry.get("context_length"))) is not None:
        return running_size, "Ollama /api/ps context_length"
    shown = ask.post_json(ask.root + "/api/show", {"model": model})
    if not isinstance(shown, dict):
        return None
    for line in str(shown.get("parameters") or "").splitlines():
        name, _, value = line.partition(" ")
        if name == "num_ctx" and (configured := _tokens(value.strip())) is not None:
            return configured, "Ollama /api/show num_ctx"
    info = shown.get("model_info")
    trained = [_tokens(v) for k, v in info.items() if k.endswith(".context_length")] if isinstance(info, dict) else []
    most = next((t for t in trained if t is not None), None)
    if most is None:
        return None
    return min(most, DEFAULT_LOAD_CONTEXT), "Ollama's default context (no num_ctx set for the model)"


def _listed(ask: _Asker, url: str, model: str) -> dict[str, Any] | None:
    """`model`'s entry in an OpenAI-style `{"data": [{"id": ...}, ...]}` listing at `url`."""
    listing = ask.get_json(url)
    return _entry_for(listing.get("data") if isinstance(listing, dict) else None, model, "id")


def _entry_for(entries: Any, model: str, key: str) -> dict[str, Any] | None:
    """The list entry for `model` (Ollama's `name:latest` matches `name`); the only entry of a one-model list."""
    if not isinstance(entries, list):
        return None
    dicts = [e for e in entries if isinstance(e, dict)]
    wanted = {model, f"{model}:latest", model.removesuffix(":latest")}
    for entry in dicts:
        if str(entry.get(key) or entry.get("model") or "") in wanted:
            return entry
    return dicts[0] if len(dicts) == 1 else None


def _tokens(value: Any) -> int | None:
    """`value` as a window: a whole number of at least 256 tokens, else None."""
    try:
        tokens = int(str(value))
    except ValueError:
        return None
    return tokens if tokens >= 256 else None


class _Asker:
    """GET/POST JSON with what is left of the time box; any failure is None (the next probe may know)."""

    def __init__(self, base_url: str, api_key: str, until: float) -> None:
        self.base = base_url.rstrip("/")
        self.root = self.base.removesuffix("/v1")
        self.until = until
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client: httpx.Client | None = None
        self.unsettled = False
        """A question went unanswered (a timeout, no server, the budget spent): a None proves nothing."""
        self.tools: bool | None = None
        """llama.cpp's `chat_template_caps.supports_tools`, when `/props` said."""

    @property
    def out_of_time(self) -> bool:
        out = time.monotonic() >= self.until
        self.unsettled = self.unsettled or out
        return out

    def get_json(self, url: str) -> Any:
        return self._send("GET", url, None)

    def post_json(self, url: str, body: dict[str, Any]) -> Any:
        return self._send("POST", url, body)

    def _send(self, method: str, url: str, body: dict[str, Any] | None) -> Any:
        import httpx

        left = self.until - time.monotonic()
        if left <= 0.05:
            self.unsettled = True
            return None
        if self._client is None:
            self._client = httpx.Client(trust_env=not is_loopback_url(self.base), follow_redirects=True,
                                        **client_tls(self.base))
        try:
            response = self._client.request(method, url, json=body, headers=self._headers, timeout=left)
        except httpx.HTTPError:  # timed out, refused, reset: the server did not answer this question
            self.unsettled = True
            return None
        if response.status_code >= 500 or response.status_code in (408, 429):  # busy, loading: ask again later
            self.unsettled = True
        try:
            return response.json() if response.status_code == 200 else None
        except ValueError:
            return None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


class WindowCache:
    """Windows (or "the server reports none") per base URL and model, in one small JSON file."""

    def __init__(self, path: Path | None, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        """None: nothing is kept (no absolute cache home: `sealed.cache_home`)."""
        self.clock = clock

    @classmethod
    def default(cls, env: Mapping[str, str] | None = None) -> WindowCache:
        """In swecli's cache home, never under a relative `$XDG_CACHE_HOME` (the project, where a planted file
        would set the window swecli compacts at)."""
        from swecli.sealed import cache_home

        home = cache_home(env)
        return cls(Path(home) / "context-windows.json" if home is not None else None)

    def get(self, base_url: str, model: str) -> tuple[bool, ServerWindow | None]:
        """(whether a fresh entry exists, the window it holds)."""
        entry = self._read().get(_key(base_url, model))
        if not isinstance(entry, dict) or not isinstance(entry.get("at"), (int, float)):
            return False, None
        source = str(entry.get("source") or "server")
        learnt = source == LEARNT_SOURCE
        ttl = LEARNT_TTL if learnt else LOCAL_TTL if is_loopback_url(base_url) else REMOTE_TTL
        if not 0 <= self.clock() - entry["at"] <= ttl:
            return False, None
        tokens = entry.get("tokens")
        if not isinstance(tokens, int) or tokens <= 0:
            return True, None
        tools = entry.get("tools")
        return True, ServerWindow(tokens, f"{source}, cached", base_url, model,
                                  tools=tools if isinstance(tools, bool) else None, learnt=learnt)

    def put(self, base_url: str, model: str, window: ServerWindow | None) -> None:
        """Remember the answer; a cache that cannot be written only means asking again next time."""
        entries = self._read()
        now = self.clock()
        ttl = max(LOCAL_TTL, REMOTE_TTL, LEARNT_TTL)
        entries = {k: v for k, v in entries.items() if isinstance(v, dict) and now - v.get("at", 0) <= ttl}
        entry: dict[str, Any] = {"tokens": window.tokens if window else 0,
                                 "source": window.source.removesuffix(", cached") if window else "", "at": now}
        if window is not None and window.tools is not None:
            entry["tools"] = window.tools
        entries[_key(base_url, model)] = entry
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            partial = self.path.with_suffix(f".{os.getpid()}.tmp")
            partial.write_text(json.dumps(entries, indent=1, sort_keys=True), encoding="utf-8")
            partial.replace(self.path)
        except OSError:
            return

    def _read(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}


def _key(base_url: str, model: str) -> str:
    return f"{base_url.rstrip('/')} {model}"
