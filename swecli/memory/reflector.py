"""The reflector: after each completed user task, turn what happened into playbook deltas.

Two passes over the task's tool-call sequence (ACE's reflector/curator, simplified):

1. Rules, always: locate before read, read before edit, run tests after edits, repeated identical
   failures, a failing command followed by a working variant, repeated edit mismatches, and whether
   a playbook bullet's command worked when it was used. Each yields a `Delta` with a confidence;
   only deltas at or above `min_confidence` are applied. Generic good habits only reinforce an
   existing bullet (`tag` by content); they never add one, so the playbook does not fill up with
   what the system prompt already says. Project-specific facts (the test command that works, the
   interpreter name) and mistakes that happened are added.
2. An LLM reflection, when enabled: the trace and the playbook go to the model, which answers with
   add/tag/remove deltas as JSON. The prompt is built by concatenation only: task text, tool output
   and bullets are full of `{`, `}` and `$`, and a `.format` template would break on them (the
   learning loop of a seed system was dead for exactly that reason). A malformed answer yields no
   deltas and a warning, never an exception.

`Reflector.reflect(history, answer)` runs both, applies the deltas to the playbook, saves it and
returns a `Reflection` whose `summary()` is one line for the log.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import field
from typing import Any, Literal

from swecli.context.failures import FailureKind, FailureTracker, classify, evidence_line
from swecli.lazy import regex
from swecli.llm.base import CancelToken, ModelRequest, Provider, complete
from swecli.memory.playbook import MAX_CONTENT_CHARS, Change, Playbook, PlaybookError, normalize_section, similarity
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolCall, ToolMessage, UserMessage
from swecli.records import datarecord
from swecli.tools.facts import ToolFacts, facts_for

TEST_COMMAND = regex(
    r"\b(?:pytest|py\.test|unittest|tox|nox|(?:npm|yarn|pnpm|bun)(?: run)? test|go test|cargo test|make (?:test|check)|"
    r"mvn test|gradle(?:w)? test|jest|vitest|mocha|rspec|phpunit|ctest|dotnet test|mix test)\b"
)
DOC_SUFFIXES = (".md", ".rst", ".txt", ".adoc")
MAX_LLM_DELTAS = 8
MAX_TRACE_STEPS = 60

# Bullets the rules add or reinforce. Fixed wording, so a lesson seen again merges with itself.
READ_BEFORE_EDIT = ("Read a file with read_file before editing it: edit_file needs the exact current text, "
                    "and edits written from memory fail to match.")
LOCATE_BEFORE_READ = "Locate files with list_files or grep before read_file; guessed paths often do not exist."
TESTS_AFTER_EDITS = "After editing code, run the relevant tests before giving the final answer."
NO_BLIND_RETRY = ("Do not repeat a failing call unchanged: after two identical failures, read the error and change "
                  "the command, the code or the approach.")
REREAD_ON_MISMATCH = ("When edit_file cannot find old_string, re-read the exact lines with read_file instead of "
                      "guessing the text again.")


@datarecord(frozen=True)
class Delta:
    op: Literal["add", "tag", "remove"]
    section: str = ""
    content: str = ""
    bullet_id: str = ""
    """For tag/remove. A tag without an id targets the bullet most similar to `content`, if any."""
    tag: Literal["helpful", "harmful", ""] = ""
    confidence: float = 0.5
    source: Literal["rules", "llm"] = "rules"
    reason: str = ""

    def describe(self) -> str:
        target = self.bullet_id or _clip(self.content, 60)
        what = {"add": "add [" + self.section + "] ", "tag": "tag " + self.tag + " ", "remove": "remove "}[self.op]
        return what + target + " (" + self.source + f" {self.confidence:.2f})"


@datarecord(frozen=True)
class Step:
    """One tool call of the task and how it went."""

    tool: str
    args: dict[str, Any]
    ok: bool
    kind: FailureKind | None
    evidence: str
    output: str

    @property
    def facts(self) -> ToolFacts:
        """What the tool is (a read, an edit, a search, a shell...), whoever's tool it was."""
        return facts_for(self.tool)

    @property
    def path(self) -> str:
        for key in ("path", "file_path", "filename"):
            value = self.args.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip().removeprefix("./")
        return ""

    @property
    def command(self) -> str:
        value = self.args.get("command")
        return " ".join(value.split()) if self.facts.is_shell and isinstance(value, str) else ""


