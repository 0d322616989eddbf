"""How long the loop stands still for compaction: the longest pause between two model calls.

    python bench/compaction_pause_bench.py [--old ../ctx-old] [--windows 8,16,20,32,64,128]
        [--summary-seconds 8,30] [--model-seconds 0,3] [--jobs 2]

A scripted session through the real loop (`Agent`, the OpenAI provider over HTTP on loopback, the scripted
server) with every default mechanism but decay (so that old and new grow the history at the same pace):
the history already holds an earlier task taken from the real trajectories in ../shared/trajectories (66%
of the window), then the model replays real steps, in order, from the trajectories whose agents read whole
files (moatless-tools, SWE-agent, OpenHands: files 12-25): each answer is the real assistant text with one
call, and the tool returns the real output of that step (29-10,778 tokens; the growth per step is theirs).
The main model answers after `--model-seconds`; the summarizer is the same scripted server delaying each
summary request by `--summary-seconds` (a real model's summary of a long history takes tens of seconds).
Every session of a window makes the same number of steps, old or new: enough for the history to grow by
1.3 windows (at least 20, at most 80 steps).

Each configuration runs in its own process, once with this checkout and once with `--old` (another
checkout of swecli, imported instead through PYTHONPATH), interleaved. Printed per configuration, OLD and
NEW: the longest and the median pause between two requests of the loop (the end of one answer to the
arrival of the next request at the server: tool run, context work, compaction), the loop thread's own CPU
time in the longest pause and the most it spent in any pause (`time.thread_time` from the answer to the next
request being built: the work the loop does there, which a loaded machine stretches), how long the loop waited
for compactions (`compaction_wait`, as `-p --output-format json` reports it), the compactions by kind
(summary / fold without a model call), and what the prompt cache kept: how many requests did not reuse
the whole previous prompt (prefix breaks) and the effective input (uncached + 0.1 x cached tokens). The
goal: the longest pause under 1 s at every window from 16k.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from itertools import cycle
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from swecli.agent import Agent
from swecli.config import ContextConfig, Settings
from swecli.context.compaction import SUMMARY_SYSTEM
from swecli.context.tokens import TokenCounter, load_encoding
from swecli.events import CompactionDone, Event, ModelCallFinished, ModelCallStarted, Notice
from swecli.llm.openai import OpenAIProvider
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolMessage, close_dangling_tool_calls
from swecli.permissions import Policy
from swecli.testing.server import Call, Reply, ScriptedLLM, Step
from swecli.testing.shared import TRAJECTORIES, load_trajectory, trajectory_paths
from swecli.tools.base import Tool, ToolContext, ToolRegistry, ToolResult

REPO = Path(__file__).resolve().parents[1]
PRELOAD = 0.66
"""The earlier task fills this share of the window."""
STEP_SOURCES = ("12", "13", "14", "15", "16", "17", "22", "23", "24", "25")
"""Trajectories whose steps are replayed: agents that read whole files (moatless, SWE-agent, OpenHands)."""
SUMMARY = "\n".join(f"### {section}\n- a specific finding with a path and a reason." * 3 for section in (
    "User instructions and constraints", "Current task and state", "Decisions and reasons", "Files",
    "Errors and resolutions", "Commands", "Open questions"))
GROWTH = 1.3
"""A session makes the steps that add this many windows of real steps to the history."""
MIN_STEPS, MAX_STEPS = 20, 80
ASSISTANT_CHARS = 2_000
"""The real assistant text of a step, cut to this (some agents think at length; the tool outputs are the
growth that matters)."""


class ReadArgs(BaseModel):
    path: str


@dataclass
class RealSteps:
    """The real steps of the trajectories, in order: (the assistant's text, the tool's output)."""

    steps: list[tuple[str, str]]

    def __post_init__(self) -> None:
        self._outputs = cycle(output for _, output in self.steps)

    def read(self, args: ReadArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(next(self._outputs), meta={"path": args.path})


def real_steps() -> list[tuple[str, str]]:
    steps = []
    for path in trajectory_paths():
        if path.name[:2] not in STEP_SOURCES:
            continue
        history = load_trajectory(path)[2]
        outputs = {m.tool_call_id: m.content for m in history if isinstance(m, ToolMessage)}
        for msg in history:
            if isinstance(msg, AssistantMessage) and msg.tool_calls and outputs.get(msg.tool_calls[0].id):
                steps.append((msg.content[:ASSISTANT_CHARS], outputs[msg.tool_calls[0].id]))
    return steps


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


# --- one session (in a child process, with the swecli on its PYTHONPATH) --------------------------------

def thread_times() -> dict[int, tuple[str, int, int, int]]:
    """Every live thread of this process: its name, the nanoseconds it has run on a core, those it spent
    ready to run but waiting for one (`/proc/self/task/<tid>/schedstat`: the machine's load), and the times
    it was put back in that queue (its third field: each wait for the GIL, a lock or I/O ends there)."""
    names = {t.native_id: t.name for t in threading.enumerate() if t.native_id is not None}
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            run_ns, queued_ns, slices = (task / "schedstat").read_text().split()
        except (OSError, ValueError):
            continue
        tid = int(task.name)
        out[tid] = (names.get(tid, "?"), int(run_ns), int(queued_ns), int(slices))
    return out


def group(name: str) -> str:
    """A thread's role in the table: the loop, the scripted server's handlers, or swecli's own threads."""
    if name == "MainThread":
        return "loop"
    if "process_request" in name or name == "scripted-llm":
        return "server"
    return name.split("_")[0].removeprefix("swecli-") if name.startswith("swecli-") else name.split(" ")[0]


def breakdown(before: dict[int, tuple[str, int, int, int]], after: dict[int, tuple[str, int, int, int]],
              loop_tid: int, wall: float) -> dict[str, float]:
    """Where a pause went: the loop thread's time on a core (`loop_run`), waiting for a core (`loop_queued`,
    the load), and the rest (`loop_blocked`: the GIL, a lock, a join, the request's I/O); and every other
    thread's time on a core meanwhile, by role (who could have held the GIL)."""
    seconds: dict[str, float] = {}
    for tid, (name, run_ns, queued_ns, slices) in after.items():
        _, run0, queued0, slices0 = before.get(tid, (name, 0, 0, 0))
        role = group(name)
        if tid == loop_tid:
            seconds["loop_run"] = (run_ns - run0) / 1e9
            seconds["loop_queued"] = (queued_ns - queued0) / 1e9
            seconds["loop_slices"] = float(slices - slices0)
        else:
            seconds[role] = seconds.get(role, 0.0) + (run_ns - run0) / 1e9
    seconds["loop_blocked"] = wall - seconds.get("loop_run", 0.0) - seconds.get("loop_queued", 0.0)
    return seconds

@dataclass
class Config:
    window: int
    summary_seconds: float
    model_seconds: float


@dataclass
class Timeline:
    arrivals: list[float] = field(default_factory=list)
    """When each of the loop's requests reached the server."""
    answers: list[float] = field(default_factory=list)
    """When the loop had each answer."""
    answer_cpu: list[float] = field(default_factory=list)
    """The loop thread's CPU time then (`time.thread_time`)."""
    request_cpu: list[float] = field(default_factory=list)
    """The loop thread's CPU time as each request was about to be sent (`ModelCallStarted`)."""
    answer_threads: list[dict[int, tuple[str, int, int, int]]] = field(default_factory=list)
    """Every thread's times as each answer was had (`thread_times`)."""
    arrival_threads: list[dict[int, tuple[str, int, int, int]]] = field(default_factory=list)
    """... and as each request arrived."""
    compactions: list[CompactionDone] = field(default_factory=list)
    compaction_times: list[float] = field(default_factory=list)
    waited_at_hard_limit: bool = False
    summaries_asked: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, event: Event) -> None:
        if isinstance(event, ModelCallFinished):
            self.answers.append(time.monotonic())
            self.answer_cpu.append(time.thread_time())
            self.answer_threads.append(thread_times())
        elif isinstance(event, ModelCallStarted):
            self.request_cpu.append(time.thread_time())
        elif isinstance(event, CompactionDone) and event.trigger != "decay":
            self.compactions.append(event)
            self.compaction_times.append(time.monotonic())
        elif isinstance(event, Notice) and "waiting for the background summary" in event.text:
            self.waited_at_hard_limit = True

    def pauses(self) -> list[float]:
        return [arrival - answer for answer, arrival in zip(self.answers, self.arrivals[1:], strict=False)]

    def pause_cpu(self) -> list[float]:
        """The loop thread's own CPU time in each pause, up to the request being built and sent (what the
        loop computes there, whatever the machine's load; the wall time adds waiting for a core)."""
        return [started - answered for answered, started in zip(self.answer_cpu, self.request_cpu[1:], strict=False)]

    def worst(self, index: int) -> dict[str, float]:
        """Where pause `index` went (`breakdown`), and the compactions made in it (`in_it`: their strategies)."""
        start, end = self.answers[index], self.arrivals[index + 1]
        loop_tid = threading.main_thread().native_id or 0
        seconds = breakdown(self.answer_threads[index], self.arrival_threads[index + 1], loop_tid, end - start)
        made = [c.strategy for c, at in zip(self.compactions, self.compaction_times, strict=True) if start <= at <= end]
        return {**seconds, **{f"in_it:{strategy}": float(made.count(strategy)) for strategy in set(made)}}

    def summaries_applied(self) -> int:
        """Compactions with a model's summary (not a fold or a truncation, which make room without one)."""
        return sum(c.strategy not in ("fold", "truncate") for c in self.compactions)


