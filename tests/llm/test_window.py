"""The server's own context window, asked over real HTTP of a scripted server that answers like each kind."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from swecli.config import ServerWindow, Settings
from swecli.llm.window import LOCAL_TTL, WindowCache, probe_window, resolve_window, worth_asking
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


def test_the_users_setting_wins_and_nothing_is_asked(tmp_path: Path) -> None:
    with ScriptedLLM(info=ServerInfo("llamacpp", window=4096)) as llm:
        settings = resolve_window(settings_for(llm, "llamacpp", context_limit=16_000), WindowCache(tmp_path / "w"))
        assert llm.metadata_requests == []
    assert settings.context_window == 16_000 and settings.window_source == "user setting (context_limit)"
    with ScriptedLLM(info=ServerInfo("llamacpp", window=4096)) as llm:
        resolve_window(settings_for(llm, "llamacpp", probe_context_window=False), WindowCache(tmp_path / "w"))
        assert llm.metadata_requests == []


def test_official_apis_are_not_asked() -> None:
    assert not worth_asking(Settings(provider="openai", model="gpt-4.1", base_url="https://api.openai.com/v1"))
    assert not worth_asking(Settings(provider="anthropic", model="claude-sonnet-4-5",
                                     base_url="https://api.anthropic.com"))
    assert worth_asking(Settings(provider="openai", model="gpt-4.1", base_url="http://127.0.0.1:8080/v1"))


def test_cached_per_base_url_and_model_with_an_expiry(tmp_path: Path) -> None:
    now = [1_000_000.0]
    cache = WindowCache(tmp_path / "cache" / "windows.json", clock=lambda: now[0])
    with ScriptedLLM(info=ServerInfo("llamacpp", window=4096)) as llm:
        first = resolve_window(settings_for(llm, "llamacpp"), cache)
        asked = len(llm.metadata_requests)
        again = resolve_window(settings_for(llm, "llamacpp"), cache)
        assert len(llm.metadata_requests) == asked  # answered from the cache
        other_model = resolve_window(settings_for(llm, "llamacpp").model_copy(update={"model": "other"}), cache)
        assert len(llm.metadata_requests) > asked  # another model is asked about
        now[0] += LOCAL_TTL + 1
        asked = len(llm.metadata_requests)
        resolve_window(settings_for(llm, "llamacpp"), cache)
        assert len(llm.metadata_requests) > asked  # a local server's answer expires
    assert first.context_window == again.context_window == 4096 and again.window_source.endswith("cached)")
    assert other_model.model == "other"
    saved = json.loads((tmp_path / "cache" / "windows.json").read_text())
    assert any(entry["tokens"] == 4096 for entry in saved.values())


def test_a_server_without_metadata_is_remembered_as_such(tmp_path: Path) -> None:
    cache = WindowCache(tmp_path / "windows.json")
    with ScriptedLLM(model="mystery") as llm:
        first = resolve_window(settings_for(llm), cache)
        asked = len(llm.metadata_requests)
        resolve_window(settings_for(llm), cache)
        assert asked > 0 and len(llm.metadata_requests) == asked
    assert first.context_window == 32_768 and first.window_source == "default for unknown models"


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
