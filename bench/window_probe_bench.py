"""What asking the server for its context window costs at session start (issue 15).

    python bench/window_probe_bench.py [--runs N]

For each kind of server the scripted server imitates, on loopback: the median time of
`resolve_window` with an empty cache (the questions asked, until one is answered) and with a warm
cache (one small file read), and how many metadata requests the uncached probe sent.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from swecli.config import Settings
from swecli.llm.window import WindowCache, resolve_window
from swecli.testing.server import ScriptedLLM, ServerInfo

CASES = [
    ("llamacpp", ServerInfo("llamacpp", window=4096)),
    ("vllm", ServerInfo("vllm", window=128_000)),
    ("ollama", ServerInfo("ollama", window=8192)),
    ("lmstudio", ServerInfo("lmstudio", window=12_000)),
    ("openai-compatible", ServerInfo("openrouter", window=262_144)),
    ("openai-compatible", ServerInfo("ollama", window=8192)),
    ("openai-compatible", ServerInfo("plain")),
]


def measure(provider: str, info: ServerInfo, runs: int) -> tuple[float, float, int, int]:
    cold: list[float] = []
    warm: list[float] = []
    with ScriptedLLM(model="gemma3-270m", info=info) as llm, tempfile.TemporaryDirectory() as folder:
        settings = Settings(provider=provider, base_url=llm.base_url, model=llm.model)
        for run in range(runs):
            cache = WindowCache(Path(folder) / f"{run}.json")
            before = len(llm.metadata_requests)
            start = time.perf_counter()
            found = resolve_window(settings, cache)
            cold.append(time.perf_counter() - start)
            asked = len(llm.metadata_requests) - before
            start = time.perf_counter()
            resolve_window(settings, cache)
            warm.append(time.perf_counter() - start)
    return statistics.median(cold), statistics.median(warm), asked, found.context_window


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    print(f"| provider | server answers like | window found | requests | uncached | cached |  ({runs} runs, median)")
    print("|---|---|---|---|---|---|")
    for provider, info in CASES:
        cold, warm, asked, window = measure(provider, info, runs)
        print(f"| {provider} | {info.kind} | {window:,} | {asked} | {cold * 1000:.1f} ms | {warm * 1000:.2f} ms |")


if __name__ == "__main__":
    main()
