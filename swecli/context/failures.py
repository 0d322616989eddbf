"""Failure evidence: classify tool failures, spot repeats and loops, and say so in the dynamic tail.

Models under pressure retry the same failing command, or re-issue the same read over and over.
Leaving the evidence of failure in context (Manus' "keep the wrong stuff in") helps, but a long
history hides that the same thing failed three times. `FailureTracker` watches every tool call and
its result, and `note()` states it plainly: which call, how often, with what error, and to try
something else. The note goes in the tail (never cached) and disappears once the model moved on.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import field
from typing import Literal

from swecli.context.diagnostics import FAILED_TEST
from swecli.lazy import regex
from swecli.messages import AssistantMessage, Message, ToolCall, ToolMessage
from swecli.records import datarecord
from swecli.tools.facts import facts_for

FailureKind = Literal[
    "not_found", "permission", "syntax", "type", "compile", "timeout", "network", "test_failure", "invalid_args",
    "refused", "other",
]

# Checked in order: the first kind whose pattern matches wins. Refusals and argument errors come from
# swecli itself and are unambiguous; a test run's output mentions every other kind of error inside
# its tracebacks, so test failures are recognized before syntax/type/not-found.
_PATTERNS: tuple[tuple[FailureKind, re.Pattern[str]], ...] = (
    ("refused", regex(
        r"not available in plan mode|needs the user's approval|user declined|interrupted by user|"
        r"refused by (?:the )?(?:user|policy|guard)|blocked by (?:the )?(?:policy|guard)", re.IGNORECASE)),
    ("invalid_args", regex(
        r"Invalid (?:JSON )?arguments for|Arguments for \S+ must be|Unknown tool\b|"
        r"missing (?:required )?argument|unexpected keyword argument|required property", re.IGNORECASE)),
    ("timeout", regex(
        r"timed? ?out|TimeoutError|deadline exceeded|\bexit(?: code)?[: ]+124\b|took longer than", re.IGNORECASE)),
    ("test_failure", regex(
        r"^(?:FAILED|ERROR) \S+::|\b\d+ failed\b|^FAIL:|^FAILED \(|AssertionError|assert .* ==|"
        r"test result: FAILED|Tests run: \d+, Failures: [1-9]|^not ok \d+|\d+ failing\b|"
        r"^\s*--- FAIL: |^\s*Failed!\s+- Failed:|^FAILURES!$|\b[1-9]\d* failures?\b", re.MULTILINE)),
    ("syntax", regex(
        r"SyntaxError|IndentationError|TabError|syntax error|unexpected token|parse error|"
        r"unterminated|unexpected EOF|expected an indented block", re.IGNORECASE)),
    ("type", regex(
        r"TypeError|AttributeError|Incompatible types|has no attribute|is not assignable|"
        r"type mismatch|mismatched types|cannot be applied to|error TS\d+", re.IGNORECASE)),
    ("compile", regex(
        r"^\S+:\d+:\d+: (?:fatal )?error: |^\S+\(\d+,\d+\): error [A-Z]+\d+|^error(?:\[E\d+\])?: |"
        r"\*\* \(CompileError\)|^\S+\.java:\d+: error: |^\[ERROR\] \S+:\[\d+,\d+\] |^\s+\d+:\d+\s+error\s|"
        r"^✖ \d+ problems? \([1-9]|^\.{0,2}/?[\w./-]+\.go:\d+:\d+: |: undefined reference to ", re.MULTILINE)),
    ("permission", regex(
        r"Permission denied|PermissionError|(?-i:EACCES|EPERM)|Operation not permitted|access denied|"
        r"read-only file system|outside the project root", re.IGNORECASE)),
    ("network", regex(
        r"Connection refused|ConnectionError|Could not resolve host|Name or service not known|"
        r"Temporary failure in name resolution|Network is unreachable|getaddrinfo|(?-i:ECONNREFUSED|ENOTFOUND)|"
        r"SSL(?:Error|: )|No route to host|Connection reset", re.IGNORECASE)),
    ("not_found", regex(
        r"No such file or directory|FileNotFoundError|ModuleNotFoundError|ImportError|command not found|"
        r"\bnot found\b|does not exist|no matches|cannot find|could not find|unknown command|(?-i:ENOENT)",
        re.IGNORECASE)),
)

_EXIT_NONZERO = regex(r"\bexit(?:ed with)?(?: code| status)?[: =]+([1-9]\d*)\b", re.IGNORECASE)
_VOLATILE = regex(r"0x[0-9a-fA-F]+|\d+(?:\.\d+)?")

MAX_EVIDENCE_CHARS = 160


def _sample(text: str, edge: int = 20_000) -> str:
    """Head and tail of a long output: a test runner's verdict is at the end, a crash at the start."""
    return text if len(text) <= 2 * edge else text[:edge] + "\n" + text[-edge:]


