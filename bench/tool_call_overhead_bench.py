"""What the session notes' change record costs a bash call, old against new in one run.

    python bench/tool_call_overhead_bench.py [--old-ref 91a4a76] [--calls 40] [--tree DIR ...]

Around every bash call the loop hands ToolStarted and ToolFinished to the notes (memory/notes.py) before
it can go on; whatever they do is overhead above the command itself. The old notes ran
`git status --porcelain --untracked-files=all` on both events (the project at `--old-ref`, unpacked
with `git archive`); the new ones read the kernel's inotify events (watches set up once, in the
background, from the first prompt). Each side runs in its own process, old and new alternating per
tree; each call appends a line to one tracked file (so the notes record a change every call, as after
an edit) and is timed without the command: median and 90th percentile of ToolStarted + ToolFinished.

Trees: a synthesized git repository of 100 and of 2,000 files (10 per directory, committed), plus every
`--tree DIR` given (copied, then committed into a fresh repository), e.g. a real sympy source tree:

    pip download --no-deps --no-binary :all: sympy -d /tmp/sd && tar -xzf /tmp/sd/sympy-*.tar.gz -C /tmp/sd
    python bench/tool_call_overhead_bench.py --tree /tmp/sd/sympy-1.14.0
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHILD = """
import json, subprocess, sys, time
from pathlib import Path
from swecli.events import MessageAppended, ModelCallStarted, ToolFinished, ToolStarted
from swecli.memory.notes import NotesUpdater
from swecli.messages import ToolCall, UserMessage
from swecli.tools.base import ToolResult

root, calls, target = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
notes = NotesUpdater(root, "20261125-000000-bench")
start = time.perf_counter()
notes.handle(MessageAppended(UserMessage(content="edit the file")))
notes.handle(ModelCallStarted(1, 0))  # new: the watches start here, in the background
tracker = getattr(notes, "_changes", lambda: None)()
if tracker is not None and hasattr(tracker, "_ready"):
    tracker._ready.wait()
setup = time.perf_counter() - start
overheads, found = [], 0
for n in range(calls):
    command = f"echo {n} >> {target}"
    call = ToolCall(id=f"c{n}", name="bash", arguments=json.dumps({"command": command}))
    t0 = time.perf_counter()
    notes.handle(ToolStarted(call, {"command": command}))
    t1 = time.perf_counter()
    subprocess.run(["/bin/bash", "-c", command], cwd=root, check=True)
    t2 = time.perf_counter()
    notes.handle(ToolFinished(call, ToolResult("ok"), t2 - t1))
    t3 = time.perf_counter()
    overheads.append((t1 - t0) + (t3 - t2))
if hasattr(notes, "close"):
    notes.close()  # the new notes write on a background thread: wait for them
text = notes.path.read_text() if notes.path.is_file() else ""
found = text.count(target)
print(json.dumps({"overheads": overheads, "setup": setup, "recorded": found}))
"""


def unpack(ref: str, into: Path) -> Path:
    data = subprocess.run(["git", "-C", str(REPO), "archive", ref, "swecli"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as archive:
        archive.extractall(into, filter="data")
    return into


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", *args], cwd=root, check=True,
                   capture_output=True)


def synthesized(base: Path, files: int) -> Path:
    root = base / f"synth-{files}"
    for n in range(files):
        path = root / f"pkg{n // 100}" / f"sub{n // 10 % 10}" / f"mod_{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def function_{n}(x):\n    return x + {n}\n" * 20)
    return commit(root)


def copied(base: Path, tree: Path) -> Path:
    root = base / f"tree-{tree.name}"
    shutil.copytree(tree, root, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    return commit(root)


def commit(root: Path) -> Path:
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "tree")
    return root


def first_file(root: Path) -> str:
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=root, check=True, capture_output=True, text=True)
    return listed.stdout.split("\n", 1)[0]


def measure(checkout: Path, root: Path, calls: int, target: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(root), str(calls), target], cwd=checkout, check=True,
                         capture_output=True, text=True, env={"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin"})
    result: dict[str, object] = json.loads(out.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old-ref", default="91a4a76")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--tree", type=Path, action="append", default=[])
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="swecli-overhead-bench-", dir="/var/tmp"))
    try:
        old = unpack(args.old_ref, base / "old")
        trees = [synthesized(base, 100), synthesized(base, 2000), *(copied(base, t) for t in args.tree)]
        print(f"per bash call, notes' change record: old = {args.old_ref} (git status x2), new = this checkout "
              f"(inotify); {args.calls} calls each\n")
        print(f"{'tree':<26} {'files':>6} {'engine':<4} {'median ms':>10} {'p90 ms':>8} {'setup ms':>9} "
              f"{'recorded':>9}")
        for root in trees:
            files = len(subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True).stdout.split())
            target = first_file(root)
            for label, checkout in (("old", old), ("new", REPO)):
                result = measure(checkout, root, args.calls, target)
                times = sorted(float(t) * 1000 for t in result["overheads"])  # type: ignore[attr-defined]
                p90 = times[int(len(times) * 0.9) - 1]
                setup = float(result["setup"]) * 1000  # type: ignore[arg-type]
                print(f"{root.name:<26} {files:>6} {label:<4} {statistics.median(times):>10.2f} {p90:>8.2f} "
                      f"{setup:>9.1f} {'yes' if result['recorded'] else 'NO':>9}")
                shutil.rmtree(root / ".swecli", ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
