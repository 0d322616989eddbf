"""The guard, the read-only rule and the sandbox, measured.

    python bench/guard_bench.py [TRAJECTORIES_DIR]      # default: ../shared/trajectories

1. Every corpus, old guard beside new: caught / false alarms of the guard in the working tree, of the guard
   before issue 22 (commit BEFORE_ISSUE22, read from git history; it parsed with bashlex, so that column
   needs `pip install bashlex`) and of the regex guard before that (commit REGEX_GUARD_COMMIT). The corpora:
   the first one (tests/tools/guard_corpus.toml), the lines of published guards and incident reports
   (tests/tools/guard_corpus_real.toml, also scored on its labels as first committed), issue 22's list
   (tests/tools/guard_corpus_issue22.toml), the independent check's (tests/tools/guard_corpus_redteam.toml,
   with the guard as merged before that check, commit BEFORE_REDTEAM) and the 962 bash commands of the real sessions in
   ../shared/trajectories (none of which should be flagged). Then the new corpus per source, and every
   line the guard in the working tree misses or flags wrongly, to judge by eye.
2. The real sessions: how many commands the read-only rule lets run without a question in default mode,
   how many tree-sitter-bash parses exactly, and the time per command.
3. The sandbox's cost: `true` run by the bash tool with and without bwrap.

Paths are judged against a home directory of /home/tester, whoever runs it (as root, HOME is /root).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["HOME"] = "/home/tester"

from swecli.testing.shared import bash_commands, shared_path  # noqa: E402
from swecli.tools.guard import dangerous_reason  # noqa: E402
from swecli.tools.readonly import is_read_only  # noqa: E402
from swecli.tools.shell import parse  # noqa: E402

REGEX_GUARD_COMMIT = "c7273e9"
BEFORE_ISSUE22 = "d5fdeda"
"""The guard before issue 22 (the commit that added the held-out corpora, before the guard changed)."""
BEFORE_REDTEAM = "eedfffd"
"""The guard as merged for issue 22, before the independent check changed it (docs/security/redteam.md)."""
CORPORA = ROOT / "tests" / "tools"
TRAJECTORIES = Path(sys.argv[1]) if len(sys.argv) > 1 else shared_path("trajectories")

Judge = Callable[[list[str]], list[str]]
"""Reasons for a list of commands ("" where not flagged)."""

_OLD_GUARD = """
import json, sys
from swecli.tools.guard import dangerous_reason
print(json.dumps([dangerous_reason(c) for c in json.load(sys.stdin)]))
"""


def git_show(commit: str, path: str) -> str | None:
    try:
        return subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None


def regex_guard() -> Judge | None:
    """The regex guard (regexes over the raw text), loaded from git history."""
    source = git_show(REGEX_GUARD_COMMIT, "swecli/tools/guard.py")
    if source is None:
        return None
    namespace: dict[str, object] = {"__name__": "regex_guard"}
    exec(compile(source, "regex_guard", "exec"), namespace)
    check: Callable[[str], str] = namespace["dangerous_reason"]  # type: ignore[assignment]
    return lambda commands: [check(c) for c in commands]


def guard_before_issue22(workdir: Path) -> Judge | None:
    """The parser guard as it was before issue 22, run from a copy of that commit's package."""
    if subprocess.run([sys.executable, "-c", "import bashlex"], capture_output=True).returncode != 0:
        return None
    return guard_at(BEFORE_ISSUE22, workdir)


def guard_at(commit: str, workdir: Path) -> Judge | None:
    """The guard of `commit`, run from a copy of that commit's package in `workdir`."""
    archive = subprocess.run(["git", "archive", commit, "swecli"], cwd=ROOT, capture_output=True)
    if archive.returncode != 0:
        return None
    subprocess.run(["tar", "-x", "-C", str(workdir)], input=archive.stdout, check=True)
    env = {**os.environ, "PYTHONPATH": str(workdir), "HOME": "/home/tester"}

    def judge(commands: list[str]) -> list[str]:
        out = subprocess.run([sys.executable, "-c", _OLD_GUARD], input=json.dumps(commands), capture_output=True,
                             text=True, check=True, env=env, cwd=workdir).stdout
        reasons: list[str] = json.loads(out)
        return reasons

    return judge


def load_corpora() -> dict[str, tuple[list[str], list[str]]]:
    """name -> (lines that must be flagged, lines that must not)."""
    old = tomllib.loads((CORPORA / "guard_corpus.toml").read_text(encoding="utf-8"))
    real = tomllib.loads((CORPORA / "guard_corpus_real.toml").read_text(encoding="utf-8"))["group"]
    issue = tomllib.loads((CORPORA / "guard_corpus_issue22.toml").read_text(encoding="utf-8"))
    corpora = {
        "old corpus (guard_corpus.toml)": ([c for g in old["dangerous"] for c in g["commands"]],
                                           [c for g in old["harmless"] for c in g["commands"]]),
        "published sources (guard_corpus_real.toml)": ([c for g in real for c in g.get("ask", [])],
                                                       [c for g in real for c in g.get("pass", [])]),
    }
    first = git_show(BEFORE_ISSUE22, "tests/tools/guard_corpus_real.toml")
    if first is not None:
        groups = tomllib.loads(first)["group"]
        corpora["published sources, labels as first committed"] = (
            [c for g in groups for c in g.get("ask", [])], [c for g in groups for c in g.get("pass", [])])
    corpora["issue 22's list, reconstructed"] = (issue["missed"]["commands"] + issue["caught"]["commands"],
                                                 issue["benign"]["commands"])
    redteam = tomllib.loads((CORPORA / "guard_corpus_redteam.toml").read_text(encoding="utf-8"))["group"]
    corpora["independent check (guard_corpus_redteam.toml)"] = ([c for g in redteam for c in g.get("ask", [])],
                                                                [c for g in redteam for c in g.get("pass", [])])
    if TRAJECTORIES.is_dir():
        corpora[f"real sessions ({TRAJECTORIES.name})"] = ([], trajectory_commands())
    return corpora


