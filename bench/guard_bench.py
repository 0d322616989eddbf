"""The guard, the read-only rule and the sandbox, measured.

    python bench/guard_bench.py [TRAJECTORIES_DIR]      # default: ../shared/trajectories

1. The guard on its corpus (tests/tools/guard_corpus.toml): caught / false alarms per category, for
   the parser-based guard and for the regex guard it replaced (read from git history, commit
   c7273e9, when git can show it).
2. The 962 bash commands of the 16 real agent sessions in ../shared/trajectories: how many the guard
   flags (each printed, to judge by eye), how many the read-only rule lets run without a question in
   default mode, how many bashlex parses exactly, and the time per command.
3. The sandbox's cost: `true` run by the bash tool with and without bwrap.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import tomllib
import types
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from swecli.tools.guard import dangerous_reason  # noqa: E402
from swecli.tools.readonly import is_read_only  # noqa: E402
from swecli.tools.shell import parse  # noqa: E402

REGEX_GUARD_COMMIT = "c7273e9"
TRAJECTORIES = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "trajectories"


def regex_guard() -> Callable[[str], str] | None:
    """The previous guard (regexes over the raw text), loaded from git history."""
    try:
        source = subprocess.run(["git", "show", f"{REGEX_GUARD_COMMIT}:swecli/tools/guard.py"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType("regex_guard")
    exec(compile(source, "regex_guard", "exec"), module.__dict__)
    check: Callable[[str], str] = module.dangerous_reason
    return check


def corpus_table() -> None:
    corpus = tomllib.loads((ROOT / "tests" / "tools" / "guard_corpus.toml").read_text(encoding="utf-8"))
    old = regex_guard()
    print("## Guard corpus (tests/tools/guard_corpus.toml)\n")
    print("| kind | category | commands | parser guard | regex guard (before) |")
    print("|---|---|---|---|---|")
    totals = {"dangerous": [0, 0, 0], "harmless": [0, 0, 0]}
    for kind, verb in (("dangerous", "caught"), ("harmless", "false alarms")):
        for group in corpus[kind]:
            commands = group["commands"]
            new_hits = sum(bool(dangerous_reason(c)) for c in commands)
            old_hits = sum(bool(old(c)) for c in commands) if old else 0
            totals[kind] = [totals[kind][0] + len(commands), totals[kind][1] + new_hits, totals[kind][2] + old_hits]
            old_cell = f"{old_hits} {verb}" if old else "n/a"
            print(f"| {kind} | {group['category']} | {len(commands)} | {new_hits} {verb} | {old_cell} |")
    for kind, verb in (("dangerous", "caught"), ("harmless", "false alarms")):
        n, new_hits, old_hits = totals[kind]
        old_cell = f"**{old_hits}/{n} {verb}**" if old else "n/a"
        print(f"| **{kind}** | **all** | **{n}** | **{new_hits}/{n} {verb}** | {old_cell} |")
    print()


def trajectory_commands() -> list[str]:
    commands = []
    for path in sorted(TRAJECTORIES.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for message in data["messages"]:
            for call in message.get("tool_calls") or []:
                if call["function"]["name"] not in ("bash", "execute_bash"):
                    continue
                try:
                    command = json.loads(call["function"]["arguments"]).get("command")
                except json.JSONDecodeError:
                    continue
                if command:
                    commands.append(command)
    return commands


def trajectories_table() -> None:
    if not TRAJECTORIES.is_dir():
        print(f"(no {TRAJECTORIES}: skipping the real-session table)\n")
        return
    commands = trajectory_commands()
    timings: list[float] = []
    flagged: list[tuple[str, str]] = []
    read_only = exact = 0
    for command in commands:
        parse.cache_clear()
        start = time.perf_counter()
        reason = dangerous_reason(command)
        quiet = is_read_only(command)
        timings.append(time.perf_counter() - start)
        exact += parse(command).exact
        read_only += quiet
        if reason:
            flagged.append((command, reason))
    n = len(commands)
    print(f"## Real agent sessions ({TRAJECTORIES.name}: {n} bash commands)\n")
    print("| measure | value |")
    print("|---|---|")
    print(f"| parsed exactly by bashlex | {exact}/{n} ({exact / n:.1%}) |")
    print(f"| read-only: run without a question in default mode | {read_only}/{n} ({read_only / n:.1%}) |")
    print(f"| flagged by the guard | {len(flagged)}/{n} |")
    old = regex_guard()
    if old is not None:
        print(f"| flagged by the regex guard (before) | {sum(bool(old(c)) for c in commands)}/{n} |")
    print(f"| guard + read-only check per command | median {statistics.median(timings) * 1e3:.2f} ms, "
          f"p95 {sorted(timings)[int(0.95 * n)] * 1e3:.2f} ms, max {max(timings) * 1e3:.1f} ms |")
    print()
    for command, reason in flagged:
        print(f"- flagged: `{command[:100].replace(chr(10), ' ')}` -> {reason}")
    print()


def sandbox_table(runs: int = 30) -> None:
    from swecli.tools.base import ToolContext
    from swecli.tools.bash import BASH, BashArgs
    from swecli.tools.sandbox import Sandbox, unavailable_reason

    problem = unavailable_reason()
    if problem:
        print(f"(sandbox table skipped: {problem})")
        return
    root = Path(subprocess.run(["mktemp", "-d"], capture_output=True, text=True, check=True).stdout.strip())
    rows = []
    for label, sandbox in (("unsandboxed", None), ("bwrap workspace-write", Sandbox.for_project(root))):
        ctx = ToolContext(root=root, sandbox=sandbox)
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            BASH.fn(BashArgs(command="true"), ctx)
            samples.append(time.perf_counter() - start)
        rows.append((label, statistics.median(samples) * 1e3))
    print(f"## Sandbox cost (bash tool running `true`, median of {runs})\n")
    print("| how | per command |")
    print("|---|---|")
    for label, ms in rows:
        print(f"| {label} | {ms:.1f} ms |")
    print(f"| bwrap overhead | {rows[1][1] - rows[0][1]:.1f} ms |")
    subprocess.run(["rm", "-rf", str(root)], check=False)


if __name__ == "__main__":
    corpus_table()
    trajectories_table()
    sandbox_table()
