"""The shell parser's cost: what the first bash call waits for, and what every call pays.

    python bench/shell_parser_bench.py [--runs N] [TRAJECTORIES_DIR]

Old and new are measured in the same run, interleaved, each in a fresh interpreter:
- "old" is `swecli/tools/shell.py` as it was at BASHLEX_COMMIT (bashlex, which builds its LALR tables on
  every import), read from git history; it needs bashlex installed (`pip install bashlex`), else n/a.
- "new" is the working tree's `swecli/tools/shell.py` (tree-sitter-bash from tree-sitter-language-pack).

1. Import of the parser module plus the first `parse()`: the cost the first bash call of a session pays
   (the standard library modules a running swecli already has are imported first, untimed, for both).
2. Every bash command of the real agent sessions in ../shared/trajectories, parsed warm: per-command time,
   and how many each parser reads exactly (no error recovery, no fallback split).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from swecli.testing.shared import bash_commands, shared_path  # noqa: E402

BASHLEX_COMMIT = "91a4a76"
"""The last commit whose shell.py parsed with bashlex."""
FIRST_LINE = "cd src && grep -rn 'def main' . | head -5; python3 -c 'print(1)' > out.txt"

_FIRST_CALL = """
import sys, time
sys.path.insert(0, {path!r})
# What a running swecli has imported long before its first bash call: not charged to either parser.
import base64, binascii, collections.abc, dataclasses, functools, importlib.util, pathlib, re, shlex, threading
import typing, swecli.tools
start = time.perf_counter()
import {module} as shell
shell.parse({line!r})
print(time.perf_counter() - start)
"""

_ALL_COMMANDS = """
import json, sys, time
sys.path.insert(0, {path!r})
import {module} as shell
commands = json.load(sys.stdin)
shell.parse("true")
times, exact = [], 0
for command in commands:
    start = time.perf_counter()
    script = shell.parse(command)
    times.append(time.perf_counter() - start)
    exact += script.exact
print(json.dumps({{"times": times, "exact": exact}}))
"""


def variants(workdir: Path) -> dict[str, tuple[str, str] | None]:
    """name -> (sys.path entry, module) for each parser that can run here."""
    found: dict[str, tuple[str, str] | None] = {"new": (str(ROOT), "swecli.tools.shell")}
    try:
        source = subprocess.run(["git", "show", f"{BASHLEX_COMMIT}:swecli/tools/shell.py"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout
        has_bashlex = subprocess.run([sys.executable, "-c", "import bashlex"], capture_output=True).returncode == 0
    except (OSError, subprocess.CalledProcessError):
        source, has_bashlex = "", False
    if source and has_bashlex:
        (workdir / "old_bashlex_shell.py").write_text(source, encoding="utf-8")
        found["old"] = (str(workdir), "old_bashlex_shell")
    else:
        found["old"] = None
    return found


def first_call_table(found: dict[str, tuple[str, str] | None], runs: int) -> None:
    samples: dict[str, list[float]] = {name: [] for name in found}
    # Compiled bytecode is cached as an installed swecli's is: the first (warm-up) run writes it.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for run in range(runs + 1):
        for name, where in found.items():  # interleaved: old, new, old, new, ...
            if where is None:
                continue
            code = _FIRST_CALL.format(path=where[0], module=where[1], line=FIRST_LINE)
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                 env=env).stdout
            if run:
                samples[name].append(float(out))
    print(f"## First parse in a fresh interpreter (import + parse one line; median of {runs}, interleaved)\n")
    print("| parser | median | min | max |")
    print("|---|---|---|---|")
    for name, values in samples.items():
        label = "old: bashlex" if name == "old" else "new: tree-sitter-bash"
        if not values:
            print(f"| {label} | n/a (bashlex not installed) | | |")
            continue
        print(f"| {label} | {statistics.median(values) * 1e3:.1f} ms | {min(values) * 1e3:.1f} ms | "
              f"{max(values) * 1e3:.1f} ms |")
    if all(samples.values()):
        ratio = statistics.median(samples["old"]) / statistics.median(samples["new"])
        print(f"| old / new | {ratio:.0f}x | | |")
    print()


def all_commands_table(found: dict[str, tuple[str, str] | None], directory: Path) -> None:
    if not directory.is_dir():
        print(f"(no {directory}: skipping the real-session table)")
        return
    commands = bash_commands(sorted(directory.glob("*.json")))
    n = len(commands)
    print(f"## Every bash command of the real sessions ({directory.name}: {n} commands), parsed warm\n")
    print("| parser | parsed exactly | median | p95 | max |")
    print("|---|---|---|---|---|")
    for name, where in found.items():
        label = "old: bashlex" if name == "old" else "new: tree-sitter-bash"
        if where is None:
            print(f"| {label} | n/a | | | |")
            continue
        code = _ALL_COMMANDS.format(path=where[0], module=where[1])
        out = subprocess.run([sys.executable, "-c", code], input=json.dumps(commands), capture_output=True,
                             text=True, check=True).stdout
        result = json.loads(out)
        times = sorted(result["times"])
        print(f"| {label} | {result['exact']}/{n} | {statistics.median(times) * 1e3:.2f} ms | "
              f"{times[int(0.95 * n)] * 1e3:.2f} ms | {times[-1] * 1e3:.1f} ms |")
    print()


def main(argv: list[str]) -> None:
    runs = 7
    if "--runs" in argv:
        index = argv.index("--runs")
        runs = int(argv[index + 1])
        argv = argv[:index] + argv[index + 2:]
    directory = Path(argv[0]) if argv else shared_path("trajectories")
    with tempfile.TemporaryDirectory() as workdir:
        found = variants(Path(workdir))
        first_call_table(found, runs)
        all_commands_table(found, directory)


if __name__ == "__main__":
    main(sys.argv[1:])
