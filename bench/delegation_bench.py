"""What delegation to sub-agents buys the parent's context on an exploration-heavy session.

One scripted task ("how does httpx build and send a request, and how does its CLI use rich?") is run
twice through the real loop (`build_agent`, the real OpenAI provider over HTTP, `ScriptedLLM`), on
copies of the installed httpx and rich sources:

- without delegation: the parent itself makes the 18 exploration calls (whole-file reads and
  package-wide greps), then answers;
- with delegation: the parent hands the same exploration to two `explore` sub-agents in one reply
  (they run in parallel, 9 calls each), gets two condensed reports back, reads one file to check a
  detail, then answers.

Every request body the server records is measured on the wire with session_bench's counter: prompt
tokens (o200k, with the per-message/per-call/per-tool overheads), the parent's peak and total, and the
effective input with prefix reuse (uncached + 0.1 x the prefix shared with the previous request of the
same agent, what a caching provider bills). The children's requests are reported too, so the whole
cost of delegating is visible, not only what the parent saves.

    .venv/bin/python bench/delegation_bench.py [--context-limit 200000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from session_bench import WireCounter, fmt_tokens, make_project, measure

from swecli.delegation.definitions import EXPLORE_PROMPT
from swecli.testing.server import Call, Reply, ScriptedLLM

TASK = ("Explain how httpx builds and sends a request (from httpx.get down to the transport), and how its "
        "command-line client uses rich. Point me to the files and functions that matter.")
ANSWER = ("httpx.get -> httpx._api.request -> Client.request (httpx/_client.py): build_request makes a Request "
          "(httpx/_models.py), send() runs auth and redirects, then HTTPTransport.handle_request "
          "(httpx/_transports/default.py). The CLI (httpx/_main.py) prints with rich.console.Console and shows "
          "download progress with rich.progress.")


def read(path: str) -> Call:
    return Call("read_file", {"path": path})


def grep(pattern: str, path: str = "httpx") -> Call:
    return Call("grep", {"pattern": pattern, "path": path})


REQUEST_PATH = [grep("def request"), read("httpx/_api.py"), read("httpx/_client.py"), grep("def build_request"),
                read("httpx/_models.py"), grep("def handle_request"), read("httpx/_transports/default.py"),
                read("httpx/_urls.py"), read("httpx/_config.py")]
CLI_AND_RICH = [read("httpx/_main.py"), grep("import rich"), grep("rich\\.", "httpx/_main.py"),
                read("rich/console.py"), grep("class Progress", "rich"), read("rich/progress.py"),
                grep("def print", "rich/console.py"), read("rich/syntax.py"), read("rich/table.py")]

REPORTS = {
    "request": """httpx.get (httpx/_api.py:get) calls request() in the same file, which opens a Client and calls
Client.request (httpx/_client.py, BaseClient/Client). Client.request = build_request + send:
- build_request (httpx/_client.py) merges base_url, params, headers and cookies into a Request
  (httpx/_models.py: class Request; URL handling in httpx/_urls.py, defaults in httpx/_config.py).
- send (httpx/_client.py) -> _send_handling_auth -> _send_handling_redirects -> _send_single_request,
  which calls transport.handle_request.
- The default transport is HTTPTransport (httpx/_transports/default.py: handle_request), which maps the
  Request to an httpcore request and the httpcore response back to httpx.Response.
Not checked: async paths (AsyncClient mirrors the same steps).""",
    "rich": """The CLI is httpx/_main.py (main(), a click command). It imports rich lazily inside the functions:
- print_response / print_response_headers use rich.console.Console (rich/console.py: Console.print) and
  rich.syntax.Syntax (rich/syntax.py) to highlight JSON/HTML bodies by content type.
- download_response uses rich.progress.Progress (rich/progress.py: class Progress) with a
  DownloadColumn/TransferSpeedColumn to show the download.