@dataclass
class Result:
    window: int
    summary_seconds: float
    model_seconds: float
    requests: int
    longest: float
    longest_cpu: float
    """The loop's CPU time in the longest pause."""
    most_cpu: float
    """The loop's largest CPU time in any pause."""
    median: float
    waited: float
    waited_at_hard_limit: bool
    summaries: int
    folds: int
    truncations: int
    summaries_asked: int
    prefix_breaks: int
    reuse: float
    effective_input: float
    total_input: int
    worst: dict[str, float] = field(default_factory=dict)
    """Where the longest pause went (`Timeline.worst`)."""


def make_context(settings: Settings, tools: ToolRegistry, root: Path, timeline: Timeline,
                 provider: Any) -> Any:
    """The context engine as a session builds it, in whichever constructor this swecli has."""
    import swecli.context.manager as manager

    system = (SystemBlock(text="You are a coding agent."),)
    if hasattr(manager, "Wiring"):
        wiring = manager.Wiring(on_event=timeline, summary_provider=provider)
        return manager.ContextManager.from_settings(settings, manager.Prompt(system, tools.schemas()), root=root,
                                                    wiring=wiring)
    context = manager.ContextManager.from_settings(settings, system=system, tools=tools.schemas(), root=root,
                                                   on_event=timeline)
    context.summary_provider = provider
    return context


