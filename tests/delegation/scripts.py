"""Scripts for a parent and its sub-agents on one ScriptedLLM: each request goes to the script of
whoever sent it (a sub-agent's requests carry its system prompt; each child is told apart by its task)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from swecli.delegation.definitions import EXPLORE_PROMPT
from swecli.testing.server import Reply, Step

Script = list[Reply | Callable[[dict[str, Any]], Reply]]


def system_text(body: dict[str, Any]) -> str:
    if isinstance(body.get("system"), list):
        return "\n".join(block["text"] for block in body["system"])
    first = body["messages"][0]
    return str(first["content"]) if first["role"] == "system" else ""


def first_user_text(body: dict[str, Any]) -> str:
    for message in body["messages"]:
        if message["role"] == "user":
            content = message["content"]
            return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)
    return ""


def is_child(body: dict[str, Any], marker: str = EXPLORE_PROMPT[:40]) -> bool:
    return marker in system_text(body)


@dataclass
class Router:
    parent: Script
    children: dict[str, Script]
    """Keyed by a phrase of the child's task prompt."""
    child_marker: str = EXPLORE_PROMPT[:40]
    parent_bodies: list[dict[str, Any]] = field(default_factory=list)
    child_bodies: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self.child_marker in system_text(body):
                task = first_user_text(body)
                key = next(k for k in self.children if k in task)
                self.child_bodies.setdefault(key, []).append(body)
                step = self.children[key].pop(0)
            else:
                self.parent_bodies.append(body)
                step = self.parent.pop(0)
        return step(body) if callable(step) else step

    def steps(self) -> list[Step]:
        total = len(self.parent) + sum(len(s) for s in self.children.values())
        return [self] * total

    def assert_used(self) -> None:
        left = {k: len(v) for k, v in self.children.items() if v}
        assert not self.parent and not left, f"unused steps: parent {len(self.parent)}, children {left}"


def tool_names(body: dict[str, Any]) -> list[str]:
    return sorted(t.get("name") or t["function"]["name"] for t in body.get("tools", []))

