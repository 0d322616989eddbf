"""The CPU of one request's body, both wires, for real histories: the body built and encoded whole (httpx's
`json=`, as before) against the provider's `encoded_body` (each history message encoded once for as long as
it is sent: `transport.EncodedParts`), per request of a session that grows one exchange at a time.

    python bench/request_body_bench.py [--files 4] [--requests 30]

Histories: `../shared/trajectories` (real sessions, OpenAI chat format), as
`swecli.testing.shared.load_trajectory` maps them. For each file the last `--requests` prefixes that end before an
assistant message are sent in order (what a session sends per tool call); printed: the median CPU
(`time.thread_time`) per request of each way, the body's size.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from swecli.llm.anthropic import AnthropicProvider  # noqa: E402
from swecli.llm.base import ModelRequest  # noqa: E402
from swecli.llm.openai import OpenAIProvider  # noqa: E402
from swecli.messages import AssistantMessage, ToolSchema  # noqa: E402
from swecli.testing.shared import load_trajectory, trajectory_paths  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()
    tools = tuple(ToolSchema(name=f"tool{i}", description="d" * 300, parameters={"type": "object", "properties": {
        "a": {"type": "string", "description": "x" * 200}}}) for i in range(10))
    print("| history | messages | wire | body | whole body, `json=` (before) | `encoded_body` (after) |")
    print("|---|---|---|---|---|---|")
    for path in trajectory_paths()[: args.files]:
        system, _, history = load_trajectory(path)
        ends = [i for i, m in enumerate(history) if isinstance(m, AssistantMessage) and i > 0][-args.requests:]
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