def run(config: Config, steps: RealSteps, history: list[Message]) -> Result:
    timeline = Timeline()
    count = TokenCounter()
    growth = statistics.fmean(count.text(text) + count.text(output) for text, output in steps.steps[:200])
    longest = min(MAX_STEPS, max(MIN_STEPS, math.ceil(GROWTH * config.window / growth)))
    texts = cycle(text for text, _ in steps.steps)

    def answer(body: dict[str, Any]) -> Step:
        if body["messages"][0]["content"] == SUMMARY_SYSTEM:
            with timeline.lock:
                timeline.summaries_asked += 1
            time.sleep(config.summary_seconds)
            return Reply(SUMMARY, usage=False, chunk=4_096)
        with timeline.lock:
            timeline.arrivals.append(time.monotonic())
            timeline.arrival_threads.append(thread_times())
            step = len(timeline.arrivals)
        time.sleep(config.model_seconds)
        if step > longest:
            return Reply("Read them all.", usage=False, chunk=4_096)
        return Reply(next(texts), calls=[Call("read", {"path": f"src/module_{step}.py"})], usage=False, chunk=4_096)

    settings = Settings(model="bench-model", context_limit=config.window,
                        context=ContextConfig(decay=False))
    tools = ToolRegistry([Tool("read", "Read a file.", ReadArgs, steps.read)])
    with ScriptedLLM([answer] * (MAX_STEPS + 100), strict=False) as llm, tempfile.TemporaryDirectory() as root:
        def provider() -> OpenAIProvider:
            return OpenAIProvider(model="bench-model", base_url=llm.base_url, api_key="k", name="openai-compatible")

        context = make_context(settings, tools, Path(root), timeline, provider)
        main = provider()
        agent = Agent(main, tools, context, ToolContext(root=Path(root)), Policy("auto"), on_event=timeline,
                      max_iterations=MAX_STEPS + 10)
        agent.history = list(history)
        try:
            agent.run("Read the modules one by one and tell me what they define.")
        finally:
            context.close()
            main.close()
    pauses, cpu, stats = timeline.pauses(), timeline.pause_cpu(), context.mechanisms.prefix.stats
    longest = max(range(len(pauses)), key=pauses.__getitem__)
    return Result(config.window, config.summary_seconds, config.model_seconds, len(timeline.arrivals), pauses[longest],
                  cpu[longest] if longest < len(cpu) else math.nan, max(cpu), statistics.median(pauses),
                  sum(c.waited for c in timeline.compactions),
                  timeline.waited_at_hard_limit, timeline.summaries_applied(),
                  sum(c.strategy == "fold" for c in timeline.compactions),
                  sum(c.strategy == "truncate" for c in timeline.compactions), timeline.summaries_asked, stats.breaks,
                  stats.reuse_ratio, stats.effective_tokens, stats.total_tokens, timeline.worst(longest))


