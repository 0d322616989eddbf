"""The CPU of one request's body, both wires, for real histories: the body built and encoded whole (httpx's
`json=`, as before) against the provider's `encoded_body` (each history message encoded once for as long as
it is sent: `transport.EncodedParts`), per request of a session that grows one exchange at a time.

    python bench/request_body_bench.py [--files 4] [--requests 30]

Histories: `../shared/trajectories` (real sessions, OpenAI chat format), mapped to swecli's messages. For each
file the last `--requests` prefixes that end before an assistant message are sent in order (what a session
sends per tool call); printed: the median CPU (`time.thread_time`) per request of each way, the body's size.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from swecli.llm.anthropic import AnthropicProvider  # noqa: E402
from swecli.llm.base import ModelRequest  # noqa: E402
from swecli.llm.openai import OpenAIProvider  # noqa: E402
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolCall, ToolMessage, ToolSchema, UserMessage  # noqa: E402

SHARED = ROOT.parent / "shared" / "trajectories"


def messages(raw: list[dict[str, Any]]) -> list[Message]:
    found: list[Message] = []
    for item in raw:
        role, content = item.get("role"), item.get("content") or ""
        content = content if isinstance(content, str) else json.dumps(content)
        if role == "user":
            found.append(UserMessage(content=content))
        elif role == "assistant":
            calls = tuple(ToolCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
                          for c in item.get("tool_calls") or [])
            found.append(AssistantMessage(content=content, tool_calls=calls))
        elif role == "tool":
            found.append(ToolMessage(tool_call_id=item["tool_call_id"], name=item.get("name") or "tool",
                                     content=content))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()
    tools = tuple(ToolSchema(name=f"tool{i}", description="d" * 300, parameters={"type": "object", "properties": {
        "a": {"type": "string", "description": "x" * 200}}}) for i in range(10))
    print("| history | messages | wire | body | whole body, `json=` (before) | `encoded_body` (after) |")
    print("|---|---|---|---|---|---|")
    for path in sorted(SHARED.glob("*.json"))[: args.files]:
        data = json.loads(path.read_text())
        history = messages(data["messages"])
        ends = [i for i, m in enumerate(history) if isinstance(m, AssistantMessage) and i > 0][-args.requests:]
        system = (SystemBlock(text=data.get("system") or "You are a coding agent."),)
        requests = [ModelRequest(system=system, messages=tuple(history[:end]), tools=tools, tail="Plan: go on")
                    for end in ends]
        for wire in (OpenAIProvider, AnthropicProvider):
            before, after = [], []
            for way, spent in (("before", before), ("after", after)):
                provider = wire(model="m", base_url="http://127.0.0.1:9/v1")
                for request in requests:
                    start = time.thread_time()
                    if way == "before":
                        body = json.dumps(provider.request_body(request), ensure_ascii=False, separators=(",", ":"),
                                          allow_nan=False).encode()
                    else:
                        body = provider.encoded_body(request)
                    spent.append(time.thread_time() - start)
            print(f"| {path.name[:40]} | {len(requests[-1].messages)} | {wire.default_name} | {len(body) // 1024} KB | "
                  f"{statistics.median(before) * 1000:.2f} ms | {statistics.median(after) * 1000:.2f} ms |")


if __name__ == "__main__":
    main()
