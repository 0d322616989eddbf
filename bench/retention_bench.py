"""Retention: does compaction lose anything for good? Needles planted in real tool outputs, looked for after.

    python bench/retention_bench.py [--old ../ctx-old] [--windows 8,16,32,64] [--summary-seconds 0.3]

Each of the 16 real trajectories in ../shared/trajectories is replayed through the context engine as the
loop drives it (`swecli.testing.replay`: default settings, every default mechanism on, background
summaries), at each window. Every fifth tool output carries a needle: one line
`NEEDLE-<n>: setting_<n> = <random hex>` at a random place in it. The summarizer is a scripted one that
takes `--summary-seconds` per summary and never repeats a needle, so the replay (which runs as fast as the
engine allows, like a model that answers at once) goes on while a summary is being made: the engine's
fallbacks (folds, truncations, or waiting) all happen.

After each session, each needle is looked for in the last request, then in the files that request names
(offloaded outputs, compaction archives and indexes), then in the files those name, and so on: the number
of reads it is away from the prompt. "lost" must be 0. Printed per window, summed over the trajectories
(OLD and NEW with `--old`, another checkout imported through PYTHONPATH, each run in its own process).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from swecli.context.compaction import SAVED_PATH
from swecli.llm.base import CancelToken, ModelRequest, StreamEvent
from swecli.messages import AssistantMessage, Message, ToolMessage
from swecli.testing.model import ScriptedSummarizer
from swecli.testing.replay import engine, replay_session
from swecli.testing.shared import TRAJECTORIES, load_trajectory, trajectory_paths

REPO = Path(__file__).resolve().parents[1]
EVERY = 5


@dataclass
class SlowSummarizer(ScriptedSummarizer):
    seconds: float = 0.3

    def stream(self, request: ModelRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        deadline = time.monotonic() + self.seconds
        while time.monotonic() < deadline and not (cancel is not None and cancel.cancelled):
            time.sleep(0.01)
        yield from super().stream(request, cancel)


def planted(path: Path, rng: random.Random, needles: dict[str, str]) -> list[Message]:
    """The trajectory's history with a needle in every fifth tool output (added to `needles`), of those a
    request carries (an output after the last answer never reaches the model)."""
    source = load_trajectory(path)[2]
    sent = max(i for i, m in enumerate(source) if isinstance(m, AssistantMessage))
    history: list[Message] = []
    outputs = 0
    for index, msg in enumerate(source):
        if isinstance(msg, ToolMessage) and index < sent:
            outputs += 1
            if outputs % EVERY == 0:
                name = f"NEEDLE-{len(needles)}"
                line = f"{name}: setting_{len(needles)} = {rng.getrandbits(64):016x}"
                lines = msg.content.split("\n")
                lines.insert(rng.randrange(len(lines) + 1), line)
                msg = msg.model_copy(update={"content": "\n".join(lines)})
                needles[name] = line
        history.append(msg)
    return history


@dataclass
class Result:
    window: int
    needles: int
    compactions: dict[str, int] = field(default_factory=dict)
    depth: dict[str, int] = field(default_factory=dict)
    """Reads away from the last prompt -> needles ("0": in the prompt itself; "lost")."""


def reads_away(prompt: str, root: Path, needles: dict[str, str]) -> dict[str, int]:
    """For each needle, the fewest file reads from the prompt to a text that holds it (-1: none)."""
    depth = {name: 0 for name, line in needles.items() if line in prompt}
    frontier, seen, level = set(SAVED_PATH.findall(prompt)), set(), 0
    while frontier and len(depth) < len(needles):
        level += 1
        texts = []
        for path in frontier - seen:
            seen.add(path)
            target = root / path
            if target.is_file():
                texts.append(target.read_text(encoding="utf-8", errors="replace"))
        for name, line in needles.items():
            if name not in depth and any(line in text or json.dumps(line)[1:-1] in text for text in texts):
                depth[name] = level
        frontier = {p for text in texts for p in SAVED_PATH.findall(text)} - seen
    return {name: depth.get(name, -1) for name in needles}


def child(window: int, seconds: float) -> int:
    rng = random.Random(7)
    kinds: dict[str, int] = {}
    counts: dict[str, int] = {}
    total = 0
    for path in trajectory_paths():
        needles: dict[str, str] = {}
        history = planted(path, rng, needles)
        system, tools, _ = load_trajectory(path)
        last: list[ModelRequest] = []
        with tempfile.TemporaryDirectory() as root:
            context = engine(system, tools, window, Path(root))
            replay_session(context, history, SlowSummarizer(seconds=seconds), lambda request, ctx, seen=last:
                           seen.append(request))
            request = last[-1]
            prompt = "\n".join([*(b.text for b in request.system), *(m.content for m in request.messages),
                                request.tail])
            depth = reads_away(prompt, Path(root), needles)
        total += len(needles)
        for done in context.compactions:
            kinds[done.strategy] = kinds.get(done.strategy, 0) + 1
        for value in depth.values():
            key = "lost" if value < 0 else str(min(value, 3))
            counts[key] = counts.get(key, 0) + 1
    print(json.dumps(asdict(Result(window, total, kinds, counts))))
    return 0


def measure(window: int, seconds: float, source: Path) -> Result:
    env = {**os.environ, "PYTHONPATH": str(source)}
    proc = subprocess.run([sys.executable, __file__, "--one", f"{window},{seconds}"], env=env, capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{source} {window}: {proc.stderr[-2000:]}")
    return Result(**json.loads(proc.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, help="another swecli checkout to measure beside this one")
    parser.add_argument("--windows", default="8,16,32,64", help="thousands of tokens, comma-separated")
    parser.add_argument("--summary-seconds", type=float, default=0.3)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        window, seconds = args.one.split(",")
        return child(int(window), float(seconds))
    if not TRAJECTORIES.is_dir():
        print(f"the trajectories are not at {TRAJECTORIES}; this benchmark replays them")
        return 1
    sources = [("OLD", args.old.resolve())] if args.old else []
    sources.append(("NEW" if args.old else "this checkout", REPO))
    print(f"\n## Needles after replaying each of the {len(trajectory_paths())} real trajectories (every "
          f"{EVERY}th tool output holds one; summaries take {args.summary_seconds:g} s)\n")
    print("| window | build | needles | in the prompt | 1 read away | 2 reads | 3+ reads | lost | compactions |")
    print("|---|---|---|---|---|---|---|---|---|")
    for window in (int(w) * 1000 for w in args.windows.split(",")):
        for label, source in sources:  # interleaved: OLD then NEW at each window
            r = measure(window, args.summary_seconds, source)
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(r.compactions.items()))
            print(f"| {window // 1000}k | {label} | {r.needles} | {r.depth.get('0', 0)} | {r.depth.get('1', 0)} | "
                  f"{r.depth.get('2', 0)} | {r.depth.get('3', 0)} | {r.depth.get('lost', 0)} | {kinds} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
