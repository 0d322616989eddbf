"""Garbage collection on a long real session: how often the collector stops the process, for how long, how
much of that lands between a reply and the next request (the path a user waits on), and the peak memory.

    python bench/gc_pause_bench.py --old /var/tmp/s10-base [--thinking 0,0.05] [--rounds 1] [--only 08,09]

The real loop (`Agent`, the OpenAI provider over HTTP on loopback, the scripted server in its own process,
the context engine with its defaults at a 1M window so that nothing is summarized) replays the trajectories of
../shared/trajectories in order, one long session: each reply is the real assistant text with its first
call, and the tool returns that call's real output (the history grows as the real session's did). The model
answers after `--thinking` seconds (0: at once). Each run is its own process, this checkout's swecli or
`--old`'s (through PYTHONPATH), interleaved. As in `-p`, the heap built before the first request is frozen.

Collections are seen through `gc.callbacks` (each pause: its generation, its thread, its start and
length); "on the path" is a pause that started between the loop's `ModelCallFinished` (the reply is in) and
its next `ModelCallStarted` (the request is built). The scripted server runs in a process of its own (its
parsing of every request body would count toward swecli's collections) and keeps no body. Peak memory: the
loop's process's maximum resident set.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def replayed_steps(paths: list[str], rounds: int) -> list[tuple[str, str]]:
    """(the assistant's text, its first call's real output) of every step of the trajectories, in order."""
    from swecli.messages import AssistantMessage, ToolMessage
    from swecli.testing.shared import load_trajectory

    steps = []
    for path in paths:
        history = load_trajectory(Path(path))[2]
        outputs = {m.tool_call_id: m.content for m in history if isinstance(m, ToolMessage)}
        steps += [(m.content, outputs[m.tool_calls[0].id]) for m in history
                  if isinstance(m, AssistantMessage) and m.tool_calls and m.tool_calls[0].id in outputs]
    return steps * rounds


def serve(spec: dict[str, Any]) -> None:
    """The scripted model, in a process of its own (in swecli's, its parsing of every request body, hundreds of
    thousands of objects late in the session, counted toward swecli's collections): its URL on stdout, then
    it serves until stdin closes."""
    from swecli.testing.server import Call, Reply, ScriptedLLM, Step

    steps = replayed_steps(spec["paths"], spec["rounds"])
    served = [0]

    def answer(body: dict[str, Any]) -> Step:
        llm.requests.clear()  # it keeps every body it parsed otherwise
        step, served[0] = served[0], served[0] + 1
        time.sleep(spec["thinking"])
        if step >= len(steps):
            return Reply("Done.", usage=False)
        return Reply(steps[step][0], calls=[Call("replay", {"step": step})], usage=False, chunk=4_096)

    with ScriptedLLM([answer] * (len(steps) + 1), strict=False) as llm:
        print(llm.base_url, flush=True)
        sys.stdin.read()


class Pauses:
    """Every collection: (start, seconds, generation, thread name)."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, float, int, str]] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        now = time.perf_counter()
        if phase == "start":
            self._started = now
        else:
            self.seen.append((self._started, now - self._started, info["generation"],
                              threading.current_thread().name))


def child(spec: dict[str, Any]) -> dict[str, Any]:
    import gc

    from pydantic import BaseModel

    from swecli.agent import Agent
    from swecli.config import Settings
    from swecli.context.manager import ContextManager, Prompt
    from swecli.context.tokens import load_encoding
    from swecli.events import Event, ModelCallFinished, ModelCallStarted
    from swecli.llm.openai import OpenAIProvider
    from swecli.messages import SystemBlock
    from swecli.permissions import Policy
    from swecli.tools.base import Tool, ToolContext, ToolRegistry, ToolResult

    class ReplayArgs(BaseModel):
        step: int

    steps = replayed_steps(spec["paths"], spec["rounds"])
    load_encoding("o200k_base")
    replies: list[float] = []
    requests: list[float] = []

    def replay(args: ReplayArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(steps[args.step][1])

    def on_event(event: Event) -> None:
        if isinstance(event, ModelCallFinished):
            replies.append(time.perf_counter())
        elif isinstance(event, ModelCallStarted):
            requests.append(time.perf_counter())

    tools = ToolRegistry([Tool("replay", "Run the step's command.", ReplayArgs, replay)])
    settings = Settings(model="bench-model", context_limit=1_000_000)
    pauses = Pauses()
    server = subprocess.Popen([sys.executable, __file__, "--serve", json.dumps(spec)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert server.stdout is not None and server.stdin is not None
    base_url = server.stdout.readline().strip()
    with tempfile.TemporaryDirectory() as root:
        context = ContextManager.from_settings(settings, Prompt((SystemBlock(text="You are a coding agent."),),
                                                                tools.schemas()), root=Path(root))
        provider = OpenAIProvider(model="bench-model", base_url=base_url, api_key="k", name="openai-compatible")
        agent = Agent(provider, tools, context, ToolContext(root=Path(root)), Policy("auto"), on_event=on_event,
                      max_iterations=len(steps) + 10)
        gc.collect()
        gc.freeze()  # as -p does at its first request: start-up's heap is never visited again
        gc.callbacks.append(pauses)
        start = time.perf_counter()
        agent.run("Fix the issue.")
        wall = time.perf_counter() - start
        gc.callbacks.remove(pauses)
        context.close()
        provider.close()
    server.stdin.close()
    server.wait(60)
    windows = list(zip(replies, requests[1:], strict=False))  # the reply's end to the next request's start
    on_path = [p for p in pauses.seen if any(a <= p[0] <= b for a, b in windows)]
    seconds = [p[1] for p in pauses.seen]
    return {"steps": len(steps), "wall": wall, "collections": len(seconds),
            "by_generation": [sum(p[2] == g for p in pauses.seen) for g in range(3)],
            "total_ms": sum(seconds) * 1000, "max_ms": max(seconds, default=0.0) * 1000,
            "max_gen2_ms": max((p[1] for p in pauses.seen if p[2] == 2), default=0.0) * 1000,
            "on_path": len(on_path), "on_path_ms": sum(p[1] for p in on_path) * 1000,
            "on_path_max_ms": max((p[1] for p in on_path), default=0.0) * 1000,
            "off_thread": sum(p[3] == "swecli-gc" for p in pauses.seen),
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run_one(tree: Path, spec: dict[str, Any]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, __file__, "--one", json.dumps(spec)], env=env, capture_output=True,
                          text=True, check=False, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: {done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


COLUMNS = [("collections (gen 0/1/2)", "{collections} ({by_generation[0]}/{by_generation[1]}/{by_generation[2]})"),
           ("paused, all", "{total_ms:.0f} ms"), ("longest", "{max_ms:.1f} ms"),
           ("longest gen-2", "{max_gen2_ms:.1f} ms"),
           ("on the path: pauses", "{on_path}"), ("on the path: ms", "{on_path_ms:.1f}"),
           ("on the path: longest", "{on_path_max_ms:.1f} ms"), ("on swecli-gc", "{off_thread}"),
           ("peak RSS", "{peak_mib:.0f} MiB"), ("wall", "{wall:.1f} s")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, help="another swecli checkout to measure beside this one")
    parser.add_argument("--thinking", default="0,0.05", help="the model's seconds before each answer, comma-separated")
    parser.add_argument("--rounds", type=int, default=1, help="how many times the trajectories are replayed")
    parser.add_argument("--only", default="", help="trajectory numbers (the files' first two digits), comma-separated")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(child(json.loads(args.one))))
        return
    if args.serve:
        serve(json.loads(args.serve))
        return
    from swecli.testing.shared import trajectory_paths

    only = [n for n in args.only.split(",") if n]
    paths = [str(p) for p in trajectory_paths() if not only or p.name[:2] in only]
    trees = ([("old", args.old.resolve())] if args.old else []) + [("new", ROOT)]
    print(f"load average at the start: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    results: dict[tuple[str, float], list[dict[str, Any]]] = {}
    for run in range(args.runs):
        for thinking in (float(t) for t in args.thinking.split(",")):
            for label, tree in trees if run % 2 == 0 else trees[::-1]:
                spec = {"thinking": thinking, "rounds": args.rounds, "paths": paths}
                results.setdefault((label, thinking), []).append(run_one(tree, spec))
    first = next(iter(results.values()))[0]
    print(f"{first['steps']} steps of ../shared/trajectories{' ' + ','.join(only) if only else ''} x "
          f"{args.rounds}; {args.runs} run(s) each, the run with the median pause on the path shown\n")
    print("| build | thinking | " + " | ".join(name for name, _ in COLUMNS) + " |")
    print("|---|---|" + "---|" * len(COLUMNS))
    for (label, thinking), runs in results.items():
        shown = sorted(runs, key=lambda r: r["on_path_ms"])[len(runs) // 2]
        print(f"| {label} | {thinking:g} s | " + " | ".join(cell.format(**shown) for _, cell in COLUMNS) + " |")
    print(f"\nload average at the end: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