def task_span(history: Sequence[Message]) -> tuple[str, list[Message]]:
    """The latest prompt and everything after it: the task the reflector looks at."""
    for i in range(len(history) - 1, -1, -1):
        msg = history[i]
        if isinstance(msg, UserMessage) and msg.kind == "prompt":
            return msg.content, list(history[i + 1:])
    return "", list(history)


def task_steps(messages: Sequence[Message]) -> list[Step]:
    calls: dict[str, ToolCall] = {}
    steps: list[Step] = []
    for msg in messages:
        if isinstance(msg, AssistantMessage):
            calls.update((c.id, c) for c in msg.tool_calls)
        elif isinstance(msg, ToolMessage) and msg.tool_call_id in calls:
            call = calls[msg.tool_call_id]
            kind = classify(call.name, msg.content) if msg.is_error else None
            evidence = evidence_line(msg.content, kind) if kind else ""
            steps.append(Step(call.name, call.args(), not msg.is_error, kind, evidence, msg.content[:20_000]))
    return steps


# --- rules ------------------------------------------------------------------------------------

def rule_deltas(steps: Sequence[Step], playbook: Playbook | None = None) -> list[Delta]:
    deltas = [
        *_read_before_edit(steps),
        *_locate_before_read(steps),
        *_tests_after_edits(steps),
        *_repeated_failures(steps),
        *_failed_then_fixed_command(steps),
        *_edit_mismatches(steps),
    ]
    if playbook is not None:
        deltas.extend(_bullet_evidence(steps, playbook))
    return deltas


def _read_before_edit(steps: Sequence[Step]) -> list[Delta]:
    seen: set[str] = set()
    blind_failures, edits = [], 0
    for step in steps:
        if step.facts.kind in ("read", "write") and step.path:
            seen.add(step.path)
        elif step.facts.kind == "edit" and step.path:
            edits += 1
            if not step.ok and step.path not in seen:
                blind_failures.append(step.path)
    if blind_failures:
        return [Delta("add", "files", READ_BEFORE_EDIT, confidence=0.8,
                      reason="edit_file failed on unread file(s): " + ", ".join(blind_failures[:3]))]
    if edits:
        return [Delta("tag", content=READ_BEFORE_EDIT, tag="helpful", confidence=0.6, reason="read before every edit")]
    return []


def _locate_before_read(steps: Sequence[Step]) -> list[Delta]:
    seen_output = ""
    guessed = []
    for step in steps:
        guess = step.facts.kind == "read" and step.path and not step.ok and step.kind == "not_found"
        if guess and step.path not in seen_output:
            guessed.append(step.path)
        if step.facts.locates and step.ok:
            seen_output += "\n" + step.output
    if guessed:
        return [Delta("add", "files", LOCATE_BEFORE_READ, confidence=0.75,
                      reason="read_file on guessed path(s): " + ", ".join(guessed[:3]))]
    return []


def _is_code_edit(step: Step) -> bool:
    return step.ok and step.facts.writes_files and not step.path.lower().endswith(DOC_SUFFIXES)


def _tests_after_edits(steps: Sequence[Step]) -> list[Delta]:
    last_edit = max((i for i, s in enumerate(steps) if _is_code_edit(s)), default=-1)
    if last_edit < 0:
        return []
    runs = [s for s in steps[last_edit + 1:] if TEST_COMMAND.search(s.command)]
    if not runs:
        return [Delta("add", "testing", TESTS_AFTER_EDITS, confidence=0.55, reason="code edited, no test run after")]
    deltas = [Delta("tag", content=TESTS_AFTER_EDITS, tag="helpful", confidence=0.6, reason="tests run after edits")]
    if runs[-1].ok:
        command = _clip(runs[-1].command, 160)
        deltas.append(Delta("add", "commands", "Run the tests with `" + command + "` (it worked after edits).",
                            confidence=0.7, reason="test command passed"))
    return deltas


