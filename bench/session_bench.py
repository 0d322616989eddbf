"""What the context mechanisms buy on a long session: prompt tokens, prefix reuse, effective input.

A scripted 40-step session (whole-file reads of a real library's source, package-wide greps, a
failing pytest suite run through bash, edits) runs through the real loop: `build_agent` with the
real OpenAI provider over HTTP against `ScriptedLLM`. Every request body the server records is
measured on the wire:

- prompt tokens: o200k tokens of each message's text (content, tool-call names and arguments)
  plus the same per-message/per-call/per-tool overheads as `swecli.context.tokens`, plus the tools;
- prefix reuse: the leading messages a request shares byte-for-byte (sorted-keys JSON) with the
  previous request, in tokens: what a provider's prompt cache can serve;
- effective input: uncached + 0.1 x cached (what a caching provider bills, in uncached tokens);
- cache breaks: requests that do not reuse all of the previous request (a trailing user message,
  the dynamic tail, aside): each is a rewrite of something already sent;
- compactions and summary requests made by the context engine;
- append-only violations: a `PrefixMonitor` watches every request the loop builds, told about each
  deliberate rewrite by the loop's `HistoryReplaced` events; any other change of the prefix counts.

Configurations toggle `Settings.context` flags; a flag the engine does not know yet is skipped.
`--bench-wiring` applies offload (in `tool_content`) and decay (before `prepare`) from the bench
itself, the way ContextManager is meant to call them, for a swecli whose manager does not call them
yet (ignored when it does); rows measured that way are marked.

    /tmp/venv/bin/python bench/session_bench.py [--context-limit 200000] [--only baseline,offload]
                                                [--bench-wiring]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swecli.context.prefix import PrefixMonitor
from swecli.context.tokens import MESSAGE_OVERHEAD, TOOL_CALL_OVERHEAD, TOOL_SCHEMA_OVERHEAD, Tokenizer
from swecli.testing.server import Call, Reply, ScriptedLLM

LIBRARIES = ("httpx", "rich")
MECHANISMS = ("offload", "decay", "recitation", "failure_evidence", "playbook", "just_in_time")
CONFIGS: dict[str, dict[str, bool]] = {
    "baseline (all off)": {},
    "offload": {"offload": True},
    "decay": {"decay": True},
    "offload + decay": {"offload": True, "decay": True},
    "all mechanisms on": {m: True for m in MECHANISMS},
}
SUMMARY = "### Current task and state\nFixing the failing URL tests in tests/test_bugs.py."
TASK = ("The test suite in tests/ fails. Study the httpx package in this project (and rich, which the CLI "
        "uses), find out why the tests in tests/test_bugs.py fail, and fix the tests' wrong expectations.")

FAILING_TESTS = '''\
"""Expectations about httpx, several of them wrong on purpose."""

import pytest

import httpx


@pytest.mark.parametrize("n", range(30))
def test_url_join(n):
    base = httpx.URL("https://example.org/api/v1/")
    joined = base.join(f"items/{n}?page={n}")
    assert str(joined) == f"https://example.org/api/items/{n}?page={n}"


@pytest.mark.parametrize("name", ["Content-Type", "X-Trace", "Accept", "User-Agent"])
def test_header_case(name):
    headers = httpx.Headers({name: "value"})
    assert list(headers.raw) == [(name.encode(), b"value")]


def test_query_params_order():
    params = httpx.QueryParams({"b": "2", "a": "1"})
    assert str(params) == "a=1&b=2"


def test_status_reason():
    assert httpx.codes.get_reason_phrase(418) == "I am a teapot"


def test_request_content_length():
    request = httpx.Request("POST", "https://example.org", content=b"x" * 10)
    assert request.headers["Content-Length"] == "11"
'''


def script(python: str) -> list[Call]:
    """Forty tool calls: what an agent does on a first pass through an unfamiliar library."""
    pytest_run = f"{python} -m pytest -p no:cacheprovider tests"
    read = lambda path: Call("read_file", {"path": path})  # noqa: E731
    grep = lambda pattern, path="httpx": Call("grep", {"pattern": pattern, "path": path})  # noqa: E731
    fix = lambda old, new: Call("edit_file", {"path": "tests/test_bugs.py", "old_string": old,  # noqa: E731
                                              "new_string": new})
    return [
        Call("list_files", {}), Call("list_files", {"path": "httpx", "glob": "**/*.py"}),
        Call("bash", {"command": pytest_run}),
        read("tests/test_bugs.py"), read("httpx/_urls.py"), read("httpx/_urlparse.py"), grep("def join"),
        read("httpx/_models.py"), grep("def "), read("httpx/_client.py"),
        fix('"https://example.org/api/items/', '"https://example.org/api/v1/items/'),
        Call("bash", {"command": pytest_run}),
        grep("class Headers", "httpx"), grep("raw", "httpx/_models.py"), read("httpx/_utils.py"),
        fix("assert list(headers.raw) == [(name.encode(), b\"value\")]",
            "assert headers[name] == \"value\""),
        Call("bash", {"command": pytest_run}),
        read("httpx/_status_codes.py"), grep("teapot", "."), read("httpx/_content.py"),
        grep("Content-Length"), read("httpx/_exceptions.py"), read("httpx/_config.py"),
        fix('== "I am a teapot"', '== "I\'m a teapot"'), fix('== "11"', '== "10"'),
        Call("bash", {"command": pytest_run}),
        read("httpx/_main.py"), grep("import rich", "httpx"), read("rich/console.py"), grep("def ", "rich"),
        read("rich/progress.py"), read("httpx/_api.py"), read("httpx/_decoders.py"),
        grep("self\\._", "httpx/_client.py"), read("httpx/_auth.py"),
        fix('assert str(params) == "a=1&b=2"', 'assert str(params) == "b=2&a=1"'),
        Call("bash", {"command": pytest_run}),
        Call("write_file", {"path": "NOTES.md", "content": "Fixed five wrong expectations in tests/test_bugs.py.\n"}),
        Call("bash", {"command": "git status --short || true"}),
        Call("bash", {"command": f"{pytest_run} -q"}),
    ]


# --- the project and the run ----------------------------------------------------------------------

def make_project(base: Path) -> Path:
    root = base / "project"
    import importlib.util

    for lib in LIBRARIES:
        spec = importlib.util.find_spec(lib)
        if spec is None or spec.origin is None:
            raise SystemExit(f"the bench reads the source of {lib}; install it in this Python ({sys.executable})")
        shutil.copytree(Path(spec.origin).parent, root / lib, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "tests").mkdir()
    (root / "tests" / "test_bugs.py").write_text(FAILING_TESTS)
    return root


def is_summary_request(body: dict[str, Any]) -> bool:
    return not body.get("tools")


def scripted_steps(calls: list[Call]) -> tuple[Callable[[dict[str, Any]], Reply], list[Reply]]:
    """One step function serving the script in order, and any compaction summary request on the side."""
    queue = [Reply(text=f"Step {i + 1}.", calls=[call]) for i, call in enumerate(calls)] + [Reply("Done.")]

    def step(body: dict[str, Any]) -> Reply:
        return Reply(SUMMARY) if is_summary_request(body) else queue.pop(0)

    return step, queue


OVERRIDES: dict[str, str] = {}
"""`--set key=value` for ContextConfig (e.g. decay_min_savings_tokens=10000), applied to every configuration."""


def settings_for(flags: dict[str, bool], base_url: str, context_limit: int) -> Any:
    from swecli.config import ContextConfig, Settings

    known = ContextConfig.model_fields
    values: dict[str, Any] = {m: flags.get(m, False) for m in MECHANISMS if m in known}
    context = ContextConfig(**{**values, **OVERRIDES})
    return Settings(provider="openai-compatible", model="scripted-model", base_url=base_url, api_key="",
                    context_limit=context_limit, mode="auto", max_iterations=60, context=context)


@dataclass
class Run:
    name: str
    bodies: list[dict[str, Any]]
    compactions: int
    answer: str
    seconds: float
    monitor: PrefixMonitor
    skipped: list[str] = field(default_factory=list)
    bench_wired: bool = False


def watch_prefix(agent: Any) -> PrefixMonitor:
    """Observe every request the loop builds; each HistoryReplaced event marks a deliberate rewrite."""
    from swecli.events import HistoryReplaced

    context = agent.context
    monitor = PrefixMonitor(context.counter)
    build = context.request

    def request(history: list[Any]) -> Any:
        built = build(history)
        monitor.observe(built)
        return built

    context.request = request
    previous = agent.on_event

    def on_event(event: Any) -> None:
        if isinstance(event, HistoryReplaced):
            monitor.mark_rewrite(event.reason)
        previous(event)

    agent.on_event = on_event
    return monitor


def manager_is_wired(agent: Any) -> bool:
    """Whether this swecli's ContextManager calls offload and decay itself."""
    return getattr(agent.context, "mechanisms", None) is not None