def child(spec: str) -> int:
    config = Config(**json.loads(spec))
    load_encoding("o200k_base")
    counter = TokenCounter()
    result = run(config, RealSteps(real_steps()), earlier_task(int(config.window * PRELOAD), counter))
    print(json.dumps(asdict(result)))
    return 0


# --- the table (in the parent) ---------------------------------------------------------------------------

def in_process(config: Config, source: Path) -> Result:
    env = {**os.environ, "PYTHONPATH": str(source)}
    proc = subprocess.run([sys.executable, __file__, "--one", json.dumps(asdict(config))], env=env,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{source} {config}: {proc.stderr[-2000:]}")
    return Result(**json.loads(proc.stdout.strip().splitlines()[-1]))


def table(rows: list[list[str]], header: list[str]) -> None:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(str(c).rjust(w) for c, w in zip(row, widths, strict=False)) + " |")


def pair(old: Result | None, new: Result, cell: str) -> str:
    def one(result: Result) -> str:
        return cell.format(**asdict(result))

    return f"{one(old)} / {one(new)}" if old is not None else one(new)


def row(config: Config, old: Result | None, new: Result) -> list[str]:
    return [f"{config.window // 1000}k", f"{config.summary_seconds:g}", f"{config.model_seconds:g}",
            pair(old, new, "{longest:.2f}"), pair(old, new, "{longest_cpu:.3f}"), pair(old, new, "{most_cpu:.3f}"),
            pair(old, new, "{median:.3f}"), pair(old, new, "{waited:.1f}"),
            pair(old, new, "{summaries}+{folds}+{truncations}"), pair(old, new, "{summaries_asked}"),
            pair(old, new, "{requests}"), pair(old, new, "{prefix_breaks}"), pair(old, new, "{reuse:.0%}"),
            pair(old, new, "{effective_input:,.0f}")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, help="another swecli checkout to measure beside this one")
    parser.add_argument("--windows", default="8,16,20,32,64,128", help="thousands of tokens, comma-separated")
    parser.add_argument("--summary-seconds", default="8,30")
    parser.add_argument("--model-seconds", default="0,3")
    parser.add_argument("--jobs", type=int, default=2, help="sessions run at once (they mostly sleep)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        return child(args.one)
    if not TRAJECTORIES.is_dir():
        print(f"the trajectories are not at {TRAJECTORIES}; this benchmark replays them")
        return 1
    configs = [Config(int(w) * 1000, float(s), float(m)) for w in args.windows.split(",")
               for s in args.summary_seconds.split(",") for m in args.model_seconds.split(",")]
    sources = ([args.old.resolve()] if args.old else []) + [REPO]
    load = os.getloadavg()
    # Interleaved: each configuration's OLD and NEW sessions run one after the other (or side by side).
    with ThreadPoolExecutor(args.jobs) as pool:
        futures = [[pool.submit(in_process, config, source) for source in sources] for config in configs]
        rows, pairs = [], []
        for config, pending in zip(configs, futures, strict=True):
            results = [f.result() for f in pending]
            old, new = (results[0], results[1]) if args.old else (None, results[0])
            pairs.append((config, old, new))
            print(f"{config}: longest pause {pair(old, new, '{longest:.2f}')} s", file=sys.stderr)
            rows.append(row(config, old, new))
    what = "OLD / NEW" if args.old else "this checkout"
    print(f"\n## Pauses between the loop's requests ({what}); real steps from ../shared/trajectories files "
          f"{', '.join(STEP_SOURCES)} after an earlier real task filling {PRELOAD:.0%} of the window; decay off\n")
    print(f"Load average (1, 5, 15 min) at the start: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; at the end: "
          + " ".join(f"{v:.1f}" for v in os.getloadavg()) + f" ({os.cpu_count()} cores)\n")
    table(rows, ["window", "summary s", "model s", "longest pause s", "its loop CPU s", "most loop CPU s",
                 "median pause s", "compaction_wait s",
                 "summaries+folds+truncations", "summary requests", "requests", "prefix breaks", "prefix reuse",
                 "effective input"])
    worst_table(pairs)
    return 0


def worst_table(pairs: list[tuple[Config, Result | None, Result]]) -> None:
    """Where each longest pause went: the loop thread on a core, waiting for a core (load), blocked (the GIL,
    a lock, the request's I/O); the other threads' time on a core meanwhile; what compaction it held."""
    roles = sorted({k for _, old, new in pairs for r in (old, new) if r for k in r.worst
                    if not k.startswith(("loop_", "in_it:"))})
    print("\n## The longest pause, component by component (seconds; other threads: their time on a core in it)\n")
    rows = []
    for config, old, new in pairs:
        for label, result in (("OLD", old), ("NEW", new)):
            if result is None:
                continue
            w = result.worst
            made = "+".join(f"{int(v)} {k[6:]}" for k, v in sorted(w.items()) if k.startswith("in_it:")) or "-"
            rows.append([f"{config.window // 1000}k", f"{config.summary_seconds:g}", f"{config.model_seconds:g}",
                         label, f"{result.longest:.2f}", f"{w.get('loop_run', math.nan):.3f}",
                         f"{w.get('loop_queued', math.nan):.3f}", f"{w.get('loop_slices', math.nan):.0f}",
                         f"{w.get('loop_blocked', math.nan):.3f}",
                         *(f"{w.get(role, 0.0):.3f}" for role in roles), made])
    table(rows, ["window", "summary s", "model s", "build", "pause", "loop on a core", "loop waiting for a core",
                 "times it queued", "loop blocked", *roles, "compactions in it"])


if __name__ == "__main__":
    sys.exit(main())