def _repeated_failures(steps: Sequence[Step]) -> list[Delta]:
    tracker = FailureTracker(linger=len(steps) + 1)
    for i, step in enumerate(steps):
        call = ToolCall(id=str(i), name=step.tool, arguments=json.dumps(step.args, sort_keys=True))
        tracker.observe(call, step.evidence or step.output[:2_000], not step.ok)
    repeats = tracker.repeated_failures()
    if not repeats:
        return []
    obs, count, _ = repeats[0]
    return [Delta("add", "mistakes", NO_BLIND_RETRY, confidence=0.7,
                  reason="`" + obs.label + "` failed " + str(count) + " times: " + obs.evidence)]


def _failed_then_fixed_command(steps: Sequence[Step]) -> list[Delta]:
    shell = [s for s in steps if s.command]
    deltas: list[Delta] = []
    for i, failed in enumerate(shell):
        if failed.ok or failed.kind in ("refused", "timeout", "test_failure"):
            continue
        fix = next((s for s in shell[i + 1:i + 4] if s.ok and s.command != failed.command
                    and similarity(s.command, failed.command) >= 0.6), None)
        if fix is not None and fix.command not in {d.reason for d in deltas}:
            content = ("`" + _clip(failed.command, 100) + "` fails here (" + str(failed.kind) + ": "
                       + _clip(failed.evidence, 80) + "); `" + _clip(fix.command, 100) + "` works.")
            deltas.append(Delta("add", "commands", content, confidence=0.75, reason=fix.command))
    return deltas[:3]


def _edit_mismatches(steps: Sequence[Step]) -> list[Delta]:
    per_path: dict[str, int] = {}
    for step in steps:
        if step.facts.kind == "edit" and not step.ok and step.kind in ("not_found", "other"):
            per_path[step.path] = per_path.get(step.path, 0) + 1
    worst = max(per_path.items(), key=lambda kv: kv[1], default=("", 0))
    if worst[1] >= 2:
        return [Delta("add", "files", REREAD_ON_MISMATCH, confidence=0.7,
                      reason="edit_file missed " + str(worst[1]) + " times on " + worst[0])]
    return []


_BACKTICKED = regex(r"`([^`\n]{2,200})`")


def _bullet_evidence(steps: Sequence[Step], playbook: Playbook) -> list[Delta]:
    """A bullet that names a command (in backticks) is helpful if the command worked when run, harmful if not."""
    last_result = {s.command: s.ok for s in steps if s.command}
    deltas = []
    for bullet in playbook.bullets.values():
        commands = [" ".join(c.split()) for c in _BACKTICKED.findall(bullet.content)]
        outcomes = [last_result[c] for c in commands if c in last_result]
        if len(outcomes) == 1:  # exactly one named command was run: unambiguous evidence
            tag: Literal["helpful", "harmful"] = "helpful" if outcomes[0] else "harmful"
            deltas.append(Delta("tag", bullet_id=bullet.id, tag=tag, confidence=0.6,
                                reason="command in bullet was run"))
    return deltas


# --- LLM reflection ---------------------------------------------------------------------------

REFLECT_SYSTEM = """You are the reflector of a coding agent. You read the trace of one finished task and the \
agent's playbook (short lessons learned in this project) and propose a few changes to the playbook.

Good lessons are specific to this project and reusable: which command runs the tests, where things \
live, conventions, pitfalls that cost time. Do not restate generic advice. Propose nothing when \
nothing was learned.

Answer with one JSON object and nothing else:
{"deltas": [
  {"op": "add", "section": "commands", "content": "Run the tests with `make test`.", "confidence": 0.8},
  {"op": "tag", "id": "fil-00003", "tag": "helpful", "confidence": 0.7},
  {"op": "remove", "id": "cmd-00007", "confidence": 0.9}
]}
Sections: files, commands, testing, conventions, mistakes, general. Tag a bullet "helpful" when the \
trace shows it helped and "harmful" when following it went wrong; remove a bullet only when the trace \
shows it is false. At most 5 deltas; content under 300 characters."""