def bench_wiring(agent: Any, root: Path) -> None:
    """Offload and decay called from outside the manager, as ContextManager is meant to call them."""
    from swecli.context.budget import decay_recent_for
    from swecli.context.decay import decay, saving_reference
    from swecli.context.manager import has_open_calls
    from swecli.context.offload import offload

    context = agent.context
    config = context.config
    tool_content, prepare = context.tool_content, context.prepare

    def offloading_tool_content(call: Any, result: Any) -> str:
        content: str = tool_content(call, result)
        if config.offload:
            done = offload(root, call.id, call.name, content, context.counter.text, config.offload_threshold_tokens,
                           config.offload_preview_lines, arguments=call.arguments)
            content = done.content if done is not None else content
        return content

    def decaying_prepare(history: list[Any], provider: Any) -> list[Any]:
        if config.decay and history and not has_open_calls(history):
            keep = decay_recent_for(context.window, config.keep_recent_tokens)
            result = decay(history, context.counter, keep, config.decay_min_savings_tokens,
                           reference_for=saving_reference(root))
            if result.changed:
                agent.replace_history(result.history, "decay")
                history = agent.history
        out: list[Any] = prepare(history, provider)
        return out

    context.tool_content = offloading_tool_content
    context.prepare = decaying_prepare


def run_config(name: str, flags: dict[str, bool], context_limit: int, wiring: bool) -> Run:
    from swecli.assembly import build_agent
    from swecli.config import ContextConfig
    from swecli.llm.factory import make_provider

    with tempfile.TemporaryDirectory(prefix="swecli-bench-") as tmp:
        root = make_project(Path(tmp))
        step, queue = scripted_steps(script(sys.executable))
        start = time.perf_counter()
        with ScriptedLLM([step] * 200, strict=False) as llm:
            settings = settings_for(flags, llm.base_url, context_limit)
            provider = make_provider(settings)
            try:
                agent = build_agent(settings, root, provider)
                monitor = watch_prefix(agent)
                wiring = wiring and not manager_is_wired(agent)
                if wiring:
                    bench_wiring(agent, root)
                turn = agent.run(TASK)
            finally:
                provider.close()
            bodies = list(llm.requests)
        if queue or llm.failures:
            raise RuntimeError(f"{name}: the session did not run to the end ({len(queue)} steps left, "
                               f"{llm.failures or turn.answer})")
        skipped = [m for m in flags if m not in ContextConfig.model_fields]
        return Run(name, bodies, len(agent.context.compactions), turn.answer, time.perf_counter() - start, monitor,
                   skipped, wiring and any(flags.get(k) for k in ("offload", "decay")))


