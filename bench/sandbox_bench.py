"""What the sandbox costs per bash call: the bwrap layout before issue 22 against the one now.

    python bench/sandbox_bench.py [--runs 60]

Each run starts `/bin/bash -c true` three ways, in a shuffled order so machine load hits all alike:
- `unsandboxed`: bash alone;
- `bwrap before`: the command line swecli used before issue 22 (namespaces, read-only root, private /tmp,
  the project, the hidden credentials; no capability drop, user namespace, seccomp filter or protected paths);
- `bwrap alone`: `bwrap --ro-bind / / bash -c true`, bubblewrap's own floor on this machine (no namespace
  but the mount one);
- `bwrap now`: the bash tool's `run_command` with a fresh sandbox (`Sandbox.launch`: the allowlisted
  environment, the per-command layout: protected paths, placeholders, toolchains under /tmp; the seccomp
  filter through a pipe; the runner that reports the command's end; the checks after it);
- `spare now`: what a command waits for when its sandbox was started while the model thought
  (`swecli/tools/spare.py`), through `run_command` too: the layout checked again, the command handed over,
  bash run, its end reported, the checks after it. The spare is started `THINKING` seconds before the timing.
  Its CPU (set-up included) is counted when it is reaped, which is now off the path (on the spare's thread):
  it may land in a later sample, so read the CPU column of the sandboxed rows as a total over the runs.
The project is a git repository with a .vscode folder and a fake home with credentials, as a real one has.
Printed: wall-clock median and 90th percentile in milliseconds and the overhead over bash alone, and the
CPU time of the processes each call starts (bwrap, its init, bash), which machine load does not inflate.
The target (issue 23): a sandboxed call within 10 ms of the command itself.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from swecli.tools.base import ToolContext
from swecli.tools.bash import command_environment, run_command
from swecli.tools.environment import CommandEnvironment
from swecli.tools.sandbox import Sandbox, unavailable_reason
from swecli.tools.spare import Spares

ARGV = ["/bin/bash", "-c", "true"]
THINKING = 1.0
"""Seconds between a spare's start and its command (a model's answer takes longer than that)."""


def make_place(base: Path) -> tuple[Path, Path]:
    home, project = base / "home", base / "project"
    for rel in (".ssh", ".aws", ".config/gh", ".docker"):
        (home / rel).mkdir(parents=True)
    (home / ".netrc").write_text("machine x password y\n")
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / ".vscode").mkdir()
    return home, project


def before(box: Sandbox) -> list[str]:
    """The bwrap command line of swecli before issue 22 (swecli/tools/sandbox.py at that time)."""
    args = [box.bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-net", "--ro-bind", "/", "/",
            "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--bind", str(box.root), str(box.root)]
    for path in box.hidden:
        args += ["--tmpfs", str(path), "--remount-ro", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null",
                                                                                         str(path)]
    return [*args, "--chdir", str(box.root), "--", *ARGV]


def timed(run: Callable[[], None]) -> tuple[float, float]:
    """(wall-clock ms, CPU ms of the processes it started: bwrap, its namespace's init, bash)."""
    before_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    run()
    wall = (time.perf_counter() - start) * 1000
    after_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after_cpu.ru_utime - before_cpu.ru_utime) + (after_cpu.ru_stime - before_cpu.ru_stime)
    return wall, cpu * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=60)
    runs = parser.parse_args().runs
    if unavailable_reason():
        sys.exit(f"bwrap cannot run here: {unavailable_reason()}")
    base = Path(tempfile.mkdtemp(prefix="swecli-sandbox-bench-", dir="/var/tmp"))
    try:
        home, project = make_place(base)
        box = Sandbox.for_project(project, home=home, env={"HOME": str(home)})
        env = CommandEnvironment().build(os.environ)
        old = before(box)

        def plain() -> None:
            subprocess.run(ARGV, env=env, cwd=project, check=True)

        def old_bwrap() -> None:
            subprocess.run(old, env={**env, "TMPDIR": "/tmp"}, cwd=project, check=True)

        ctx = ToolContext(root=project, sandbox=box)

        def new_bwrap() -> None:
            assert run_command("true", ctx, 60, box, Spares()).exit_code == 0

        def bwrap_alone() -> None:
            subprocess.run([box.bwrap, "--ro-bind", "/", "/", "/bin/bash", "-c", "true"], check=True)

        spares = Spares(take_wait=600)

        def spare() -> None:
            used = spares.used
            assert run_command("true", ctx, 60, box, spares).exit_code == 0
            assert spares.used == used + 1, "the spare was not used"

        def ahead(run: Callable[[], None]) -> Callable[[], None]:
            """The spare is started (as while the model thinks) before the timing starts."""
            if run is spare:
                spares.prepare(box, command_environment(ctx))
                assert spares.wait_started(600)
                time.sleep(THINKING)
            return run

        layout: list[float] = []
        order = [("unsandboxed", plain), ("bwrap alone", bwrap_alone), ("bwrap before", old_bwrap),
                 ("bwrap now", new_bwrap), ("spare now", spare)]
        times: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in order}
        new_bwrap()  # the first call builds the seccomp filter and probes bwrap (once per process)
        for _ in range(runs):
            random.shuffle(order)  # no configuration always runs right after another
            for name, run in order:
                times[name].append(timed(ahead(run)))
            start = time.perf_counter()
            box.launch(ARGV, env).close()
            layout.append((time.perf_counter() - start) * 1000)
        bare = statistics.median(w for w, _ in times["unsandboxed"])
        bare_cpu = statistics.median(c for _, c in times["unsandboxed"])
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {runs} runs each, shuffled")
        print(f"{'':14} {'wall median':>12} {'wall p90':>9} {'over bash':>10} {'CPU median':>11} {'over bash':>10}")
        for name, values in times.items():
            wall = [w for w, _ in values]
            cpu = statistics.median(c for _, c in values)
            median, p90 = statistics.median(wall), statistics.quantiles(wall, n=10)[-1]
            print(f"{name:14} {median:12.1f} {p90:9.1f} {median - bare:+10.1f} {cpu:11.1f} {cpu - bare_cpu:+10.1f}")
        print(f"{'launch() only':14} {statistics.median(layout):10.2f} {statistics.quantiles(layout, n=10)[-1]:8.2f}"
              "   (swecli's own work per call: environment, layout, filter pipe)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
