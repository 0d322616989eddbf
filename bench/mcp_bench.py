"""MCP tool schemas per request, with and without deferral, and the first use of a deferred tool.

    python bench/mcp_bench.py [--requests N] [--window TOKENS]

The default window is 32,768 tokens (a local model's): these 60 schemas weigh ~7k tokens, 21% of it,
so the default budget (10%) defers them. With --window 128000 they fit the budget and are loaded.

Three stdio servers (`bench/mcp_servers.py`: github, files, database; 20 tools each, shaped like the
popular real servers) are configured for a real session (`open_session`: the real loop, the real
OpenAI-wire provider over HTTP against the scripted LLM). The same task runs twice:
- without deferral (`mcp.schema_budget` above the schemas' total): all 60 schemas in every request;
- with deferral (the default budget, 10% of the window): `tool_search` in place of the 60 schemas.

The task: the model searches for "create an issue" (deferral only), calls mcp__github__create_issue,
then answers; then N-3 more plain requests, as a longer session would make. Printed: the schema
tokens each request carried (counted from the bodies the server received, o200k_base), the total
over the session, and the first-use latency of the deferred tool: the tool_search call itself, the
tool's first call (an MCP round trip), and the extra model request the search costs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from swecli.assembly import AgentSession, open_session
from swecli.config import ContextConfig, McpConfig, McpServerConfig, MemoryConfig, Settings
from swecli.context.tokens import TOOL_SCHEMA_OVERHEAD, TokenCounter
from swecli.events import Event, ModelCallFinished, ToolFinished
from swecli.testing.server import Call, Reply, ScriptedLLM, Step

SERVERS = Path(__file__).with_name("mcp_servers.py")
KINDS = ("github", "files", "database")
COUNTER = TokenCounter("o200k_base")


def schema_tokens(body: dict[str, Any]) -> tuple[int, int, int]:
    """(all tool schemas, MCP ones incl. tool_search, number of MCP tools) in one request body."""
    total = mcp = count = 0
    for tool in body.get("tools", []):
        fn = tool["function"]
        tokens = TOOL_SCHEMA_OVERHEAD + COUNTER.text(json.dumps(fn, sort_keys=True, separators=(",", ":")))
        total += tokens
        if fn["name"].startswith("mcp__") or fn["name"] == "tool_search":
            mcp += tokens
            count += fn["name"].startswith("mcp__")
    return total, mcp, count


def run(deferral: bool, requests: int, window: int) -> dict[str, Any]:
    steps: list[Step] = []
    if deferral:
        steps.append(Reply(calls=[Call("tool_search", {"query": "create an issue in a repository"})]))
    steps.append(Reply(calls=[Call("mcp__github__create_issue", {"owner": "o", "repo": "r", "title": "bug"})]))
    steps.append(Reply("Filed the issue."))
    steps += [Reply(f"answer {i}") for i in range(requests - len(steps))]
    servers = {k: McpServerConfig(command=sys.executable, args=[str(SERVERS), k]) for k in KINDS}
    events: list[Event] = []
    with tempfile.TemporaryDirectory() as tmp, ScriptedLLM(steps) as llm:
        settings = Settings(provider="openai-compatible", base_url=llm.base_url, model="scripted-model",
                            mode="auto", context_limit=window, memory=MemoryConfig(session_notes=False),
                            context=ContextConfig(playbook=False, just_in_time=False, recitation=False),
                            mcp=McpConfig(servers=servers, schema_budget=0.1 if deferral else 10**9,
                                          startup_timeout=120))
        start = time.perf_counter()
        session: AgentSession = open_session(Path(tmp), settings, listeners=[events.append])
        assert session.mcp is not None and session.mcp.manager.wait_started(180)
        startup = time.perf_counter() - start
        session.run("file an issue about the bug")
        for i in range(requests - (3 if deferral else 2)):
            session.run(f"question {i}")
        summary = session.mcp.summary()
        warm = 0.0
        search = session.agent.tools.get("tool_search")
        if search is not None:  # the same search again, the index built: what a search costs
            start = time.perf_counter()
            search.fn(search.parse('{"query": "list pull requests"}'), session.agent.tool_ctx)
            warm = time.perf_counter() - start
        session.close()
    per_request = [schema_tokens(body) for body in llm.requests]
    finished = [e for e in events if isinstance(e, ToolFinished)]
    calls = [e for e in events if isinstance(e, ModelCallFinished)]
    return {"per_request": per_request, "startup": startup, "summary": summary, "warm": warm,
            "search": next((e.duration for e in finished if e.call.name == "tool_search"), 0.0),
            "first_call": next(e.duration for e in finished if e.call.name == "mcp__github__create_issue"),
            "model_call": sum(e.duration for e in calls) / max(1, len(calls))}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--window", type=int, default=32_768)
    args = parser.parse_args()
    without = run(False, args.requests, args.window)
    with_ = run(True, args.requests, args.window)
    print(f"3 servers x 20 tools, {args.requests} requests, window {args.window:,} tokens "
          f"(budget 10% = {args.window // 10:,})")
    print(without["summary"])
    print(with_["summary"])
    print()
    print("| request | MCP schema tokens, no deferral | MCP tools | MCP schema tokens, deferral | MCP tools |")
    print("|---|---|---|---|---|")
    for n in range(args.requests):
        a = without["per_request"][n] if n < len(without["per_request"]) else (0, 0, 0)
        b = with_["per_request"][n]
        print(f"| {n + 1} | {a[1]:,} | {a[2]} | {b[1]:,} | {b[2]} |")
    total_a = sum(r[1] for r in without["per_request"])
    total_b = sum(r[1] for r in with_["per_request"])
    print(f"| total | {total_a:,} | | {total_b:,} | |")
    print(f"\nrequests: {len(without['per_request'])} without deferral, {len(with_['per_request'])} with it "
          f"(the search costs one model request); MCP schema tokens sent: {total_b / total_a:.1%} of no-deferral")
    print(f"first use of a deferred tool: tool_search {with_['search'] * 1000:.1f} ms (a later search: "
          f"{with_['warm'] * 1000:.2f} ms; the first one waits for the index build if it has not finished) + one "
          "model request "
          f"(here {with_['model_call'] * 1000:.0f} ms on the scripted server) + the tool's first call "
          f"{with_['first_call'] * 1000:.1f} ms (no deferral: {without['first_call'] * 1000:.1f} ms)")
    print(f"servers ready after {without['startup']:.1f} s / {with_['startup']:.1f} s "
          "(in the background: the prompt never waits)")


if __name__ == "__main__":
    main()