# --- wire measurements ----------------------------------------------------------------------------

class WireCounter:
    def __init__(self) -> None:
        self.text = Tokenizer("o200k_base")
        self._seen: dict[str, int] = {}

    def message(self, serialized: str, message: dict[str, Any]) -> int:
        cached = self._seen.get(serialized)
        if cached is None:
            cached = self._seen[serialized] = self._count(message)
        return cached

    def _count(self, message: dict[str, Any]) -> int:
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        total = MESSAGE_OVERHEAD + self.text(str(content))
        for call in message.get("tool_calls") or []:
            fn = call.get("function", {})
            total += TOOL_CALL_OVERHEAD + self.text(fn.get("name", "")) + self.text(fn.get("arguments", ""))
        return total

    def tools(self, tools: list[dict[str, Any]]) -> int:
        text = json.dumps(tools, sort_keys=True, separators=(",", ":"))
        cached = self._seen.get(text)
        if cached is None:
            cached = self._seen[text] = self.text(text) + TOOL_SCHEMA_OVERHEAD * len(tools)
        return cached


@dataclass
class Measured:
    total: int = 0
    shared: int = 0
    largest: int = 0
    breaks: int = 0
    requests: int = 0
    summaries: int = 0

    @property
    def effective(self) -> float:
        return self.total - self.shared + 0.1 * self.shared

    @property
    def reuse(self) -> float:
        return self.shared / self.total if self.total else 0.0


