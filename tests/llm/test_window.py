"""The server's own context window, asked over real HTTP of a scripted server that answers like each kind."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from swecli.config import ServerWindow, Settings
from swecli.llm.window import REMOTE_TTL, WindowCache, probe_window, remember_learnt, resolve_window, worth_asking
from swecli.testing.server import ScriptedLLM, ServerInfo


def settings_for(llm: ScriptedLLM, provider: str = "openai-compatible", **extra: object) -> Settings:
    return Settings(provider=provider, base_url=llm.base_url, model=llm.model, **extra)  # type: ignore[arg-type]


@pytest.mark.parametrize(("provider", "info", "tokens", "source"), [
    ("llamacpp", ServerInfo("llamacpp", window=4096), 4096, "llama.cpp /props default_generation_settings.n_ctx"),
    ("openai-compatible", ServerInfo("llamacpp", window=4096), 4096, "llama.cpp /props"),
    ("vllm", ServerInfo("vllm", window=128_000), 128_000, "/models max_model_len"),
    ("openai-compatible", ServerInfo("openrouter", window=262_144), 262_144, "/models context_length"),
    ("ollama", ServerInfo("ollama", window=8192), 8192, "Ollama /api/ps context_length"),
    ("ollama", ServerInfo("ollama", loaded=False, num_ctx=16_384), 16_384, "Ollama /api/show num_ctx"),
    ("ollama", ServerInfo("ollama", loaded=False, trained=32_768), 4096, "Ollama's default context"),
    ("openai-compatible", ServerInfo("ollama", window=8192), 8192, "Ollama /api/ps"),
    ("lmstudio", ServerInfo("lmstudio", window=12_000), 12_000, "LM Studio /api/v0/models loaded_context_length"),
    ("lmstudio", ServerInfo("lmstudio", loaded=False, trained=32_768), 4096, "LM Studio's default load size"),
])
def test_each_server_kind_reports_its_window(provider: str, info: ServerInfo, tokens: int, source: str) -> None:
    with ScriptedLLM(model="gemma3-270m", info=info) as llm:
        found = probe_window(settings_for(llm, provider))
    assert found is not None and found.tokens == tokens and found.source.startswith(source)


def test_the_server_beats_the_name_and_the_default(tmp_path: Path) -> None:
    """gemma3-270m on a 4,096-token llama.cpp server was planned as 131,072; a 128,000 vLLM as 32,768."""
    cache = WindowCache(tmp_path / "windows.json")
    with ScriptedLLM(model="gemma3-270m", info=ServerInfo("llamacpp", window=4096)) as llm:
        guessed = settings_for(llm, "llamacpp")
        asked = resolve_window(guessed, cache)
    assert guessed.context_window == 131_072 and guessed.window_source == "known-models table"
    assert asked.context_window == 4096 and asked.window_source.startswith("server (llama.cpp /props")
    with ScriptedLLM(model="my-finetune", info=ServerInfo("vllm", window=128_000)) as llm:
        guessed = settings_for(llm, "vllm")
        asked = resolve_window(guessed, cache)
    assert guessed.context_window == 32_768 and guessed.window_source == "default for unknown models"
    assert asked.context_window == 128_000


def test_the_users_setting_wins_and_only_a_local_llamacpp_is_asked_about_its_template(tmp_path: Path) -> None:
    with ScriptedLLM(info=ServerInfo("llamacpp", window=4096, supports_tools=False)) as llm:
        settings = resolve_window(settings_for(llm, "llamacpp", context_limit=16_000), WindowCache(tmp_path / "w"))
        assert llm.metadata_requests == ["GET /props"]
    assert settings.context_window == 16_000 and settings.window_source == "user setting (context_limit)"
    assert settings.server_window is not None and settings.server_window.tools is False
    with ScriptedLLM(info=ServerInfo("llamacpp", window=4096)) as llm:
        resolve_window(settings_for(llm, "llamacpp", probe_context_window=False), WindowCache(tmp_path / "w"))
        assert llm.metadata_requests == []
    remote = Settings(provider="vllm", base_url="http://10.1.2.3:8000/v1", model="m", context_limit=16_000)
    assert resolve_window(remote, WindowCache(tmp_path / "w")) is remote  # nothing asked (no connection allowed)


def test_official_apis_are_not_asked() -> None:
    assert not worth_asking(Settings(provider="openai", model="gpt-4.1", base_url="https://api.openai.com/v1"))
    assert not worth_asking(Settings(provider="anthropic", model="claude-sonnet-4-5",
                                     base_url="https://api.anthropic.com"))
    assert worth_asking(Settings(provider="openai", model="gpt-4.1", base_url="http://127.0.0.1:8080/v1"))


def test_a_local_server_is_asked_at_every_start_so_a_restart_with_another_c_is_seen(tmp_path: Path) -> None:
    """llama-server restarted with a larger -c: the next start plans with the new window, not a cached one."""
    cache = WindowCache(tmp_path / "cache" / "windows.json")
    with ScriptedLLM(info=ServerInfo("llamacpp", window=4096)) as llm:
        first = resolve_window(settings_for(llm, "llamacpp"), cache)
        llm.info.window = 16_384
        again = resolve_window(settings_for(llm, "llamacpp"), cache)
        assert llm.metadata_requests == ["GET /props", "GET /props"]
    assert first.context_window == 4096 and again.context_window == 16_384
    saved = json.loads((tmp_path / "cache" / "windows.json").read_text())
    assert [entry["tokens"] for entry in saved.values()] == [16_384]


def test_a_remote_servers_answer_is_cached_per_base_url_and_model_for_a_day(tmp_path: Path) -> None:
    now = [1_000_000.0]
    cache = WindowCache(tmp_path / "windows.json", clock=lambda: now[0])
    remote = Settings(provider="vllm", base_url="http://10.1.2.3:8000/v1", model="m")
    cache.put(remote.base_url, remote.model, ServerWindow(65_536, "/models max_model_len", remote.base_url, "m"))
    asked = resolve_window(remote, cache)  # from the cache: the test allows no connection
    assert asked.context_window == 65_536 and asked.window_source == "server (/models max_model_len, cached)"
    assert cache.get(remote.base_url, "other") == (False, None)
    now[0] += REMOTE_TTL + 1
    assert cache.get(remote.base_url, remote.model) == (False, None)


def test_a_server_without_metadata_is_remembered_as_such(tmp_path: Path) -> None:
    """Every question answered, no window: cached as "none" (a remote server is then not asked again)."""
    cache = WindowCache(tmp_path / "windows.json")
    with ScriptedLLM(model="mystery") as llm:
        first = resolve_window(settings_for(llm), cache)
        assert len(llm.metadata_requests) == 5
        assert cache.get(llm.base_url, "mystery") == (True, None)
    assert first.context_window == 32_768 and first.window_source == "default for unknown models"


def test_a_question_that_timed_out_is_not_cached_and_an_earlier_answer_stands_in(tmp_path: Path) -> None:
    """A busy server answering its metadata slower than the time box proves nothing about its window."""
    cache = WindowCache(tmp_path / "windows.json")
    with ScriptedLLM(model="gemma", info=ServerInfo("llamacpp", window=4096, metadata_delay=0.5)) as llm:
        busy = resolve_window(settings_for(llm), cache, budget=0.2)
        assert busy.context_window == 131_072 and cache.get(llm.base_url, "gemma") == (False, None)
        cache.put(llm.base_url, "gemma", ServerWindow(4096, "llama.cpp /props", llm.base_url, "gemma"))
        again = resolve_window(settings_for(llm), cache, budget=0.2)
    assert again.context_window == 4096 and again.window_source == "server (llama.cpp /props, cached)"


def test_a_window_learnt_from_an_overflow_is_used_at_the_next_start(tmp_path: Path) -> None:
    """llama-cpp-python reports no window: the one its context-length error named is remembered, and a
    server that does report one is believed over it."""
    cache = WindowCache(tmp_path / "windows.json")
    with ScriptedLLM(model="gemma3-270m") as llm:  # no metadata, like llama-cpp-python
        remember_learnt(settings_for(llm), 4096, cache)
        start = resolve_window(settings_for(llm), cache)
        assert cache.get(llm.base_url, "gemma3-270m")[1] is not None  # still there after a "reports none" start
    assert start.context_window == 4096 and start.window_source == "server (its context-length error, cached)"
    with ScriptedLLM(model="gemma3-270m", info=ServerInfo("llamacpp", window=8192)) as llm:
        remember_learnt(settings_for(llm), 4096, cache)
        assert resolve_window(settings_for(llm), cache).context_window == 8192


def test_the_chat_templates_tool_support_is_read_and_cached(tmp_path: Path) -> None:
    cache = WindowCache(tmp_path / "windows.json")
    with ScriptedLLM(info=ServerInfo("llamacpp", window=4096, supports_tools=False)) as llm:
        asked = resolve_window(settings_for(llm), cache)
        hit, cached = cache.get(llm.base_url, llm.model)
    assert asked.server_window is not None and asked.server_window.tools is False
    assert hit and cached is not None and cached.tools is False
    with ScriptedLLM(info=ServerInfo("llamacpp", window=4096)) as llm:  # an older llama-server: no caps
        window = probe_window(settings_for(llm))
    assert window is not None and window.tools is None


def test_an_unwritable_cache_only_means_asking_again(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = WindowCache(blocker / "windows.json")
    with ScriptedLLM(info=ServerInfo("vllm", window=65_536)) as llm:
        assert resolve_window(settings_for(llm), cache).context_window == 65_536
        assert resolve_window(settings_for(llm), cache).context_window == 65_536


def test_the_window_follows_the_model() -> None:
    """After /model the old model's server window no longer applies."""
    settings = Settings(provider="llamacpp", base_url="http://127.0.0.1:1/v1", model="gemma3-270m")
    asked = settings.with_server_window(ServerWindow(4096, "llama.cpp /props", settings.base_url, settings.model))
    assert asked.context_window == 4096
    switched = asked.model_copy(update={"model": "qwen3-coder-30b"})
    assert switched.context_window == 262_144 and switched.window_source == "known-models table"


