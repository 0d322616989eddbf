"""What a user waits for around the model: start-up, exit, and the overhead of each tool call, this tree
beside another build (the previous release by default), interleaved run by run, medians.

    python bench/latency_bench.py --old /work/startup-old [--runs 5] [--sympy DIR] [--only ROW,...]
    python bench/latency_bench.py --tokenizer [--runs 5]          # the vocabulary's load, part by part

`--old` is a checkout of the build to compare with, with its own `.venv` (`git worktree add DIR 91a4a76`,
then `python3 -m venv DIR/.venv && DIR/.venv/bin/pip install -e 'DIR[dev]'`). Both trees are byte-compiled
first (a pip install does that; an editable one run with PYTHONDONTWRITEBYTECODE=1 would compile every
module at every start). The model is the scripted server on loopback (`swecli.testing.server`), answering
at once, so every number is swecli's own time.

Rows:
- `--version`: the floor every other start-up row is compared with; its CPU time (user + system, `os.wait4`).
- first request, -p: process start to the first chat request's arrival at the server (a 2-file project); the
  CPU time the process had used when it connected to send it, and how many modules it had imported
  (`bench/first_request_probe.py`, an audit hook). On a loaded machine wall time grows with the load; CPU
  time much less, so compare the CPU rows with `--version`'s CPU. Where the kernel lets the probe count them,
  user-space instructions, which no load changes: the main thread's (the critical path), all threads', and the
  main thread's count when each step's first module was imported (`first_request_probe.PHASES`).
- first request, REPL, from Enter: the prompt shown and settled, the task typed, then Enter to arrival.
- cold / warm -p in a ~2,000-file repository (sympy 1.12's source, `pip download --no-binary :all:`; `--sympy`
  gives a directory instead): process start to exit for a one-reply task, from a copy with no `.swecli/`,
  then again on the same copy. A build left running in the background (the map builder) is waited for
  between runs, outside the timing, so it never slows the next measurement.
- per-tool-call overhead: a run of light `bash` calls (`true`); the gap between the arrival of request
  i and of request i+1, less the command's own time (measured alone), median over the calls after the first;
  first-bash-call overhead: the first such gap less that median. On 100 files (also with the thinking models
  below: what a real model, whose thinking covers the work started when its request went out, sees) and on
  the 2,000-file copy.
  `calls_thinking`: the same with a model that takes 0.5 s to answer each request (less those 0.5 s), as a
  real one does: what swecli starts while the model thinks (the next command's sandbox) is then off the path.
  `calls_kept`: the same on one kept-alive connection (`KeptAliveLLM`: chunked replies, as the real APIs and
  llama.cpp send them), the window ending at the next request's first line read by the server: the other
  rows' scripted server ends each reply with its connection, so each of their requests also opens a new one.
  `calls_streaming`: the model's 0.5 s come after its response has started (the headers and the stream's
  first event at once, `Reply.think`), as the real streaming APIs answer (Anthropic's `message_start` comes
  before any thinking); in `calls_thinking` the scripted server thinks before its headers, so reading them
  (the response object, its cookies) falls in the window there and off it here.
"""

from __future__ import annotations

import argparse
import fcntl
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from swecli.testing import server  # noqa: E402
from swecli.testing.server import Call, Reply, ScriptedLLM, Step  # noqa: E402

TASK = "fix the greeting typo in greet"
PROBE = ROOT / "bench" / "first_request_probe.py"
BASH_CALLS = 12


@dataclass
class Tree:
    label: str
    root: Path
    home: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="latency-home-")))

    @property
    def python(self) -> str:
        return str(self.root / ".venv" / "bin" / "python")

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SWECLI_") and not k.endswith("_API_KEY")}
        env.update(HOME=str(self.home), XDG_CACHE_HOME=str(self.home / ".cache"),
                   XDG_CONFIG_HOME=str(self.home / ".config"), TERM="xterm-256color", **extra)
        return env

    def argv(self, llm: ScriptedLLM, *extra: str) -> list[str]:
        return [self.python, "-m", "swecli", "--provider", "openai-compatible", "--base-url", llm.base_url,
                "--model", "scripted-model", *extra]