def reflection_request(goal: str, answer: str, steps: Sequence[Step], playbook: Playbook,
                       rule_findings: Sequence[Delta] = (), max_tokens: int = 1024) -> ModelRequest:
    """The request for the LLM reflection. Built by concatenation only (see the module docstring)."""
    parts = [
        "## Task\n", _clip_block(goal, 2_000),
        "\n\n## Final answer\n", _clip_block(answer, 2_000) or "(none)",
        "\n\n## Tool calls, in order\n", _trace(steps) or "(no tool calls)",
        "\n\n## Current playbook\n", _listing(playbook) or "(empty)",
    ]
    if rule_findings:
        parts += ["\n\n## Already noted by rules\n", "\n".join("- " + d.describe() for d in rule_findings)]
    parts.append("\n\nAnswer with the JSON object only.")
    return ModelRequest(system=(SystemBlock(text=REFLECT_SYSTEM),),
                        messages=(UserMessage(content="".join(parts), kind="note"),), max_tokens=max_tokens)


def _trace(steps: Sequence[Step]) -> str:
    shown = steps[-MAX_TRACE_STEPS:]
    lines = []
    if len(steps) > len(shown):
        lines.append("(" + str(len(steps) - len(shown)) + " earlier calls omitted)")
    for n, step in enumerate(shown, start=len(steps) - len(shown) + 1):
        target = step.command or step.path or _clip(json.dumps(step.args, ensure_ascii=False), 100)
        outcome = "ok" if step.ok else "FAILED (" + str(step.kind) + "): " + step.evidence
        lines.append(str(n) + ". " + step.tool + " " + _clip(target, 120) + " -> " + _clip(outcome, 200))
    return "\n".join(lines)


def _listing(playbook: Playbook) -> str:
    return "\n".join("- [" + b.id + "] (" + b.section + ", +" + str(b.helpful) + "/-" + str(b.harmful) + ") "
                     + b.content for b in playbook.ranked()[:80])


_FENCE = regex(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)


def parse_deltas(text: str) -> tuple[list[Delta], list[str]]:
    """Deltas from the model's answer: tolerant of code fences and text around the JSON.
    Anything unusable yields no delta and a warning saying what was wrong."""
    data = _first_json(text)
    if data is None:
        return [], ["reflection answer had no JSON object: " + _clip(" ".join(text.split()), 120)]
    items = data.get("deltas") if isinstance(data, dict) else data
    if not isinstance(items, list):
        return [], ["reflection JSON has no 'deltas' list"]
    deltas, warnings = [], []
    for n, item in enumerate(items[:MAX_LLM_DELTAS], start=1):
        delta, problem = _delta_from(item)
        if delta is not None:
            deltas.append(delta)
        else:
            warnings.append("reflection delta " + str(n) + " ignored: " + problem)
    if len(items) > MAX_LLM_DELTAS:
        warnings.append("reflection proposed " + str(len(items)) + " deltas; only the first "
                        + str(MAX_LLM_DELTAS) + " were considered")
    return deltas, warnings


def _first_json(text: str) -> Any:
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for match in re.finditer(r"[\[{]", candidate):
            try:
                value, _ = decoder.raw_decode(candidate, match.start())
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict | list):
                return value
    return None


def _delta_from(item: object) -> tuple[Delta | None, str]:
    if not isinstance(item, dict):
        return None, "not an object"
    op = item.get("op")
    confidence = item.get("confidence", 0.7)
    if not isinstance(confidence, int | float) or isinstance(confidence, bool):
        return None, "confidence is not a number"
    confidence = min(1.0, max(0.0, float(confidence)))
    if op == "add":
        section, content = item.get("section"), item.get("content")
        if not isinstance(section, str) or not isinstance(content, str) or not content.strip():
            return None, "add needs a section and content"
        if len(content) > MAX_CONTENT_CHARS:
            return None, "content longer than " + str(MAX_CONTENT_CHARS) + " characters"
        return Delta("add", section, content.strip(), confidence=confidence, source="llm"), ""
    bullet_id = item.get("id", item.get("bullet_id"))
    if op in ("tag", "remove") and not isinstance(bullet_id, str):
        return None, op + " needs a bullet id"
    if op == "remove":
        return Delta("remove", bullet_id=str(bullet_id), confidence=confidence, source="llm"), ""
    if op == "tag":
        tag = item.get("tag")
        if tag not in ("helpful", "harmful"):
            return None, "tag must be 'helpful' or 'harmful'"
        return Delta("tag", bullet_id=str(bullet_id), tag=tag, confidence=confidence, source="llm"), ""
    return None, "unknown op " + repr(op)