def classify(tool: str, text: str) -> FailureKind:
    """The kind of a failed tool call's result text (the tool name breaks ties for shell output)."""
    head = _sample(text)
    for kind, pattern in _PATTERNS:
        if kind == "test_failure" and not facts_for(tool).is_shell:
            continue  # only a command's output is a test report; a read file may contain `assert x ==`
        if pattern.search(head):
            return kind
    return "other"


# For a test run, the per-test summary line names the test and the error; prefer it to `assert` lines.
_BEST_TEST_LINE = regex(r"^(?:FAILED|ERROR) \S+::|^FAIL: |^test result: FAILED|^not ok \d+|"
                             r"^\d+\) test .+ \(\S+\)$|^\d+\) \S+::\S+$|" + FAILED_TEST.pattern)
"""The line naming a failing test, in any runner's words (see `diagnostics`)."""


def evidence_line(text: str, kind: FailureKind) -> str:
    """The most telling line of a failure: the first one matching its kind, else the first non-empty."""
    lines = [line.strip() for line in _sample(text).splitlines() if line.strip()]
    patterns = [p for k, p in _PATTERNS if k == kind]
    if kind == "test_failure":
        patterns.insert(0, _BEST_TEST_LINE)
    chosen = next((line for p in patterns for line in lines if p.search(line)), None)
    if chosen is None:
        chosen = lines[0] if lines else "(no output)"
    return chosen if len(chosen) <= MAX_EVIDENCE_CHARS else chosen[: MAX_EVIDENCE_CHARS - 1] + "…"


def normalized_args(raw: str) -> str:
    """Arguments in a canonical form: key order and whitespace inside strings do not matter."""
    return _normalized(raw)[1]


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
"""`json.dumps` with these options, made once (it would build an encoder per call)."""


def _normalized(raw: str) -> tuple[object, str]:
    """(the arguments with the whitespace inside their strings squashed, None when they are not JSON; their
    canonical form): parsed once for both the key and the label of a call."""
    try:
        data = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return None, " ".join(raw.split())
    squashed = _squash(data)
    return squashed, _CANONICAL.encode(squashed)