# --- projects ------------------------------------------------------------------------------------


def git_init(root: Path) -> Path:
    run = {"cwd": root, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "add", "-A"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "-c", "user.email=b@b", "-c", "user.name=bench", "commit", "-qm", "init"],
                   **run)  # type: ignore[call-overload]
    return root


def sample_project(base: Path, files: int = 2) -> Path:
    root = base / f"sample-{files}"
    (root / "src").mkdir(parents=True)
    (root / "src" / "greet.py").write_text('def greet(name):\n    return "Helo, " + name\n')
    for i in range(files - 1):
        (root / "src" / f"mod{i}.py").write_text(f"def helper_{i}(value):\n    return value + {i}\n")
    return git_init(root)


def sympy_source(base: Path, given: str | None) -> Path:
    """A real ~2,000-file source tree: sympy 1.12's sdist, unpacked and committed."""
    if given:
        return Path(given)
    download = base / "download"
    download.mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "sympy==1.12",
                    "-d", str(download), "-q"], check=True, capture_output=True)
    with tarfile.open(next(download.glob("sympy-*.tar.gz"))) as archive:
        archive.extractall(base, filter="data")
    return git_init(base / "sympy-1.12")


def fresh_copy(source: Path, base: Path, name: str) -> Path:
    target = base / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns(".swecli"))
    return target


