"""How long the loop stands still for a compaction, with and without the background summary.

    python bench/compaction_pause_bench.py [--quick] [--summary-seconds 30] [--model-seconds 3]

A scripted session through the real loop (`Agent`, the OpenAI provider over HTTP, the scripted server):
the history already holds an earlier task taken from the real trajectories in ../shared/trajectories
(66% of the window), then the model reads one real tool output (1-2k tokens) per step. Decay is
off here (offload, recitation and the rest are on) so both runs grow the history at the same pace.
Every model answer takes `--model-seconds`; the summarizer takes `--summary-seconds` (tens of seconds,
as a real model's summary of a long history does). The session runs until a compaction has
happened and three more steps have gone by.

Printed per configuration: the longest and the median pause between two requests of the loop (the end
of one answer to the arrival of the next request at the server: tool run, context work, compaction),
how long the loop waited for compactions (`compaction_wait`, as `swecli -p --output-format json`
reports it), and whether it had to wait at the hard limit. The goal: the longest pause under 1 s
with the background summary, where without it the loop stops for the whole summary.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from itertools import cycle
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from swecli.agent import Agent
from swecli.config import ContextConfig, Settings
from swecli.context.compaction import SUMMARY_SYSTEM
from swecli.context.manager import ContextManager
from swecli.context.tokens import TokenCounter, load_encoding
from swecli.events import CompactionDone, Event, ModelCallFinished, Notice
from swecli.llm.openai import OpenAIProvider
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolMessage, close_dangling_tool_calls
from swecli.permissions import Policy
from swecli.testing.server import Call, Reply, ScriptedLLM, Step
from swecli.testing.shared import TRAJECTORIES, load_trajectory, trajectory_paths
from swecli.tools.base import Tool, ToolContext, ToolRegistry, ToolResult

PRELOAD = 0.66
"""The earlier task fills this share of the window: the warning level (70%) is a few steps away."""
SUMMARY = "\n".join(f"### {section}\n- a specific finding with a path and a reason." * 3 for section in (
    "User instructions and constraints", "Current task and state", "Decisions and reasons", "Files",
    "Errors and resolutions", "Commands", "Open questions"))


class ReadArgs(BaseModel):
    path: str


@dataclass
class Outputs:
    """Real tool outputs of 1-2k tokens, served in turn by the `read` tool."""

    texts: list[str]

    def __post_init__(self) -> None:
        self._next = cycle(self.texts)

    def read(self, args: ReadArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(next(self._next), meta={"path": args.path})


def real_outputs(counter: TokenCounter) -> list[str]:
    texts = []
    for path in trajectory_paths():
        for msg in load_trajectory(path)[2]:
            if isinstance(msg, ToolMessage) and 1_000 <= counter.text(msg.content) <= 2_000:
                texts.append(msg.content)
    return texts


def earlier_task(tokens: int, counter: TokenCounter) -> list[Message]:
    """Real history from the trajectories, about `tokens` long, ending as a finished task."""
    history: list[Message] = []
    total = 0
    for i, path in enumerate(trajectory_paths()):
        for msg in load_trajectory(path, prefix=f"old{i}_")[2]:
            if total >= tokens and not isinstance(msg, ToolMessage):
                closed = close_dangling_tool_calls(history, "interrupted")
                return [*closed, AssistantMessage(content="Done with that task.")]
            history.append(msg)
            total += counter.message(msg)
    return [*close_dangling_tool_calls(history, "interrupted"), AssistantMessage(content="Done with that task.")]


@dataclass
class Timeline:
    arrivals: list[float] = field(default_factory=list)
    """When each of the loop's requests reached the server."""
    answers: list[float] = field(default_factory=list)
    """When the loop had each answer."""
    compactions: list[CompactionDone] = field(default_factory=list)
    waited_at_hard_limit: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, event: Event) -> None:
        if isinstance(event, ModelCallFinished):
            self.answers.append(time.monotonic())
        elif isinstance(event, CompactionDone) and event.trigger != "decay":
            self.compactions.append(event)
        elif isinstance(event, Notice) and "waiting for the background summary" in event.text:
            self.waited_at_hard_limit = True

    def pauses(self) -> list[float]:
        return [arrival - answer for answer, arrival in zip(self.answers, self.arrivals[1:], strict=False)]


