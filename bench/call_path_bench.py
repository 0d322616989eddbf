"""swecli's own work per tool call on the agent loop's thread: CPU (what a loaded machine inflates little)
and wall, this tree beside another build, interleaved run by run, medians.

    python bench/call_path_bench.py --old /work/startup-old [--runs 3] [--calls 20] [--thinking 0.5]
    python bench/call_path_bench.py --profile [--calls 40]     # where this tree's loop CPU per call goes

Each run is a `swecli -p` against the scripted model on loopback (`swecli.testing.server`) whose replies are
`--calls` light bash calls (`true`) and then an answer, in a 100-file git project, `--mode auto`, the
sandbox on. `bench/call_path_probe.py` notes the loop thread's CPU time (`time.thread_time`) and the clock
when a reply comes back and when the next request starts; per call: that gap, the first call's left out
(it waits for set-up started with the first request). `--thinking`: the model waits that long before each
answer, as a real one does (what swecli starts while it thinks, the next sandbox, is then off the path).
`wall - bash` is the gap less `bash -c true` forked alone (the command's own time), the number issue 23's
target (10 ms) is about; it includes the command's sandbox, which the loop's CPU does not (bwrap's kernel
work is the child's). The request's wall includes the scripted server's own work (it runs in this bench's
process: a handler thread started, the body parsed, the reply's events written), measured at the server
(`latency_bench.TimedLLM`) and shown in a column of its own.
"""

from __future__ import annotations

import argparse
import json
import math
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from latency_bench import TASK, TimedLLM, Tree, command_alone, sample_project  # noqa: E402

from swecli.testing.server import Call, Reply, Step  # noqa: E402

PROBE = ROOT / "bench" / "call_path_probe.py"