def wait_for_builders(project: Path) -> None:
    """Block until no map builder holds the project's lock (the new build leaves one running at exit)."""
    lock = project / ".swecli" / "repomap" / "build.lock"
    if lock.exists():
        with open(lock, "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            fcntl.flock(handle, fcntl.LOCK_UN)


# --- measurements --------------------------------------------------------------------------------


def version_time(tree: Tree) -> dict[str, float]:
    """Wall time of `swecli --version`, and its CPU time (user + system, from `os.wait4`)."""
    start = time.monotonic()
    child = subprocess.Popen([tree.python, "-m", "swecli", "--version"], env=tree.env(), stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise RuntimeError(f"{tree.label}: swecli --version failed ({child.returncode})")
    return {"version": wall, "version_cpu": usage.ru_utime + usage.ru_stime}


def headless(tree: Tree, project: Path, steps: list[Step], *extra: str,
             llm_class: type[ScriptedLLM] = ScriptedLLM) -> tuple[float, ScriptedLLM, float]:
    """(seconds to the first request, the server, seconds to exit) of one `-p` run."""
    with llm_class(list(steps)) as llm:
        start = time.monotonic()
        done = subprocess.run(tree.argv(llm, "-p", TASK, *extra), cwd=project, env=tree.env(), text=True,
                              capture_output=True, stdin=subprocess.DEVNULL, timeout=600)
        ended = time.monotonic() - start
        if done.returncode != 0 or not llm.times:
            raise RuntimeError(f"{tree.label}: swecli -p failed ({done.returncode}): {done.stderr[-2000:]}")
    return llm.times[0] - start, llm, ended


def first_request_p(tree: Tree, project: Path) -> dict[str, float]:
    """Wall time to the first chat request, and the CPU time the process had used when it connected to send
    it (`first_request_probe.py`; every thread's, so the window probe's and any background work's count)."""
    with tempfile.NamedTemporaryFile(prefix="probe-", suffix=".jsonl") as log:
        with ScriptedLLM([Reply("done")]) as llm:
            argv = tree.argv(llm, "-p", TASK)
            argv[1:3] = [str(PROBE)]  # `python -m swecli` -> `python first_request_probe.py`
            start = time.monotonic()
            done = subprocess.run(argv, cwd=project, env=tree.env(PROBE_LOG=log.name), text=True,
                                  capture_output=True, stdin=subprocess.DEVNULL, timeout=600)
            if done.returncode != 0 or not llm.times:
                raise RuntimeError(f"{tree.label}: swecli -p failed ({done.returncode}): {done.stderr[-2000:]}")
        connects = [json.loads(line) for line in Path(log.name).read_text().splitlines()]
    sent = [c for c in connects if c["t"] <= llm.times[0]][-1]
    found = {"p": llm.times[0] - start, "p_cpu": sent["cpu"], "p_modules": sent["modules"]}
    if sent.get("main") is not None:  # instructions: this probe could count them (perf_event_open)
        found["p_main"] = sent["main"]
        found["p_threads"] = sent["main"] + sum(sent["threads"].values())
        for module, count in sent["phases"].items():
            found[f"phase {module}"] = count
    return found


def first_request_repl(tree: Tree, project: Path) -> float:
    from tests.ui.harness import Terminal

    with ScriptedLLM([Reply("done")]) as llm:
        term = Terminal(tree.argv(llm), project, tree.env(COLUMNS="160", LINES="50"))
        try:
            term.prompt()
            time.sleep(1.0)  # a person reads the banner and types: background work may finish meanwhile
            term.child.send(TASK)
            term.settle(0.2)
            sent = time.monotonic()
            term.child.send("\r")
            deadline = sent + 120
            while not llm.times and time.monotonic() < deadline:
                term._pump(0.01)
            if not llm.times:
                raise RuntimeError(f"{tree.label}: the REPL sent no request:\n{term.text[-2000:]}")
            return llm.times[0] - sent
        finally:
            term.close()


def cold_warm(tree: Tree, source: Path, base: Path) -> tuple[float, float]:
    project = fresh_copy(source, base, f"sympy-{tree.label}")
    cold = headless(tree, project, [Reply("done")])[2]
    wait_for_builders(project)
    warm = headless(tree, project, [Reply("done")])[2]
    wait_for_builders(project)
    return cold, warm


def command_alone(project: Path) -> float:
    """What `true` costs by itself, forked from Python (the floor of one bash call)."""
    samples = []
    for _ in range(20):
        start = time.monotonic()
        subprocess.run(["bash", "-c", "true"], cwd=project, check=True)
        samples.append(time.monotonic() - start)
    return statistics.median(samples)


THINKING = 0.5
"""Seconds the `calls_thinking` model takes to answer each request."""


class _TimedHTTPServer(ThreadingHTTPServer):
    """Notes when each connection was accepted (before its handler thread is started)."""

    accepted: dict[object, float]

    def process_request(self, request: Any, client_address: Any) -> None:
        self.accepted[request] = time.monotonic()
        super().process_request(request, client_address)


class _TimedHandler(server._Handler):
    arrived = 0.0

    def parse_request(self) -> bool:
        self.arrived = time.monotonic()  # its first line is in: on a kept-alive connection, where a request begins
        return super().parse_request()

    def do_POST(self) -> None:
        accepted = self.server.accepted.pop(self.request, 0.0)  # type: ignore[attr-defined]
        if self.llm.keep_alive:
            accepted = self.arrived
        before = len(self.llm.times)
        super().do_POST()
        if len(self.llm.times) > before:  # a chat request (not a metadata one): its reply is written
            self.llm.accepted.append(accepted)  # type: ignore[attr-defined]
            self.llm.written.append(time.monotonic())  # type: ignore[attr-defined]


class TimedLLM(ScriptedLLM):
    """The scripted server, also noting for each chat request when its connection was accepted and when the
    reply's last byte was written: what lies between is the test server's own work (a handler thread
    started, the headers and JSON body parsed, the reply's events built and written), not swecli's."""

    def __init__(self, steps: list[Step] | None = None) -> None:
        super().__init__(steps)
        self.accepted: list[float] = []
        self.written: list[float] = []

    def start(self) -> TimedLLM:
        handler = type("Handler", (_TimedHandler,), {"llm": self})
        httpd = _TimedHTTPServer(("127.0.0.1", 0), handler)
        httpd.accepted = {}
        httpd.daemon_threads = True
        self._server = httpd
        threading.Thread(target=httpd.serve_forever, daemon=True, name="scripted-llm").start()
        return self


@dataclass
class CallOverhead:
    """Seconds, the model's own thinking left out, `bash -c true` alone too."""

    first: float
    """The first bash call's gap beyond the median of the later ones."""
    per_call: float
    """Median gap between two requests' arrivals at the server (the row's definition since it began)."""
    swecli: float
    """Median gap from the reply's last byte written to the next connection accepted: `per_call` without
    the test server's own work (swecli reads the reply, runs the call, builds and sends the request)."""
    server: float
    """Median of the test server's own work per gap (accept to arrival, and answer to last byte written)."""


class KeptAliveLLM(TimedLLM):
    """`TimedLLM` sending its replies on a connection it keeps (`ScriptedLLM.keep_alive`), as the real APIs do:
    a request then costs no new connection, and its server-side start is its first line's arrival."""

    def __init__(self, steps: list[Step] | None = None) -> None:
        super().__init__(steps)
        self.keep_alive = True


def tool_calls(tree: Tree, project: Path, thinking: float = 0.0, kept: bool = False,
               streaming: bool = False) -> CallOverhead:
    """The overhead of a light bash call, the model's own `thinking` left out (`kept`: on one kept-alive
    connection, see `KeptAliveLLM`; `streaming`: the response started at once and the thinking after its
    first event, as the real streaming APIs answer, instead of before its headers)."""
    def think(body: dict[str, object]) -> Reply:
        time.sleep(thinking)  # before the first byte, as a model reading its prompt
        return Reply(calls=[Call("bash", {"command": "true"})])

    streamed = Reply(calls=[Call("bash", {"command": "true"})], think=thinking)
    steps: list[Step] = [streamed if streaming else think for _ in range(BASH_CALLS)]
    _, llm, _ = headless(tree, project, [*steps, Reply("done")], "--mode", "auto",
                         llm_class=KeptAliveLLM if kept else TimedLLM)
    assert isinstance(llm, TimedLLM)
    times, accepted, written = llm.times, llm.accepted, llm.written
    gaps = [b - a - thinking for a, b in itertools.pairwise(times)][:BASH_CALLS]
    own = [accepted[i + 1] - written[i] for i in range(len(gaps))]
    alone = command_alone(project)
    per_call = statistics.median(gaps[1:]) - alone
    return CallOverhead(gaps[0] - alone - per_call, per_call, statistics.median(own[1:]) - alone,
                        statistics.median(g - o for g, o in zip(gaps[1:], own[1:], strict=True)))


# --- the table -----------------------------------------------------------------------------------


@dataclass
class Row:
    name: str
    samples: dict[str, list[float]] = field(default_factory=dict)

    def add(self, label: str, value: float) -> None:
        self.samples.setdefault(label, []).append(value)

    def cell(self, label: str) -> str:
        values = self.samples.get(label)
        if not values:
            return "-"
        plain = "modules" in self.name or "instructions" in self.name
        return f"{statistics.median(values):,.0f}" if plain else fmt(statistics.median(values))


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if abs(seconds) < 1 else f"{seconds:.2f} s"


def compile_tree(tree: Tree) -> None:
    subprocess.run([tree.python, "-m", "compileall", "-q", str(tree.root / "swecli")], check=True,
                   stdout=subprocess.DEVNULL)


def measure(trees: list[Tree], runs: int, sympy: str | None, only: set[str]) -> list[Row]:
    base = Path(tempfile.mkdtemp(prefix="latency-"))
    small, hundred = sample_project(base), sample_project(base, 100)
    big = sympy_source(base, sympy) if only & {"cold", "calls"} else None
    rows = {key: Row(name) for key, name in [
        ("version", "`swecli --version`"),
        ("version_cpu", "`swecli --version`, CPU"),
        ("p", "first request, `-p`"),
        ("p_cpu", "first request, `-p`, CPU when it is sent"),
        ("p_modules", "first request, `-p`, modules imported when it is sent"),
        ("p_main", "first request, `-p`, M instructions of the main thread (from the probe's start)"),
        ("p_threads", "first request, `-p`, M instructions of all its threads"),
        ("repl", "first request, REPL, from Enter"),
        ("cold", "cold `-p`, ~2,000 files: start to exit"),
        ("warm", "warm `-p`, ~2,000 files: start to exit"),
        ("first100", "first-bash-call overhead, 100 files"),
        ("first100t", f"first-bash-call overhead, 100 files, a model that answers in {THINKING} s"),
        ("first100st", f"first-bash-call overhead, 100 files, a model whose response starts at once and answers "
                       f"in {THINKING} s"),
        ("call100", "per-tool-call overhead, 100 files"),
        ("call100t", f"per-tool-call overhead, 100 files, a model that answers in {THINKING} s"),
        ("call100_own", "per-tool-call overhead, 100 files, less the test server's own work"),
        ("call100t_own", f"per-tool-call overhead, 100 files, a model that answers in {THINKING} s, less the "
                         "test server's own work"),
        ("call100st", f"per-tool-call overhead, 100 files, a model whose response starts at once and answers in "
                      f"{THINKING} s"),
        ("call100st_own", f"per-tool-call overhead, 100 files, a model whose response starts at once and answers "
                          f"in {THINKING} s, less the test server's own work"),
        ("call100k_own", f"per-tool-call overhead, 100 files, a model that answers in {THINKING} s on a kept-alive "
                         "connection, less the test server's own work"),
        ("call100_server", "the test server's own work per call (in the bench's process)"),
        ("call100t_server", f"the test server's own work per call, a model that answers in {THINKING} s"),
        ("call100st_server", f"the test server's own work per call, a response started at once, {THINKING} s"),
        ("first2k", "first-bash-call overhead, ~2,000 files"),
        ("call2k", "per-tool-call overhead, ~2,000 files"),
        ("call2k_own", "per-tool-call overhead, ~2,000 files, less the test server's own work"),
        ("call2k_server", "the test server's own work per call, ~2,000 files"),
    ]}
    for tree in trees:
        compile_tree(tree)
        headless(tree, small, [Reply("done")])  # warm the file cache and the per-user caches
    for run in range(runs):
        for tree in trees if run % 2 == 0 else trees[::-1]:  # alternate who goes first
            for key, step in _steps(tree, small, hundred, big, base).items():
                if key in only:
                    for name, value in step().items():
                        rows.setdefault(name, Row(f"{name}: main thread's M instructions when first imported"))
                        rows[name].add(tree.label, value)
        print(f"run {run + 1}/{runs} done", file=sys.stderr)
    return [row for row in rows.values() if row.samples]


def _steps(tree: Tree, small: Path, hundred: Path, big: Path | None,
           base: Path) -> dict[str, Callable[[], dict[str, float]]]:
    steps: dict[str, Callable[[], dict[str, float]]] = {
        "version": lambda: version_time(tree),
        "p": lambda: first_request_p(tree, small),
        "repl": lambda: {"repl": first_request_repl(tree, small)},
        "calls": lambda: _call_rows("100", tool_calls(tree, hundred)),
        "calls_thinking": lambda: _call_rows("100t", tool_calls(tree, hundred, THINKING)),
        "calls_kept": lambda: {"call100k_own": tool_calls(tree, hundred, THINKING, kept=True).swecli},
        "calls_streaming": lambda: _call_rows("100st", tool_calls(tree, hundred, THINKING, streaming=True)),
    }
    if big is not None:
        steps["cold"] = lambda: dict(zip(("cold", "warm"), cold_warm(tree, big, base), strict=True))
        steps["calls2k"] = lambda: _call_rows("2k", tool_calls(tree, _settled(tree, big, base)))
    return steps


def _call_rows(suffix: str, found: CallOverhead) -> dict[str, float]:
    return {f"call{suffix}": found.per_call, f"call{suffix}_own": found.swecli, f"call{suffix}_server": found.server,
            f"first{suffix}": found.first}


def _settled(tree: Tree, source: Path, base: Path) -> Path:
    """The 2,000-file copy this tree's cold/warm runs left (its caches built), or a fresh one."""
    project = base / f"sympy-{tree.label}"
    if not project.exists():
        project = fresh_copy(source, base, f"sympy-{tree.label}")
    wait_for_builders(project)
    return project


# --- the vocabulary, part by part ----------------------------------------------------------------

TOKENIZER_PARTS = r"""
import json, sys, time
from swecli.context import tokens
spec = tokens._SPECS["o200k_base"]
out = {}
def part(key, work):
    wall, cpu = time.perf_counter(), time.thread_time()
    result = work()
    out[key] = (time.perf_counter() - wall, time.thread_time() - cpu)
    return result
ranks = part("decode", lambda: tokens._decode_ranks("o200k_base"))
tokens._write_cached_ranks("o200k_base", spec.sha256, ranks)
cached = part("cached", lambda: tokens._read_cached_ranks("o200k_base", spec.sha256))
part("import", lambda: __import__("tiktoken"))
import tiktoken
part("construct", lambda: tiktoken.Encoding("o200k_base", pat_str=spec.pat_str, mergeable_ranks=cached,
                                            special_tokens=dict(spec.special_tokens)))
print(json.dumps(out))
"""


def tokenizer(runs: int) -> None:
    """Wall time, and CPU time of the loading thread: on a loaded machine the CPU time is what the part costs
    on an idle one."""
    home = Path(tempfile.mkdtemp(prefix="latency-tok-"))
    env = {**os.environ, "XDG_CACHE_HOME": str(home)}
    parts: dict[str, list[tuple[float, float]]] = {}
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", TOKENIZER_PARTS], env=env, capture_output=True, text=True,
                             check=True, cwd=ROOT)
        for key, value in json.loads(out.stdout).items():
            parts.setdefault(key, []).append(tuple(value))
    names = {"decode": "decode the gzipped base64 file in Python (before: every process)",
             "cached": "read the kept decoded copy (marshal, per user)",
             "import": "import tiktoken",
             "construct": "tiktoken.Encoding (Rust CoreBPE from the dict; holds the GIL)"}
    print(f"| o200k_base, part | wall, median | CPU, median | CPU, best |  ({runs} fresh processes)")
    print("|---|---|---|---|")
    for key, label in names.items():
        wall, cpu = [w for w, _ in parts[key]], [c for _, c in parts[key]]
        print(f"| {label} | {fmt(statistics.median(wall))} | {fmt(statistics.median(cpu))} | {fmt(min(cpu))} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", help="a checkout of the build to compare with (with its own .venv)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sympy", help="an unpacked ~2,000-file source tree (default: download sympy 1.12)")
    parser.add_argument("--only", default="version,p,repl,cold,calls,calls2k",
                        help="comma-separated: version, p, repl, cold, calls, calls_thinking, calls_kept, "
                             "calls_streaming, calls2k")
    parser.add_argument("--tokenizer", action="store_true", help="time the vocabulary's load, part by part")
    args = parser.parse_args()
    if args.tokenizer:
        tokenizer(args.runs)
        return
    trees = ([Tree("old", Path(args.old).resolve())] if args.old else []) + [Tree("new", ROOT)]
    rows = measure(trees, args.runs, args.sympy, set(args.only.split(",")))
    labels = [t.label for t in trees]
    print(f"| what a user waits for | {' | '.join(labels)} |  (median of {args.runs}, interleaved)")
    print("|---|" + "---|" * len(labels))
    for row in rows:
        print(f"| {row.name} | {' | '.join(row.cell(label) for label in labels)} |")


if __name__ == "__main__":
    main()