@dataclass
class Config:
    window: int
    background: bool
    summary_seconds: float
    model_seconds: float


def run(config: Config, outputs: Outputs, history: list[Message]) -> Timeline:
    timeline = Timeline()
    steps_after = [3]

    def answer(body: dict[str, Any]) -> Step:
        if body["messages"][0]["content"] == SUMMARY_SYSTEM:
            time.sleep(config.summary_seconds)
            return Reply(SUMMARY, usage=False)
        with timeline.lock:
            timeline.arrivals.append(time.monotonic())
            step = len(timeline.arrivals)
        time.sleep(config.model_seconds)
        if timeline.compactions:
            steps_after[0] -= 1
            if steps_after[0] < 0:
                return Reply("Read them all.", usage=False)
        return Reply(calls=[Call("read", {"path": f"src/module_{step}.py"})], usage=False)

    # Decay is off so that the history grows at the same pace in both runs (decay waits while a summary is
    # made in the background, and would otherwise fold the earlier task at a different moment in each).
    settings = Settings(model="bench-model", context_limit=config.window,
                        context=ContextConfig(background_compaction=config.background, decay=False))
    tools = ToolRegistry([Tool("read", "Read a file.", ReadArgs, outputs.read)])
    with ScriptedLLM([answer] * 400, strict=False) as llm, tempfile.TemporaryDirectory() as root:
        def provider() -> OpenAIProvider:
            return OpenAIProvider(model="bench-model", base_url=llm.base_url, api_key="k", name="openai-compatible")

        context = ContextManager.from_settings(settings, system=(SystemBlock(text="You are a coding agent."),),
                                               tools=tools.schemas(), root=Path(root), on_event=timeline)
        context.summary_provider = provider
        main = provider()
        agent = Agent(main, tools, context, ToolContext(root=Path(root)), Policy("auto"), on_event=timeline,
                      max_iterations=300)
        agent.history = list(history)
        try:
            agent.run("Read the modules one by one and tell me what they define.")
        finally:
            context.close()
            main.close()
    return timeline


def table(rows: list[list[str]], header: list[str]) -> None:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(str(c).rjust(w) for c, w in zip(row, widths, strict=False)) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the 128k window only")
    parser.add_argument("--summary-seconds", type=float, default=30.0)
    parser.add_argument("--model-seconds", type=float, default=3.0)
    args = parser.parse_args(argv)
    if not TRAJECTORIES.is_dir():
        print(f"the trajectories are not at {TRAJECTORIES}; this benchmark replays them")
        return 1
    load_encoding("o200k_base")
    counter = TokenCounter()
    outputs = Outputs(real_outputs(counter))
    windows = [128_000] if args.quick else [128_000, 200_000, 32_000]
    rows = []
    for window in windows:
        history = earlier_task(int(window * PRELOAD), counter)
        for background in (True, False):
            config = Config(window, background, args.summary_seconds, args.model_seconds)
            timeline = run(config, outputs, history)
            pauses = timeline.pauses()
            done = timeline.compactions[0] if timeline.compactions else None
            rows.append([f"{window // 1000}k", "on" if background else "off", str(len(timeline.arrivals)),
                         str(len(timeline.compactions)), f"{max(pauses):.2f}", f"{statistics.median(pauses):.3f}",
                         f"{sum(c.waited for c in timeline.compactions):.2f}",
                         "yes" if timeline.waited_at_hard_limit else "no",
                         f"{done.tokens_before:,} -> {done.tokens_after:,}" if done else "-"])
            print(f"{window // 1000}k, background {'on' if background else 'off'}: longest pause {max(pauses):.2f}s",
                  file=sys.stderr)
    print(f"\n## Pauses between the loop's requests (summarizer {args.summary_seconds:g}s, model "
          f"{args.model_seconds:g}s a step, 1-2k-token real outputs; an earlier real task fills "
          f"{PRELOAD:.0%} of the window), seconds\n")
    table(rows, ["window", "background summary", "requests", "compactions", "longest pause", "median pause",
                 "compaction_wait", "waited at the hard limit", "compaction (tokens)"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