def one_run(tree: Tree, project: Path, calls: int, thinking: float,
            profile: Path | None = None, sections: list[str] | None = None,
            steps: list[dict[str, Any]] | None = None) -> list[tuple[float, ...]]:
    """(loop CPU, wall) of each gap between a reply with a bash call and the next request, then (loop CPU,
    wall less the model's thinking, the test server's own work in that wall) of the request that follows,
    then the loop thread's instructions, waits and preemptions in the gap (`_switches`); the first call left
    out. `steps`: a list the step table's rows are added to (`STEPS` marked)."""
    def think(body: dict[str, object]) -> Reply:
        time.sleep(thinking)
        return Reply(calls=[Call("bash", {"command": "true"})])

    script: list[Step] = [think for _ in range(calls)]
    llm = TimedLLM([*script, Reply("done")])
    with tempfile.NamedTemporaryFile(prefix="probe-", suffix=".jsonl") as log, llm:
        argv = tree.argv(llm, "-p", TASK, "--mode", "auto")
        argv[1:3] = [str(PROBE)]
        extra = {"PROBE_LOG": log.name, "PROBE_CALLS": str(calls), **EXTRA_ENV}
        if profile is not None:
            extra["PROBE_PROFILE"] = str(profile)
        if sections:
            extra["PROBE_SECTIONS"] = ",".join(sections)
        if steps is not None:
            extra["PROBE_MARKS"] = ",".join(STEPS)
        done = subprocess.run(argv, cwd=project, env=tree.env(**extra), text=True, capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(f"{tree.label}: swecli -p failed ({done.returncode}): {done.stderr[-2000:]}")
        marks = [json.loads(line) for line in Path(log.name).read_text().splitlines()]
    for mark in (m for m in marks if m["what"] == "section"):
        counted = max(calls - 1, 1)  # the first call is left out
        print(f"  {mark['name']}: {mark['cpu'] / counted * 1000:.2f} ms, {mark.get('ins', 0) / counted:.3f} M "
              f"instructions a call ({mark['n']} runs in all)")
    backs = [m for m in marks if m["what"] == "back"]
    sends = [m for m in marks if m["what"] == "send"]
    # the server's work on request k: accepted to arrival, and its answer (after thinking) to the last byte
    server = [(t - a) + (w - t - thinking) for a, t, w in zip(llm.accepted, llm.times, llm.written, strict=True)]
    gaps = [(s["cpu"] - b["cpu"], s["t"] - b["t"], b2["cpu"] - s["cpu"], b2["t"] - s["t"] - thinking, own,
             *_switches(b, s)) for b, s, b2, own in zip(backs, sends[1:], backs[1:], server[1:], strict=False)]
    if steps is not None:
        steps += _step_rows(marks, llm, calls)
    return gaps[1:calls]


EXTRA_ENV: dict[str, str] = {}
"""Added to every run's environment (`--api-key`)."""


def _switches(back: dict[str, Any], send: dict[str, Any]) -> tuple[float, float, float]:
    """The loop thread's user-space instructions (millions; NaN where perf counters are refused), voluntary
    context switches (each a wait for another thread or process: the command, the GIL) and involuntary ones
    (preempted) between a reply's return and the next request."""
    ins = send["ins"] - back["ins"] if send.get("ins") is not None and back.get("ins") is not None else math.nan
    return ins, send["waits"] - back["waits"], send["preempted"] - back["preempted"]


STEPS = [
    "swecli.llm.transport:_Channel.wait", "swecli.llm.transport:_Channel.close", "swecli.agent:Agent.execute",
    "swecli.permissions:Policy.check", "swecli.tools.base:ToolRegistry.run", "swecli.tools.bash:run_command",
    "swecli.tools.spare:Spares.take", "swecli.tools.spare:Spare.release", "swecli.tools.bash:_supervise",
    "swecli.tools.sandbox:Launch.close", "swecli.agent:Agent._finish", "swecli.agent:Agent._ready_tools",
    "swecli.agent:Agent.sync_tools", "swecli.context.manager:ContextManager.prepare",
    "swecli.agent:Agent._request", "swecli.assembly:EventBus.__call__", "swecli.llm.transport:_Channel.__init__",
    "swecli.llm.transport:_Channel._pump", "httpx:Client.send",
    "httpcore._sync.connection_pool:ConnectionPool.handle_request", "swecli.ui.headless:ProgressPrinter.__call__",
    "swecli.session.recorder:SessionRecorder.handle", "swecli.memory.notes:NotesUpdater.handle",
    "swecli.memory.changes:InotifyTracker.begin", "swecli.memory.changes:InotifyTracker.end",
    "swecli.tools.base:ToolRegistry.ready", "swecli.tools.spare:Spares.prepare", "swecli.tools.sandbox:Sandbox.layout",
    "swecli.replies:read_reply", "swecli.context.manager:ContextManager.tool_content",
    "swecli.context.manager:ContextManager.request", "httpx:Client.build_request",
    "swecli.llm.openai:OpenAIProvider.encoded_body", "swecli.llm.openai:OpenAIStream.finish",
    "swecli.llm.openai:OpenAIStream.handle", "swecli.agent:Agent._account",
    "swecli.tools.sandbox:Reports.wait_for_namespace", "swecli.tools.spare:Spares.reap",
    "swecli.tools.bash:_signal_group", "swecli.tools.spare:Spares._sweep", "swecli.tools.spare:_start",
]
"""What `--steps` marks (entry and exit, every thread), for the step table of one call."""


def _step_rows(marks: list[dict[str, Any]], llm: TimedLLM, calls: int) -> list[dict[str, Any]]:
    """Per call after the first, from the reply's last byte written (the server) to the next request's
    connection accepted: when each marked function was first entered and when that first call returned (ms
    after the reply's last byte), and the time spent inside it, summed over its calls in that window."""
    rows: list[dict[str, Any]] = []
    marked = [m for m in marks if m["what"] in ("mark", "back", "send")]
    for i in range(1, min(calls, len(llm.written) - 1)):
        start, end = llm.written[i], llm.accepted[i + 1]
        row: dict[str, Any] = {"end": end - start}
        opened: dict[str, float] = {}
        for mark in (m for m in marked if start <= m["t"] <= end):
            key, at = mark.get("name", mark["what"]), mark["t"] - start
            if mark.get("edge") == "exit" and key not in opened:
                continue  # entered before the window (the previous request's stream)
            cell = row.setdefault(key, {"enter": at, "exit": at, "spent": 0.0, "n": 0})
            if mark.get("edge") == "enter":
                opened[key] = at
                cell["n"] += 1
            elif mark.get("edge") == "exit":
                cell["spent"] += at - opened[key]
                cell["exit"] = at if cell["n"] == 1 else cell["exit"]
        rows.append(row)
    return rows


def print_steps(label: str, rows: list[dict[str, Any]]) -> None:
    names = {key for row in rows for key in row if key != "end"}
    order = sorted(names, key=lambda k: statistics.median(r[k]["enter"] for r in rows if k in r))
    total = statistics.median(r["end"] for r in rows)
    print(f"\n{label}: {len(rows)} calls; reply's last byte written to the next request's connection accepted "
          f"{total * 1000:.2f} ms (median)\n")
    print("| step (marked function, or the probe's send/back) | entered | its first call returned | "
          "time inside, summed | calls | in how many windows |")
    print("|---|---|---|---|---|---|")
    for key in order:
        cells = [r[key] for r in rows if key in r]
        enter = statistics.median(c["enter"] for c in cells) * 1000
        leave = statistics.median(c["exit"] for c in cells) * 1000
        spent = statistics.median(c["spent"] for c in cells) * 1000
        count = statistics.median(c["n"] for c in cells)
        print(f"| {key.split(':')[-1]} | {enter:.2f} | {leave:.2f} | {spent:.2f} | {count:g} "
              f"| {len(cells)}/{len(rows)} |")


def compare(trees: list[Tree], runs: int, calls: int, thinking: float) -> None:
    base = Path(tempfile.mkdtemp(prefix="call-path-"))
    project = sample_project(base, 100)
    cpu: dict[str, list[float]] = {t.label: [] for t in trees}
    wall: dict[str, list[float]] = {t.label: [] for t in trees}
    req_cpu: dict[str, list[float]] = {t.label: [] for t in trees}
    req_wall: dict[str, list[float]] = {t.label: [] for t in trees}
    req_server: dict[str, list[float]] = {t.label: [] for t in trees}
    switches: dict[str, list[tuple[float, ...]]] = {t.label: [] for t in trees}
    alone: list[float] = []
    for tree in trees:
        one_run(tree, project, 2, 0.0)  # warm the caches
    for run in range(runs):
        for tree in trees if run % 2 == 0 else trees[::-1]:
            gaps = one_run(tree, project, calls, thinking)
            cpu[tree.label].append(statistics.median(g[0] for g in gaps))
            wall[tree.label].append(statistics.median(g[1] for g in gaps))
            req_cpu[tree.label].append(statistics.median(g[2] for g in gaps))
            req_wall[tree.label].append(statistics.median(g[3] for g in gaps))
            req_server[tree.label].append(statistics.median(g[4] for g in gaps))
            switches[tree.label].append(tuple(statistics.fmean(g[i] for g in gaps) for i in (5, 6, 7)))
            alone.append(command_alone(project))
        print(f"run {run + 1}/{runs} done", file=sys.stderr)
    bash = statistics.median(alone)
    print(f"per tool call ({calls} bash `true` calls a run, model answers after {thinking} s; medians of {runs} "
          f"runs of per-run medians; `bash -c true` alone {bash * 1000:.1f} ms)\n")
    print("| build | loop CPU, reply to request | wall, reply to request | wall - bash | the request: loop CPU "
          "| the request: wall less thinking | of which the test server's own work |")
    print("|---|---|---|---|---|---|---|")
    for tree in trees:
        c, w = statistics.median(cpu[tree.label]), statistics.median(wall[tree.label])
        rc, rw = statistics.median(req_cpu[tree.label]), statistics.median(req_wall[tree.label])
        rs = statistics.median(req_server[tree.label])
        print(f"| {tree.label} | {c * 1000:.1f} ms | {w * 1000:.1f} ms | {(w - bash) * 1000:.1f} ms | "
              f"{rc * 1000:.1f} ms | {rw * 1000:.1f} ms | {rs * 1000:.1f} ms |")
    print("\nthe loop thread from the reply to the next request (per call: means of a run, medians of the runs):\n")
    print("| build | M instructions (user space) | waits (voluntary switches: the command, the GIL) | preempted |")
    print("|---|---|---|---|")
    for tree in trees:
        ins, waits, preempted = (statistics.median(run[i] for run in switches[tree.label]) for i in range(3))
        print(f"| {tree.label} | {ins:.2f} | {waits:.2f} | {preempted:.2f} |")


SECTIONS = [
    "swecli.agent:Agent.execute", "swecli.agent:Agent._finish", "swecli.agent:Agent._ready_tools",
    "swecli.agent:Agent.sync_tools", "swecli.context.manager:ContextManager.prepare", "swecli.agent:Agent._request",
    "swecli.agent:Agent.append", "swecli.assembly:EventBus.__call__", "swecli.permissions:Policy.check",
    "swecli.tools.base:ToolRegistry.run", "swecli.tools.bash:run_command", "swecli.tools.spare:Spares.take",
    "swecli.tools.spare:Spares.prepare", "swecli.tools.bash:command_environment",
    "swecli.session.recorder:SessionRecorder.handle", "swecli.memory.notes:NotesUpdater.handle",
    "swecli.tools.bash:_run", "swecli.tools.bash:_format", "swecli.context.manager:ContextManager.tool_content",
    "swecli.tools.sandbox:Sandbox.layout", "swecli.tools.spare:_identities", "swecli.tools.spare:_shape",
    "swecli.ui.headless:ProgressPrinter.__call__", "swecli.agent:Agent._account", "swecli.tools.sandbox:Launch.close",
    "swecli.session.jsonl:AppendOnlyFile.append", "swecli.session.jsonl:AppendOnlyFile._write_bytes",
    "swecli.session.store:Transcript.append", "swecli.session.log:SessionLog.tool",
    "swecli.session.log:SessionLog.llm_call", "swecli.session.log:SessionLog.context",
]
"""What `--sections` times on the loop thread."""


def sections(trees: list[Tree], calls: int, thinking: float) -> None:
    base = Path(tempfile.mkdtemp(prefix="call-path-"))
    project = sample_project(base, 100)
    for tree in trees:
        one_run(tree, project, 2, 0.0)
    for tree in trees:
        print(f"{tree.label} ({tree.root}):")
        gaps = one_run(tree, project, calls, thinking, sections=SECTIONS)
        print(f"loop CPU per call, reply to request: median {statistics.median(g[0] for g in gaps) * 1000:.2f} ms; "
              f"the request: {statistics.median(g[2] for g in gaps) * 1000:.2f} ms")


def step_table(trees: list[Tree], runs: int, calls: int, thinking: float) -> None:
    base = Path(tempfile.mkdtemp(prefix="call-path-"))
    project = sample_project(base, 100)
    found: dict[str, list[dict[str, Any]]] = {t.label: [] for t in trees}
    for tree in trees:
        one_run(tree, project, 2, 0.0)
    for run in range(runs):
        for tree in trees if run % 2 == 0 else trees[::-1]:
            one_run(tree, project, calls, thinking, steps=found[tree.label])
        print(f"run {run + 1}/{runs} done", file=sys.stderr)
    print(f"`bash -c true` alone {command_alone(project) * 1000:.2f} ms; model answers after {thinking} s")
    for tree in trees:
        print_steps(tree.label, found[tree.label])


def profile(calls: int, thinking: float, top: int) -> None:
    base = Path(tempfile.mkdtemp(prefix="call-path-"))
    project = sample_project(base, 100)
    tree = Tree("new", ROOT)
    one_run(tree, project, 2, 0.0)
    stats_file = base / "loop.prof"
    gaps = one_run(tree, project, calls, thinking, stats_file)
    print(f"loop CPU per call: median {statistics.median(g[0] for g in gaps) * 1000:.1f} ms "
          f"(profiled: cProfile inflates it); cumulative over {calls} calls:")
    stats = pstats.Stats(str(stats_file))
    stats.sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", help="a checkout of the build to compare with (with its own .venv)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--thinking", type=float, default=0.0)
    parser.add_argument("--profile", action="store_true", help="profile this tree's loop between calls")
    parser.add_argument("--top", type=int, default=60)
    parser.add_argument("--sections", action="store_true", help="time named parts of this tree's loop")
    parser.add_argument("--steps", action="store_true", help="the step table of one call (marks on every thread)")
    parser.add_argument("--api-key", action="store_true",
                        help="runs with an API key in the environment, as a user's are: every line swecli writes "
                             "to the session's files is then searched for it (redacted)")
    args = parser.parse_args()
    if args.api_key:
        EXTRA_ENV["OPENAI_API_KEY"] = "sk-bench-0123456789abcdefghijklmn"
    trees = ([Tree("old", Path(args.old).resolve())] if args.old else []) + [Tree("new", ROOT)]
    if args.sections:
        sections(trees, args.calls, args.thinking)
        return
    if args.profile:
        profile(args.calls, args.thinking, args.top)
        return
    if args.steps:
        step_table(trees, args.runs, args.calls, args.thinking)
        return
    compare(trees, args.runs, args.calls, args.thinking)


if __name__ == "__main__":
    main()