def test_asking_is_time_boxed() -> None:
    """A server that accepts the connection and never answers costs the budget, not a hang."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        base = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        start = time.monotonic()
        found = probe_window(Settings(provider="openai-compatible", base_url=base, model="m"), budget=0.5)
        spent = time.monotonic() - start
    assert found is None
    assert spent < 10  # the budget is 0.5 s; the bound only proves it does not hang


def test_version_asks_no_server(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    with ScriptedLLM(info=ServerInfo("llamacpp", window=4096)) as llm:
        env = {**os.environ, "SWECLI_PROVIDER": "llamacpp", "SWECLI_BASE_URL": llm.base_url}
        out = subprocess.run([sys.executable, "-m", "swecli", "--version"], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and llm.metadata_requests == []


def test_a_local_server_behind_the_openai_variables_end_to_end(project: Path) -> None:
    """`swecli -p` with a dummy key: the server's model is sent and its window planned, and the log says so."""
    import os
    import subprocess
    import sys

    from swecli.testing.server import Reply

    with ScriptedLLM([Reply("hello")], model="gemma3-270m", info=ServerInfo("llamacpp", window=4096)) as llm:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("SWECLI_")},
               "OPENAI_API_KEY": "dummy", "OPENAI_BASE_URL": llm.base_url}
        out = subprocess.run([sys.executable, "-m", "swecli", "-p", "hi"], env=env, cwd=project,
                             capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    assert llm.requests[0]["model"] == "gemma3-270m"
    log = next((project / ".swecli" / "logs").glob("*.jsonl"))
    start = json.loads(log.read_text().splitlines()[0])
    assert start["context_window"] == 4096 and start["window_source"].startswith("server (llama.cpp /props")


def test_the_default_cache_is_never_under_a_relative_cache_home(tmp_path: Path) -> None:
    # a relative $XDG_CACHE_HOME names a place in the project, where a planted file would set the window
    assert WindowCache.default({"XDG_CACHE_HOME": ".cache", "HOME": str(tmp_path)}).path == \
        tmp_path / ".cache" / "swecli" / "context-windows.json"
    nowhere = WindowCache.default({"XDG_CACHE_HOME": ".cache", "HOME": "home"})
    assert nowhere.path is None
    nowhere.put("http://x", "m", None)
    assert nowhere.get("http://x", "m") == (False, None)