def _squash(value: object) -> object:
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, dict):
        return {k: _squash(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_squash(v) for v in value]
    return value


def describe_call(call: ToolCall, limit: int = 80, normalized: tuple[object, str] | None = None) -> str:
    """How a call is named in a note: the command for a shell tool, else `tool {args}`. `normalized`: what
    `_normalized` made of its arguments, when the caller has it."""
    data, canonical = normalized or _normalized(call.arguments)
    label = ""
    if facts_for(call.name).is_shell and isinstance(data, dict):
        command = data.get("command")
        label = command if isinstance(command, str) else ""  # (squashed already)
    if not label:
        label = f"{call.name} {canonical}"
    return label if len(label) <= limit else label[: limit - 1] + "…"


@datarecord(frozen=True)
class Observation:
    """One tool call as the tracker saw it; `kind` is set when it failed."""

    key: tuple[str, str]
    label: str
    failed: bool
    kind: FailureKind | None = None
    evidence: str = ""
    signature: str = ""
    """kind + evidence with numbers masked: two failures with the same signature failed the same way."""


@datarecord
class _KeyState:
    """One distinct call's recent failures."""

    streak: list[Observation] = field(default_factory=list)
    """Failures of this exact call since it last succeeded."""
    last_seen: int = 0


@datarecord
class FailureTracker:
    """Notices a call that keeps failing the same way, or a loop of identical calls."""

    repeat_threshold: int = 3
    """Identical failing calls (same failure) before the note speaks up."""
    loop_threshold: int = 4
    """Identical calls (failing or not) within `window` recent calls that count as a loop."""
    window: int = 10
    linger: int = 5
    """A note stays this many calls after the last repeat, then the model is assumed to have moved on."""
    calls: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    """Failures per kind in this session, for `/context` and the log."""
    _recent: deque[Observation] = field(default_factory=deque)
    _keys: dict[tuple[str, str], _KeyState] = field(default_factory=dict)
    _note: tuple[int, str] | None = field(default=None, repr=False, compare=False)
    """(calls, the note made after that many): the tail asks for the note twice a turn, and it changes only
    when a call is observed."""

    def observe(self, call: ToolCall, result_text: str, is_error: bool) -> Observation:
        """Record one finished call. A shell command reporting a non-zero exit counts as failed."""
        failed = is_error or (facts_for(call.name).is_shell and bool(_EXIT_NONZERO.search(result_text[-200:])))
        normalized = _normalized(call.arguments)
        key = (call.name, normalized[1])
        obs = Observation(key, describe_call(call, normalized=normalized), failed)
        if failed:
            kind = classify(call.name, result_text)
            evidence = evidence_line(result_text, kind)
            obs = Observation(key, obs.label, True, kind, evidence, kind + ":" + _VOLATILE.sub("#", evidence))
            self.failures[kind] = self.failures.get(kind, 0) + 1
        self.calls += 1
        state = self._keys.get(key) or self._keys.setdefault(key, _KeyState())
        state.streak = [*state.streak, obs] if failed else []
        state.last_seen = self.calls
        self._recent.append(obs)
        while len(self._recent) > self.window:
            self._recent.popleft()
        return obs

    def replay(self, history: Iterable[Message]) -> None:
        """Observe the tool calls of an existing history in order (a resumed session)."""
        calls: dict[str, ToolCall] = {}
        for msg in history:
            if isinstance(msg, AssistantMessage):
                calls.update((c.id, c) for c in msg.tool_calls)
            elif isinstance(msg, ToolMessage) and msg.tool_call_id in calls:
                self.observe(calls[msg.tool_call_id], msg.content, msg.is_error)

    def repeated_failures(self) -> list[tuple[Observation, int, bool]]:
        """(latest failure, streak length, same error every time) for each call failing repeatedly.

        The same call failing the same way `repeat_threshold` times is reported; when the error
        changes between attempts (progress, e.g. fewer failing tests), it takes two more."""
        out = []
        # A call seen within `linger` calls is among the latest ones: only those are looked at.
        recent = list(self._recent)[-self.linger:] if self.window >= self.linger else None
        keys = dict.fromkeys(o.key for o in recent) if recent is not None else self._keys
        for key in keys:
            state = self._keys[key]
            streak = state.streak
            if not streak or self.calls - state.last_seen >= self.linger:
                continue
            latest = streak[-1]
            same = sum(1 for o in streak if o.signature == latest.signature)
            if same >= self.repeat_threshold or len(streak) >= self.repeat_threshold + 2:
                out.append((latest, len(streak), same == len(streak)))
        return out

    def loops(self) -> list[tuple[Observation, int]]:
        """(latest call, count) for each identical call made `loop_threshold`+ times in the window."""
        counts: dict[tuple[str, str], int] = {}
        latest: dict[tuple[str, str], Observation] = {}
        for obs in self._recent:
            counts[obs.key] = counts.get(obs.key, 0) + 1
            latest[obs.key] = obs
        return [(latest[k], n) for k, n in counts.items() if n >= self.loop_threshold]

    def note(self) -> str:
        """The evidence note for the tail, or "" when there is nothing worth saying."""
        if self._note is None or self._note[0] != self.calls:
            self._note = (self.calls, self._make_note())
        return self._note[1]

    def _make_note(self) -> str:
        repeated = self.repeated_failures()
        lines = [_failure_line(obs, n, same) for obs, n, same in repeated]
        failing = {obs.key for obs, _, _ in repeated}
        lines.extend(_loop_line(obs, n, self.window) for obs, n in self.loops() if obs.key not in failing)
        if not lines:
            return ""
        return "\n".join(["[Failure evidence]", *lines])

    def summary(self) -> str:
        """One line for `/context` and the log: failures by kind this session."""
        if not self.failures:
            return f"{self.calls} tool calls, no failures"
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.failures.items(), key=lambda kv: -kv[1]))
        return f"{self.calls} tool calls, {sum(self.failures.values())} failed ({kinds})"


def _failure_line(obs: Observation, count: int, same: bool) -> str:
    how = f"with {obs.kind}" if same else f"(latest: {obs.kind})"
    return (f"- `{obs.label}` failed {count} times in a row {how}: {obs.evidence}. "
            "Repeating it unchanged will not help; try something else (read the error, change the code, "
            "the arguments or the approach).")


def _loop_line(obs: Observation, count: int, window: int) -> str:
    return (f"- `{obs.label}` was called {count} times with identical arguments in the last {window} tool calls; "
            "you may be looping. Use the result you already have or take a different step.")
