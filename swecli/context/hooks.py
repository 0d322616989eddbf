"""The PreCompact hook: let the user (a shell command) or a library caller (a Python callback) weigh
in before a compaction.

The command (`[hooks] pre_compact` in config.toml) runs through the shell in the project root and
gets one JSON object on stdin:

    {"event": "pre_compact", "trigger": "auto", "tokens": 182340, "window": 200000,
     "message_count": 312, "focus": "", "strategy": "summarize", "background": true}

(`background` is true when the summary is being made ahead, on another thread, while the loop goes
on: a command that takes its time then delays nobody. It runs once per compaction either way.)

It may print one JSON object on stdout (or nothing):

    {"cancel": true}                     skip this compaction (not honoured on overflow: the request
                                         cannot be sent without it)
    {"instructions": "keep the API design notes"}   added to the summary instructions
    {"summary": "..."}                   use this text as the summary (no model call)

A non-zero exit, a timeout, or output that is not such an object produces a warning and the
compaction goes on as if there were no hook.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any

from swecli.records import datarecord

_KNOWN_KEYS = {"cancel", "instructions", "summary"}


@datarecord(frozen=True)
class PreCompactInput:
    """What a pre-compact hook is told (as JSON on its stdin)."""

    trigger: str
    """auto | manual | overflow"""
    tokens: int
    window: int
    message_count: int
    focus: str = ""
    strategy: str = "summarize"
    background: bool = False
    """The summary is being made ahead, while the loop works (`context.background_compaction`)."""

    def to_json(self) -> str:
        return json.dumps({"event": "pre_compact", "trigger": self.trigger, "tokens": self.tokens,
                           "window": self.window, "message_count": self.message_count, "focus": self.focus,
                           "strategy": self.strategy, "background": self.background})


@datarecord(frozen=True)
class PreCompactDecision:
    """What pre-compact hooks answered: cancel, extra instructions, or a summary of their own."""

    cancel: bool = False
    instructions: str = ""
    summary: str = ""
    warnings: tuple[str, ...] = field(default=())

    def combined(self, other: PreCompactDecision) -> PreCompactDecision:
        return PreCompactDecision(
            cancel=self.cancel or other.cancel,
            instructions="\n".join(t for t in (self.instructions, other.instructions) if t),
            summary=other.summary or self.summary,
            warnings=self.warnings + other.warnings,
        )


PreCompactCallback = Callable[[PreCompactInput], "PreCompactDecision | dict[str, Any] | None"]
"""Library hook: return a decision, the same dict the command would print, or None."""


def run_command_hook(command: str, payload: PreCompactInput, cwd: Path, timeout: float) -> PreCompactDecision:
    """Run the configured command; every failure becomes a warning, never an exception."""
    try:
        proc = subprocess.run(command, shell=True, input=payload.to_json(), capture_output=True, text=True,
                              cwd=cwd, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return _warn(f"pre_compact hook timed out after {timeout:g}s (hooks.timeout); compacting without it")
    except OSError as exc:
        return _warn(f"pre_compact hook could not start ({exc}); compacting without it")
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        return _warn(f"pre_compact hook exited with status {proc.returncode} {detail[0][:200]!r}; "
                     "compacting without it")
    return parse_decision(proc.stdout, "pre_compact hook")


def parse_decision(raw: str | dict[str, Any] | PreCompactDecision | None, source: str) -> PreCompactDecision:
    if raw is None:
        return PreCompactDecision()
    if isinstance(raw, PreCompactDecision):
        return raw
    data: Any = raw
    if isinstance(raw, str):
        if not raw.strip():
            return PreCompactDecision()
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            return _warn(f"{source} printed invalid JSON ({exc.msg} at position {exc.pos}); ignoring its output")
    if not isinstance(data, dict):
        return _warn(f"{source} must answer a JSON object, got {type(data).__name__}; ignoring its output")
    return _decision_from(data, source)


def _decision_from(data: dict[str, Any], source: str) -> PreCompactDecision:
    warnings = []
    unknown = sorted(set(data) - _KNOWN_KEYS)
    if unknown:
        warnings.append(f"{source} answered unknown key(s) {', '.join(unknown)}; known: cancel, instructions, summary")
    values: dict[str, Any] = {}
    for key, kind in (("cancel", bool), ("instructions", str), ("summary", str)):
        if key not in data:
            continue
        if isinstance(data[key], kind):
            values[key] = data[key]
        else:
            warnings.append(f"{source}: '{key}' must be a {kind.__name__}; ignored")
    return PreCompactDecision(**values, warnings=tuple(warnings))


def run_pre_compact(
    payload: PreCompactInput,
    *,
    command: str = "",
    callback: PreCompactCallback | None = None,
    cwd: Path | None = None,
    timeout: float = 30.0,
) -> PreCompactDecision:
    """Run the command hook then the callback; their answers combine (either may cancel)."""
    decision = PreCompactDecision()
    if command.strip():
        decision = decision.combined(run_command_hook(command, payload, cwd or Path.cwd(), timeout))
    if callback is not None:
        try:
            answer = callback(payload)
        except Exception as exc:  # a library caller's bug must not kill the session
            decision = decision.combined(_warn(f"pre_compact callback raised {type(exc).__name__}: {exc}"))
        else:
            decision = decision.combined(parse_decision(answer, "pre_compact callback"))
    return decision


def _warn(text: str) -> PreCompactDecision:
    return PreCompactDecision(warnings=(text,))