def corpus_table(judges: dict[str, Judge | None]) -> dict[str, list[str]]:
    corpora = load_corpora()
    names = list(judges)
    print("## Every corpus, this guard beside the ones before it\n")
    print("| corpus | must ask | caught: " + " / ".join(names) + " | must pass | false alarms: " +
          " / ".join(names) + " |")
    print("|---|---|---|---|---|")
    for corpus, (ask, allow) in corpora.items():
        caught, alarms = [], []
        for judge in judges.values():
            if judge is None:
                caught.append("n/a")
                alarms.append("n/a")
                continue
            reasons = judge(ask + allow)
            caught.append(str(sum(bool(r) for r in reasons[:len(ask)])) if ask else "-")
            alarms.append(str(sum(bool(r) for r in reasons[len(ask):])))
        print(f"| {corpus} | {len(ask) or '-'} | {' / '.join(caught)} | {len(allow)} | {' / '.join(alarms)} |")
    print()
    return {"ask": corpora["published sources (guard_corpus_real.toml)"][0],
            "pass": corpora["published sources (guard_corpus_real.toml)"][1]}


def per_source_table(judges: dict[str, Judge | None]) -> None:
    groups = tomllib.loads((CORPORA / "guard_corpus_real.toml").read_text(encoding="utf-8"))["group"]
    families: dict[str, tuple[list[str], list[str]]] = {}
    for group in groups:
        family = _family(group["source"])
        ask, allow = families.setdefault(family, ([], []))
        ask += group.get("ask", [])
        allow += group.get("pass", [])
    names = [n for n, j in judges.items() if j is not None]
    print("## Published sources, per source\n")
    print("| source | must ask | caught: " + " / ".join(names) + " | must pass | false alarms: " +
          " / ".join(names) + " |")
    print("|---|---|---|---|---|")
    for family, (ask, allow) in families.items():
        caught, alarms = [], []
        for name in names:
            judge = judges[name]
            assert judge is not None
            reasons = judge(ask + allow)
            caught.append(str(sum(bool(r) for r in reasons[:len(ask)])))
            alarms.append(str(sum(bool(r) for r in reasons[len(ask):])))
        print(f"| {family} | {len(ask)} | {' / '.join(caught)} | {len(allow)} | {' / '.join(alarms)} |")
    print()


def _family(url: str) -> str:
    for key, name in (("destructive_command_guard", "dcg (Rust guard for Claude Code)"),
                      ("claude-code-safety-net", "claude-code-safety-net"), ("openai/codex", "Codex"),
                      ("OpenHands", "OpenHands"), ("gemini-cli/blob", "Gemini CLI"), ("SWE-agent", "SWE-agent")):
        if key in url:
            return name
    return "incident reports and write-ups"


def misses_and_alarms(lines: dict[str, list[str]]) -> None:
    print("## What this guard misses or flags wrongly in the published sources\n")
    for command in lines["ask"]:
        if not dangerous_reason(command):
            print(f"- missed: `{command[:100]!r}`")
    for command in lines["pass"]:
        reason = dangerous_reason(command)
        if reason:
            print(f"- false alarm: `{command[:100]!r}` -> {reason}")
    print()


def trajectory_commands() -> list[str]:
    return bash_commands(sorted(TRAJECTORIES.glob("*.json")))


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
    print(f"| parsed exactly by tree-sitter-bash | {exact}/{n} ({exact / n:.1%}) |")
    print(f"| read-only: run without a question in default mode | {read_only}/{n} ({read_only / n:.1%}) |")
    print(f"| flagged by the guard | {len(flagged)}/{n} |")
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
    root = Path(tempfile.mkdtemp())
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


def main() -> None:
    with tempfile.TemporaryDirectory() as workdir, tempfile.TemporaryDirectory() as merged:
        judges: dict[str, Judge | None] = {
            "now": lambda commands: [dangerous_reason(c) for c in commands],
            "before the independent check": guard_at(BEFORE_REDTEAM, Path(merged)),
            "before issue 22": guard_before_issue22(Path(workdir)),
            "regex guard": regex_guard(),
        }
        lines = corpus_table(judges)
        per_source_table(judges)
    misses_and_alarms(lines)
    trajectories_table()
    sandbox_table()


if __name__ == "__main__":
    main()
