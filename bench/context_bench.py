"""Context-engine benchmark: per-turn overhead, counting speed, compaction on real trajectories.

    /tmp/venv/bin/python bench/context_bench.py [--quick]

1. Per-turn overhead of what the loop and the toolbar do every iteration (prepare + request + state)
   on synthetic histories of 50k/100k/200k tokens, with ~1k tokens of new content per turn; and the
   cold cost of counting the whole history once (first turn after a resume).
2. Counting speed: TokenCounter over messages vs raw tiktoken `encode_ordinary` on the same text.
3. Compaction on the real agent trajectories in ../shared/trajectories (skipped when absent): the
   truncate strategy and a scripted summarizer, at 128k with default settings; and a replay of each
   session through `prepare()` with a 32k window, checking every request stays valid and under the
   threshold.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from swecli.config import ContextConfig
from swecli.context.archive import MemoryArchive
from swecli.context.compaction import boundaries
from swecli.context.manager import ContextManager, has_open_calls
from swecli.context.tokens import TokenCounter, load_encoding
from swecli.events import CompactionDone, Event
from swecli.llm.base import CancelToken, ModelRequest, ResponseDone, StreamEvent
from swecli.messages import (
    AssistantMessage,
    Message,
    SystemBlock,
    ToolCall,
    ToolMessage,
    ToolSchema,
    Usage,
    UserMessage,
)

TRAJECTORIES = Path(__file__).resolve().parents[2] / "shared" / "trajectories"
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
        context = ContextManager(SYSTEM, TOOLS, window=2_000_000)
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

@dataclass
class ScriptedSummarizer:
    """Answers every summary request with a fixed ~600-token structured summary, like a model would."""

    name: str = "scripted-summarizer"
    model: str = "scripted"
    requests: list[ModelRequest] = field(default_factory=list)

    def stream(self, request: ModelRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        self.requests.append(request)
        sections = ["User instructions and constraints", "Current task and state", "Decisions and reasons",
                    "Files", "Errors and resolutions", "Commands", "Open questions"]
        body = "\n".join(f"### {s}\n" + "- a specific finding with a path and a reason. " * 8 for s in sections)
        yield ResponseDone(AssistantMessage(content=body), Usage(requests=1))

    def close(self) -> None:
        return None


def load_trajectory(path: Path) -> tuple[tuple[SystemBlock, ...], tuple[ToolSchema, ...], list[Message]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    system = (SystemBlock(text=data.get("system") or "", cache=True),)
    tools = tuple(ToolSchema(name=t["function"]["name"], description=t["function"].get("description", ""),
                             parameters=t["function"].get("parameters", {})) for t in data.get("tools", []))
    answered = {m["tool_call_id"] for m in data["messages"] if m["role"] == "tool"}
    names: dict[str, str] = {}
    history: list[Message] = []
    for m in data["messages"]:
        if m["role"] == "user":
            history.append(UserMessage(content=m.get("content") or ""))
        elif m["role"] == "assistant":
            calls = tuple(ToolCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
                          for c in m.get("tool_calls") or [] if c["id"] in answered)  # drop unanswered final calls
            names.update({c.id: c.name for c in calls})
            if m.get("content") or calls:
                history.append(AssistantMessage(content=m.get("content") or "", tool_calls=calls,
                                                reasoning=m.get("reasoning_content") or ""))
        elif m["role"] == "tool":
            history.append(ToolMessage(tool_call_id=m["tool_call_id"], name=names.get(m["tool_call_id"], "tool"),
                                       content=m.get("content") or ""))
    return system, tools, history


def check_pairing(messages: tuple[Message, ...] | list[Message]) -> bool:
    pending: set[str] = set()
    for m in messages:
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in pending:
                return False
            pending.discard(m.tool_call_id)
        elif pending:
            return False
        elif isinstance(m, AssistantMessage):
            pending = {c.id for c in m.tool_calls}
    return not pending


def compact_once(system: tuple[SystemBlock, ...], tools: tuple[ToolSchema, ...], history: list[Message],
                 strategy: str) -> tuple[CompactionDone | None, int]:
    context = ContextManager(system, tools, window=128_000, archive=MemoryArchive(),
                             config=ContextConfig(strategy=strategy), on_event=lambda event: None)
    summarizer = ScriptedSummarizer()
    result = context.compact(history, summarizer, trigger="manual")
    assert check_pairing(result)
    return (context.compactions[-1] if context.compactions else None), len(summarizer.requests)


def replay(system: tuple[SystemBlock, ...], tools: tuple[ToolSchema, ...], history: list[Message],
           window: int) -> tuple[int, int, bool]:
    """Feed the session message by message through prepare(), like the loop; returns (compactions,
    largest request in tokens, every request valid and under the threshold)."""
    events: list[Event] = []
    context = ContextManager(system, tools, window=window, archive=MemoryArchive(), on_event=events.append)
    summarizer = ScriptedSummarizer()
    live: list[Message] = []
    largest, valid = 0, True
    for message in history:
        live.append(message)
        if has_open_calls(live):
            continue
        live = context.prepare(live, summarizer)
        request = context.request(live)
        state = context.state(live)
        largest = max(largest, state.total)
        valid &= check_pairing(request.messages) and state.total <= context.budget.limit
    return len(context.compactions), largest, valid


def trajectories(quick: bool) -> None:
    if not TRAJECTORIES.is_dir():
        print(f"\n(trajectories not found at {TRAJECTORIES}: compaction benchmark skipped)")
        return
    rows = []
    paths = sorted(TRAJECTORIES.glob("*.json"))[: 4 if quick else None]
    totals = {"before": 0, "truncate": 0, "summarize": 0}
    for path in paths:
        system, tools, history = load_trajectory(path)
        assert boundaries(history)[-1] == len(history)
        truncated, _ = compact_once(system, tools, history, "truncate")
        summarized, calls = compact_once(system, tools, history, "summarize")
        compactions, largest, valid = replay(system, tools, history, 32_000)
        if truncated is None or summarized is None:
            tokens = ContextManager(system, tools).state(history).total
            rows.append([path.name[:34], str(len(history)), f"{tokens:,}", "nothing to compact", "(fits the 12k",
                         "recent budget)", "", f"{compactions} / {largest:,}", "yes" if valid else "NO"])
            continue
        totals["before"] += truncated.tokens_before
        totals["truncate"] += truncated.tokens_after
        totals["summarize"] += summarized.tokens_after
        rows.append([path.name[:34], str(len(history)), f"{truncated.tokens_before:,}",
                     f"{truncated.tokens_after:,} ({truncated.reduction:.0%})",
                     f"{summarized.tokens_after:,} ({summarized.reduction:.0%})", str(calls),
                     ms(summarized.duration), f"{compactions} / {largest:,}", "yes" if valid else "NO"])
    rows.append(["total", "", f"{totals['before']:,}",
                 f"{totals['truncate']:,} ({1 - totals['truncate'] / totals['before']:.0%})",
                 f"{totals['summarize']:,} ({1 - totals['summarize'] / totals['before']:.0%})", "", "", "", ""])
    table("Compaction on real trajectories (a manual /compact at window 128k: all but the newest turn is compacted; "
          "replay: auto-compaction at a 32k window, keep_recent 12k)",
          ["trajectory", "msgs", "tokens", "truncate -> (saved)", "summarize -> (saved)", "model calls",
           "summarize ms", "replay: compactions / max tokens", "valid"], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer turns and trajectories")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    load_encoding("o200k_base")
    print(f"o200k_base loaded offline in {time.perf_counter() - start:.2f}s")
    overhead([50_000, 100_000, 200_000], 5 if args.quick else 20)
    counting_speed()
    trajectories(args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())

