"""Where `../shared` (real trajectories and recorded provider traffic, see its README) is.

It sits next to the repository root: `../shared` from a checkout. A git worktree one level deeper
(`wt/<name>/`) finds it one more level up, so the nearest ancestor that has it wins.
"""

from __future__ import annotations

import json
from pathlib import Path

from swecli.messages import AssistantMessage, Message, SystemBlock, ToolCall, ToolMessage, ToolSchema, UserMessage

REPOSITORY = Path(__file__).resolve().parents[2]


def shared_path(*parts: str) -> Path:
    """`../shared/<parts>` from the repository, or from the nearest ancestor that has it (the plain
    `../shared` path, absent, when none does: callers test `.exists()`)."""
    for folder in REPOSITORY.parents:
        candidate = folder.joinpath("shared", *parts)
        if candidate.exists():
            return candidate
    return REPOSITORY.parent.joinpath("shared", *parts)


TRAJECTORIES = shared_path("trajectories")


def trajectory_paths() -> list[Path]:
    return sorted(TRAJECTORIES.glob("*.json")) if TRAJECTORIES.is_dir() else []


def bash_commands(paths: list[Path] | None = None) -> list[str]:
    """Every bash command the trajectories ran (the `bash` / `execute_bash` calls' `command`), in order:
    real shell lines for measuring the shell parser, the guard and the read-only rule."""
    commands = []
    for path in trajectory_paths() if paths is None else paths:
        for message in json.loads(path.read_text(encoding="utf-8"))["messages"]:
            for call in message.get("tool_calls") or []:
                if call["function"]["name"] not in ("bash", "execute_bash"):
                    continue
                try:
                    command = json.loads(call["function"]["arguments"]).get("command")
                except json.JSONDecodeError:
                    continue
                if command:
                    commands.append(command)
    return commands


Trajectory = tuple[tuple[SystemBlock, ...], tuple[ToolSchema, ...], list[Message]]


def load_trajectory(path: Path, prefix: str = "") -> Trajectory:
    """A shared trajectory as typed (system, tool schemas, history). Calls with no result in the source
    (a last submit) are dropped, as an API requires; `prefix` is put before every call id, so that
    several trajectories can be chained into one long session."""
    data = json.loads(path.read_text(encoding="utf-8"))
    system = (SystemBlock(text=data.get("system") or "", cache=True),)
    tools = tuple(ToolSchema(name=t["function"]["name"], description=t["function"].get("description", ""),
                             parameters=t["function"].get("parameters", {})) for t in data.get("tools", []))
    answered = {m.get("tool_call_id") for m in data["messages"] if m["role"] == "tool"}
    names: dict[str, str] = {}
    history: list[Message] = []
    for m in data["messages"]:
        if m["role"] == "user":
            history.append(UserMessage(content=m.get("content") or ""))
        elif m["role"] == "assistant":
            calls = tuple(ToolCall(id=prefix + c["id"], name=c["function"]["name"],
                                   arguments=c["function"]["arguments"])
                          for c in m.get("tool_calls") or [] if c["id"] in answered)
            names.update((c.id, c.name) for c in calls)
            if m.get("content") or calls:
                history.append(AssistantMessage(content=m.get("content") or "", tool_calls=calls,
                                                reasoning=m.get("reasoning_content") or ""))
        elif m["role"] == "tool" and prefix + m.get("tool_call_id", "") in names:
            call_id = prefix + m["tool_call_id"]
            history.append(ToolMessage(tool_call_id=call_id, name=names[call_id], content=m.get("content") or ""))
    return system, tools, history