- Tables: rich.table is not used by the CLI.
Nothing else in httpx imports rich (grep 'import rich' matches only httpx/_main.py).""",
}


@dataclass
class Run:
    name: str
    parent: list[dict[str, Any]]
    children: list[list[dict[str, Any]]]
    seconds: float


class Script:
    """Serves the parent's replies and each child's (told apart by its task prompt), in order."""

    def __init__(self, parent: list[Reply], children: dict[str, list[Reply]]) -> None:
        self.parent, self.children = parent, children
        self.parent_bodies: list[dict[str, Any]] = []
        self.child_bodies: dict[str, list[dict[str, Any]]] = {k: [] for k in children}
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            messages = body["messages"]
            if messages and EXPLORE_PROMPT[:40] in str(messages[0].get("content", "")):
                task = next(str(m["content"]) for m in messages if m["role"] == "user")
                key = next(k for k in self.children if k in task)
                self.child_bodies[key].append(body)
                return self.children[key].pop(0)
            self.parent_bodies.append(body)
            return self.parent.pop(0)

    def left(self) -> int:
        return len(self.parent) + sum(len(v) for v in self.children.values())


def steps_of(calls: list[Call], final: str) -> list[Reply]:
    return [*(Reply(text=f"Step {i + 1}.", calls=[c]) for i, c in enumerate(calls)), Reply(final)]


def without_delegation() -> Script:
    return Script(steps_of([*REQUEST_PATH, *CLI_AND_RICH], ANSWER), {})


def with_delegation() -> Script:
    tasks = [Call("task", {"description": "Trace a request", "prompt": "In this project, trace how an httpx "
                                                                      "request is built and sent, from httpx.get "
                                                                      "to the transport. Report files, functions."}),
             Call("task", {"description": "CLI and rich", "prompt": "In this project, find how httpx's command-line "
                                                                    "client uses rich. Report files, functions."})]
    parent = [Reply("I'll explore both parts in parallel.", calls=tasks),
              Reply("Checking one detail.", calls=[grep("def handle_request", "httpx/_transports/default.py")]),
              Reply(ANSWER)]
    return Script(parent, {"request is built": steps_of(REQUEST_PATH, REPORTS["request"]),
                           "uses rich": steps_of(CLI_AND_RICH, REPORTS["rich"])})


def run(name: str, make: Callable[[], Script], context_limit: int) -> Run:
    from swecli.assembly import build_agent
    from swecli.config import Settings
    from swecli.llm.factory import make_provider

    with tempfile.TemporaryDirectory(prefix="swecli-bench-") as tmp:
        root = make_project(Path(tmp))
        script = make()
        start = time.perf_counter()
        with ScriptedLLM([script] * script.left(), strict=False) as llm:
            settings = Settings(provider="openai-compatible", model="scripted-model", base_url=llm.base_url,
                                context_limit=context_limit, mode="auto", max_iterations=60)
            provider = make_provider(settings)
            try:
                turn = build_agent(settings, root, provider).run(TASK)
            finally:
                provider.close()
        if script.left() or llm.failures or turn.answer != ANSWER:
            raise RuntimeError(f"{name}: the session did not run as scripted ({script.left()} steps left, "
                               f"{llm.failures or turn.answer[:200]})")
        return Run(name, script.parent_bodies, list(script.child_bodies.values()), time.perf_counter() - start)


HEADERS = ("session", "parent requests", "parent peak prompt", "parent prompt total", "parent effective input",
           "sub-agent requests", "sub-agent effective input", "all effective input", "time")


def row(r: Run, counter: WireCounter) -> tuple[str, ...]:
    parent = measure(r.parent, counter)
    children = [measure(bodies, counter) for bodies in r.children]  # each child reuses only its own prefix
    child_effective = sum(c.effective for c in children)
    return (r.name, str(parent.requests), fmt_tokens(parent.largest), fmt_tokens(parent.total),
            fmt_tokens(parent.effective), str(sum(c.requests for c in children)), fmt_tokens(child_effective),
            fmt_tokens(parent.effective + child_effective), f"{r.seconds:.1f}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--context-limit", type=int, default=200_000)
    args = parser.parse_args()
    counter = WireCounter()
    rows = [row(run("explore in the parent", without_delegation, args.context_limit), counter),
            row(run("delegate to 2 sub-agents", with_delegation, args.context_limit), counter)]
    print(f"exploration of httpx + rich source (18 reads/greps), context limit {args.context_limit:,}, default "
          "context settings; o200k tokens on the recorded wire bodies; effective = uncached + 0.1 x cached prefix")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEADERS)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(HEADERS, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")


if __name__ == "__main__":
    sys.exit(main())
