"""Context-engine benchmark: per-turn cost on real histories, counting speed, compaction and the budget.

    python bench/context_bench.py [--quick]

1. Per-turn cost on real histories: the 16 agent trajectories in ../shared/trajectories, chained into one
   long session (one task after the other), replayed through the context engine exactly as the loop
   drives it, with every default mechanism on (offload of each tool result, decay, recitation, failure
   evidence, the append-only check). Per model call: prepare + request + the usage report + the
   toolbar's state; the intake of new content (offload, counting the new messages) is timed apart.
   Printed by history size, up to 200k tokens and beyond (a 1M window, so nothing is compacted).
2. The same cost on synthetic histories of 50k/100k/200k tokens (~1k tokens of new content per turn),
   and the cold cost of counting a whole history once (the first turn after a resume).
3. Counting speed: TokenCounter over messages vs raw tiktoken `encode_ordinary` on the same text.
4. Compaction on each real trajectory (a manual /compact at 128k, truncate and a scripted summarizer),
   and the held-out replay: each trajectory replayed at a 32k window with the default settings, every
   request checked: tool calls paired, prompt under the compaction threshold, and prompt + max_tokens
   within the window (summary requests included). The last check must find nothing.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from swecli.config import ContextConfig
from swecli.context.archive import MemoryArchive
from swecli.context.compaction import boundaries
from swecli.context.manager import ContextManager, Limits, Prompt, Wiring
from swecli.context.tokens import TokenCounter, load_encoding
from swecli.events import CompactionDone
from swecli.llm.base import CancelToken, ModelRequest, StreamEvent
from swecli.messages import (
    AssistantMessage,
    Message,
    SystemBlock,
    ToolCall,
    ToolMessage,
    ToolSchema,
    UserMessage,
)
from swecli.testing.model import ScriptedSummarizer
from swecli.testing.replay import check_pairing, engine, held_out_replay, replay_session
from swecli.testing.shared import TRAJECTORIES, load_trajectory, trajectory_paths

REPO = Path(__file__).resolve().parents[1]


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    print(f"\n## {title}\n")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(str(c).rjust(w) for c, w in zip(row, widths, strict=False)) + " |")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


# --- content ----------------------------------------------------------------------------------------

def corpus() -> list[str]:
    """Real text to build histories from: trajectory tool outputs, else this repository's source."""
    texts: list[str] = []
    if TRAJECTORIES.is_dir():
        for path in sorted(TRAJECTORIES.glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            texts += [m["content"] for m in data["messages"] if m["role"] == "tool" and m.get("content")]
    if not texts:
        texts = [p.read_text(encoding="utf-8") for p in sorted((REPO / "swecli").rglob("*.py"))]
    return [t for t in texts if t.strip()]


def synthetic_turns(texts: list[str]) -> Iterator[list[Message]]:
    """Endless tool rounds (assistant call + result) cycling through real outputs."""
    i = 0
    while True:
        text = texts[i % len(texts)]
        call = ToolCall(id=f"call_{i}", name="bash", arguments=json.dumps({"command": f"cat src/file_{i}.py"}))
        yield [AssistantMessage(content="" if i % 3 else f"Looking at file {i}.", tool_calls=(call,)),
               ToolMessage(tool_call_id=call.id, name="bash", content=text)]
        i += 1


def build_history(tokens: int, rounds: Iterator[list[Message]]) -> list[Message]:
    counter = TokenCounter()
    history: list[Message] = [UserMessage(content="Investigate the failing tests and fix them.")]
    total = 0
    while total < tokens:
        for message in next(rounds):
            history.append(message)
            total += counter.message(message)
    return history


SYSTEM = (SystemBlock(text="You are swecli, a coding agent. " * 40, cache=True),)
TOOLS = tuple(ToolSchema(name=f"tool_{i}", description="A tool. " * 20,
                         parameters={"type": "object", "properties": {"path": {"type": "string"}}})
              for i in range(6))


class NeverCalled:
    name, model = "none", "none"

    def stream(self, request: ModelRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        raise AssertionError("no model call expected in the overhead benchmark")

    def close(self) -> None:
        return None


def overhead(sizes: list[int], turns: int) -> None:
    texts = corpus()
    rows = []
    for size in sizes:
        rounds = synthetic_turns(texts)
        history = build_history(size, rounds)
        context = ContextManager(Prompt(SYSTEM, TOOLS), Limits(window=2_000_000))
        start = time.perf_counter()
        state = context.state(history)
        cold = time.perf_counter() - start
        provider = NeverCalled()
        steady, new_only = [], []
        for _ in range(turns):
            new = next(rounds)
            start = time.perf_counter()
            for message in new:
                context.counter.message(message)  # the new content alone
            new_only.append(time.perf_counter() - start)
            history.extend(new)
            start = time.perf_counter()
            history = context.prepare(history, provider)
            request = context.request(history)
            state = context.state(history)
            steady.append(time.perf_counter() - start)
        assert request.messages and state.total > size
        rows.append([f"{size // 1000}k", str(len(history)), f"{state.raw_total:,}", ms(cold),
                     ms(statistics.median(steady)), ms(max(steady)), ms(statistics.median(new_only))])
    table("Per-turn overhead (prepare + request + state), ms",
          ["history", "messages", "tokens", "cold count", "per turn (median)", "per turn (max)",
           "of which new content"], rows)


# --- counting speed ----------------------------------------------------------------------------------

def counting_speed() -> None:
    texts = corpus()
    text = "\n".join(texts)
    mb = len(text.encode("utf-8")) / 1e6
    rows = []
    for name in ("o200k_base", "cl100k_base"):
        encoding = load_encoding(name)
        assert encoding is not None
        start = time.perf_counter()
        raw_tokens = len(encoding.encode_ordinary(text))
        raw = time.perf_counter() - start
        messages = [ToolMessage(tool_call_id=str(i), name="bash", content=t) for i, t in enumerate(texts)]
        counter = TokenCounter(name)
        start = time.perf_counter()
        counted = counter.messages(messages)
        ours = time.perf_counter() - start
        start = time.perf_counter()
        again = counter.messages(messages)
        cached = time.perf_counter() - start
        assert counted == again
        rows.append([name, f"{mb:.1f}", f"{raw_tokens:,}", f"{raw_tokens / raw / 1e6:.2f}M ({mb / raw:.1f} MB/s)",
                     f"{counted:,}", f"{raw_tokens / ours / 1e6:.2f}M ({mb / ours:.1f} MB/s)",
                     f"{ms(cached)} ms for {len(messages)} msgs"])
    table("Counting speed: TokenCounter (per message, with overhead tokens) vs raw tiktoken on the same text",
          ["encoding", "MB", "raw tokens", "raw tiktoken tok/s", "counter tokens", "counter tok/s",
           "recount (cached)"], rows)


# --- trajectories -----------------------------------------------------------------------------------

def chained_trajectories(rounds: int) -> tuple[tuple[SystemBlock, ...], tuple[ToolSchema, ...], list[Message]]:
    """Every trajectory, one task after the other (`rounds` times), as one long session."""
    paths = trajectory_paths()
    system, tools, _ = load_trajectory(paths[0])
    history: list[Message] = []
    for n in range(rounds):
        for i, path in enumerate(paths):
            history += load_trajectory(path, prefix=f"r{n}t{i}_")[2]
    return system, tools, history


BUCKETS = (0, 50_000, 100_000, 150_000, 200_000, 250_000)


def per_turn_real(rounds: int) -> None:
    if not TRAJECTORIES.is_dir():
        print(f"\n(trajectories not found at {TRAJECTORIES}: per-turn replay skipped)")
        return
    system, tools, source = chained_trajectories(rounds)
    with tempfile.TemporaryDirectory() as root:
        context = engine(system, tools, 1_000_000, Path(root))
        turns = replay_session(context, source, ScriptedSummarizer())
    rows = []
    for low, high in itertools.pairwise((*BUCKETS, 10**9)):
        chosen = [t for t in turns if low <= t.tokens < high]
        if not chosen:
            continue
        steady = [t.engine for t in chosen if not t.rewrite]
        rows.append([f"{low // 1000}k-{high // 1000}k" if high < 10**9 else f">= {low // 1000}k", str(len(chosen)),
                     ms(statistics.median(steady)), ms(quantile(steady, 0.9)), ms(max(steady)),
                     str(len(chosen) - len(steady)), ms(max((t.engine for t in chosen if t.rewrite), default=0)),
                     ms(statistics.median(t.intake for t in chosen))])
    raw = TokenCounter().messages(source)
    table(f"Per-turn cost replaying the {len(trajectory_paths())} real trajectories chained into one session "
          f"({rounds}x, {len(source):,} messages, {raw:,} tokens before offload and decay; window 1M, every "
          f"default mechanism on; {context.mechanisms.decays} decay batches), ms",
          ["prompt size", "turns", "per turn (median)", "p90", "max", "rewrite turns", "rewrite turn max",
           "new content intake (median)"], rows)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def compact_once(system: tuple[SystemBlock, ...], tools: tuple[ToolSchema, ...], history: list[Message],
                 strategy: str) -> tuple[CompactionDone | None, int]:
    context = ContextManager(Prompt(system, tools), Limits(window=128_000), ContextConfig(strategy=strategy),
                             wiring=Wiring(archive=MemoryArchive(), on_event=lambda event: None))
    summarizer = ScriptedSummarizer()
    result = context.compact(history, summarizer, trigger="manual")
    assert check_pairing(result)
    return (context.compactions[-1] if context.compactions else None), len(summarizer.requests)


def trajectories(quick: bool) -> None:
    if not TRAJECTORIES.is_dir():
        print(f"\n(trajectories not found at {TRAJECTORIES}: compaction benchmark skipped)")
        return
    rows = []
    paths = trajectory_paths()[: 4 if quick else None]
    totals = {"before": 0, "truncate": 0, "summarize": 0}
    over = requests = summaries = 0
    for path in paths:
        system, tools, history = load_trajectory(path)
        assert boundaries(history)[-1] == len(history)
        truncated, _ = compact_once(system, tools, history, "truncate")
        summarized, calls = compact_once(system, tools, history, "summarize")
        compactions, check = held_out_replay(system, tools, history, 32_000)
        over += check.over_window
        requests, summaries = requests + check.requests, summaries + check.summary_requests_seen
        replay_cells = [f"{compactions} / {check.largest:,}", f"{check.requests} / {check.worst:,}",
                        str(check.over_window), "yes" if not (check.unpaired or check.over_threshold) else "NO"]
        if truncated is None or summarized is None:
            tokens = ContextManager(Prompt(system, tools)).state(history).total
            rows.append([path.name[:34], str(len(history)), f"{tokens:,}", "nothing to compact", "", "", "",
                         *replay_cells])
            continue
        totals["before"] += truncated.tokens_before
        totals["truncate"] += truncated.tokens_after
        totals["summarize"] += summarized.tokens_after
        rows.append([path.name[:34], str(len(history)), f"{truncated.tokens_before:,}",
                     f"{truncated.tokens_after:,} ({truncated.reduction:.0%})",
                     f"{summarized.tokens_after:,} ({summarized.reduction:.0%})", str(calls),
                     ms(summarized.duration), *replay_cells])
    rows.append(["total", "", f"{totals['before']:,}",
                 f"{totals['truncate']:,} ({1 - totals['truncate'] / totals['before']:.0%})",
                 f"{totals['summarize']:,} ({1 - totals['summarize'] / totals['before']:.0%})", "", "", "", "",
                 str(over), ""])
    table("Compaction on real trajectories (a manual /compact at window 128k: all but the newest turn is compacted) "
          "and the held-out replay at a 32k window (default settings, every mechanism on)",
          ["trajectory", "msgs", "tokens", "truncate -> (saved)", "summarize -> (saved)", "model calls",
           "summarize ms", "replay: compactions / max prompt", "requests / max prompt+max_tokens",
           "over the window", "paired, under threshold"], rows)
    print(f"\nheld-out replay at 32k: {requests:,} requests of the loop and {summaries:,} summary requests; "
          f"{over} with prompt + max_tokens over the window ({'PASS' if over == 0 else 'FAIL'})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer turns and trajectories")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    load_encoding("o200k_base")
    print(f"o200k_base loaded offline in {time.perf_counter() - start:.2f}s")
    per_turn_real(1 if args.quick else 2)
    overhead([50_000, 100_000, 200_000], 5 if args.quick else 20)
    counting_speed()
    trajectories(args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())