def units(body: dict[str, Any], counter: WireCounter) -> list[tuple[str, str, int]]:
    """(role, serialized, tokens) per cacheable piece in wire order: the tools, then each message."""
    out = []
    if body.get("tools"):
        tools = body["tools"]
        out.append(("tools", json.dumps(tools, sort_keys=True), counter.tools(tools)))
    for message in body.get("messages", []):
        text = json.dumps(message, sort_keys=True, ensure_ascii=False)
        out.append((str(message.get("role")), text, counter.message(text, message)))
    return out


def measure(bodies: list[dict[str, Any]], counter: WireCounter) -> Measured:
    result = Measured()
    previous: list[tuple[str, str, int]] = []
    for body in bodies:
        current = units(body, counter)
        shared = 0
        for old, new in zip(previous, current, strict=False):
            if old[1] != new[1]:
                break
            shared += 1
        tokens = sum(u[2] for u in current)
        result.total += tokens
        result.shared += sum(u[2] for u in current[:shared])
        result.largest = max(result.largest, tokens)
        result.requests += 1
        result.summaries += is_summary_request(body)
        # Only a trailing user message of the previous request (the dynamic tail) may go unreused.
        reusable = len(previous) - (1 if previous and previous[-1][0] == "user" else 0)
        result.breaks += bool(previous) and shared < reusable
        previous = current
    return result


def fmt_tokens(n: float) -> str:
    return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.0f}k"


HEADERS = ("configuration", "requests", "prompt tokens", "prefix reuse", "effective input", "largest prompt",
           "cache breaks", "compactions", "violations", "time")


def table_row(label: str, run: Run, m: Measured) -> tuple[str, ...]:
    return (label, str(m.requests), fmt_tokens(m.total), f"{m.reuse:.1%}", fmt_tokens(m.effective),
            fmt_tokens(m.largest), str(m.breaks), f"{run.compactions} ({m.summaries} req)",
            str(run.monitor.stats.violations), f"{run.seconds:.1f}s")


def print_table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEADERS)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(HEADERS, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--context-limit", type=int, default=200_000)
    parser.add_argument("--only", default="", help="comma-separated configuration names (prefix match)")
    parser.add_argument("--bench-wiring", action="store_true",
                        help="apply offload and decay from the bench (for a manager that does not call them yet)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a context setting for every configuration, e.g. decay_min_savings_tokens=10000")
    args = parser.parse_args()
    OVERRIDES.update(item.split("=", 1) for item in args.set)
    chosen = [n for n in CONFIGS if not args.only or any(n.startswith(o.strip()) for o in args.only.split(","))]
    counter = WireCounter()
    rows = []
    for name in chosen:
        run = run_config(name, CONFIGS[name], args.context_limit, args.bench_wiring)
        rows.append(table_row(name + (" *" if run.bench_wired else ""), run, measure(run.bodies, counter)))
        if run.skipped:
            print(f"note: {name}: flags unknown to this swecli, not set: {', '.join(run.skipped)}")
    print(f"40-step session on {' + '.join(LIBRARIES)} source, context limit {args.context_limit:,}; "
          "o200k tokens on the recorded wire bodies; effective = uncached + 0.1 x cached"
          + (f"; {', '.join(args.set)}" if args.set else ""))
    print_table(rows)
    if any(r[0].endswith(" *") for r in rows):
        print("* offload/decay applied by the bench's own wiring (bench_wiring), not by ContextManager")


if __name__ == "__main__":
    main()