def llm_deltas(provider: Provider, request: ModelRequest, cancel: CancelToken | None = None) -> tuple[
        list[Delta], list[str]]:
    """Ask the model; any provider failure becomes a warning and no deltas (reflection is optional)."""
    try:
        done = complete(provider, request, cancel)
    except Exception as exc:  # ProviderError, Cancelled, a bug in a provider: never break the session
        return [], ["LLM reflection failed: " + type(exc).__name__ + ": " + str(exc)]
    return parse_deltas(done.message.content)


# --- the reflector ----------------------------------------------------------------------------

@datarecord
class Reflection:
    task: str
    deltas: list[Delta] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Deltas not applied, with why (low confidence, unknown id)."""
    warnings: list[str] = field(default_factory=list)
    llm_used: bool = False

    def summary(self) -> str:
        """One line for the log: `playbook: 1 added, 1 merged, 2 tagged, 0 removed (rules 3, llm 1; 1 skipped)`."""
        count = {a: sum(1 for c in self.changes if c.action == a) for a in ("added", "merged", "tagged", "removed")}
        rules = sum(1 for d in self.deltas if d.source == "rules")
        llm = len(self.deltas) - rules
        text = "playbook: " + ", ".join(str(n) + " " + a for a, n in count.items())
        text += " (rules " + str(rules) + (", llm " + str(llm) if self.llm_used else "")
        text += "; " + str(len(self.skipped)) + " skipped)" if self.skipped else ")"
        return text + ("; " + str(len(self.warnings)) + " warning(s)" if self.warnings else "")


MAX_REMEMBERED = 64
"""Prompts remembered as reflected on (a session's recent tasks)."""


@datarecord
class Reflector:
    playbook: Playbook
    provider: Provider | None = None
    use_llm: bool = False
    min_confidence: float = 0.5
    max_tokens: int = 1024
    _done: list[Message] = field(default_factory=list)
    """The prompts already reflected on (the messages themselves: the same words asked again, after /clear
    or a compaction, are another task)."""

    def reflect(self, history: Sequence[Message], answer: str = "", cancel: CancelToken | None = None) -> Reflection:
        """Reflect on the latest task in `history` (once: a second call for the same task does nothing, and
        says nothing: it is bookkeeping, not news for the person)."""
        goal, span = task_span(history)
        prompt = next((m for m in reversed(history) if isinstance(m, UserMessage) and m.kind == "prompt"), None)
        if prompt is not None and any(done is prompt for done in self._done):
            return Reflection(goal)
        if prompt is not None:
            self._done = [*self._done[-(MAX_REMEMBERED - 1):], prompt]
        steps = task_steps(span)
        result = Reflection(goal)
        result.deltas = rule_deltas(steps, self.playbook)
        if self.use_llm and self.provider is not None:
            request = reflection_request(goal, answer, steps, self.playbook, result.deltas, self.max_tokens)
            proposed, warnings = llm_deltas(self.provider, request, cancel)
            result.llm_used = True
            result.deltas += proposed
            result.warnings += warnings
        self.apply(result)
        return result

    def apply(self, result: Reflection) -> None:
        for delta in result.deltas:
            if delta.confidence < self.min_confidence:
                result.skipped.append(delta.describe() + ": below confidence " + str(self.min_confidence))
                continue
            try:
                change = self._apply_one(delta)
            except PlaybookError as exc:
                result.skipped.append(delta.describe() + ": " + str(exc))
                continue
            if change is None:
                result.skipped.append(delta.describe() + ": no matching bullet to reinforce")
            else:
                result.changes.append(change)
        if result.changes:
            try:
                self.playbook.save()
            except PlaybookError as exc:
                result.warnings.append(str(exc))

    def _apply_one(self, delta: Delta) -> Change | None:
        if delta.op == "add":
            return self.playbook.add(normalize_section(delta.section), delta.content)
        if delta.op == "remove":
            return self.playbook.remove(delta.bullet_id)
        bullet_id = delta.bullet_id
        if not bullet_id:
            twin = self.playbook.find_similar(delta.content)
            if twin is None:
                return None
            bullet_id = twin.id
        return self.playbook.tag(bullet_id, delta.tag)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _clip_block(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"
