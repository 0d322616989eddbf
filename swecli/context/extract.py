"""Deterministic facts compaction keeps next to the model's summary.

A model's summary can silently drop what matters; these are extracted by rules instead: files
created / modified / read, commands run with their exit codes, error and test-result lines
verbatim (as pytest, jest, go test, cargo, javac, tsc... print them: see `diagnostics`), and the
`path:line` locations the session found. They render as a markdown section that
`parse_facts` reads back, so a later compaction carries them forward (merged, bounded) instead of
asking a model to remember them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import field, fields
from typing import Any

from swecli.context.diagnostics import scan
from swecli.lazy import regex
from swecli.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from swecli.records import datarecord
from swecli.tools.facts import facts_for

LIMITS = {
    "files_created": 40,
    "files_modified": 40,
    "files_read": 40,
    "commands": 30,
    "errors": 25,
    "test_results": 20,
    "locations": 40,
    "archives": 10,
}
"""Newest entries win: the facts section stays bounded however many compactions a session has."""

MAX_LINE_CHARS = 300
FACTS_HEADING = "## Facts extracted from the transcript"

_TITLES = {
    "files_created": "Files created",
    "files_modified": "Files modified",
    "files_read": "Files read",
    "commands": "Commands run (exit code)",
    "errors": "Error lines (verbatim)",
    "test_results": "Test results (verbatim)",
    "locations": "Locations found (path:line)",
    "archives": "Full transcripts of compacted history",
}


@datarecord
class Facts:
    """What the history shows was done (files, commands, errors, locations), kept next to a summary."""

    files_created: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    """Rendered as `[exit N] command` (`[exit ?]` when unknown), first line of the command."""
    errors: list[str] = field(default_factory=list)
    test_results: list[str] = field(default_factory=list)
    locations: list[str] = field(default_factory=list)
    archives: list[str] = field(default_factory=list)

    def merged(self, newer: Facts) -> Facts:
        """Both sets, de-duplicated (a repeated item moves to its newest position), bounded."""
        out = Facts()
        for f in fields(Facts):
            items = _dedupe_keep_last([*getattr(self, f.name), *getattr(newer, f.name)])
            setattr(out, f.name, items[-LIMITS[f.name]:])
        return out

    def is_empty(self) -> bool:
        return not any(getattr(self, f.name) for f in fields(Facts))


def _dedupe_keep_last(items: list[str]) -> list[str]:
    last = {item: i for i, item in enumerate(items)}
    return [item for i, item in enumerate(items) if last[item] == i]


# --- extraction -------------------------------------------------------------------------------

_PATH_KEYS = ("path", "file_path", "filename", "file", "target_file")
_EDITOR_COMMANDS = {"create": "files_created", "str_replace": "files_modified", "insert": "files_modified",
                    "edit": "files_modified", "undo_edit": "files_modified", "view": "files_read"}

_EXIT_PATTERNS = [
    regex(r"<returncode>\s*(-?\d+)\s*</returncode>"),
    regex(r"\bexit(?:ed with)?(?: code|_code| status)?[:=]?\s*(-?\d+)\b", re.IGNORECASE),
    regex(r"\breturn ?code[:=]?\s*(-?\d+)\b", re.IGNORECASE),
]
# `> file` / `>> file`, not `2>&1`, `>=1.0` (a version pin) or `->` (an arrow in inline code).
_REDIRECT = regex(r"(?<![0-9&>=<-])>>?\s*(['\"]?)([\w./~][\w./~+-]*)\1(?![=\w])")
# Frames in installed libraries and pseudo-files say little about the project being worked on.
_THIRD_PARTY = regex(r"site-packages|dist-packages|node_modules/|/lib/python\d|^<|^/usr/|^/rustc/|^/nix/")
_HEREDOC = regex(r"<<-?\s*(['\"]?)\w+\1")
_SED_INPLACE = regex(r"\bsed\s+(?:-\w*i\w*|--in-place)\b")


def extract_facts(history: Iterable[Message], meta: Mapping[str, Mapping[str, Any]] | None = None) -> Facts:
    """Facts from a span of history. `meta` maps tool-call ids to `ToolResult.meta` (exit codes,
    paths) when the context manager saw the results being made; text patterns cover the rest."""
    meta = meta or {}
    facts = Facts()
    calls: dict[str, ToolCall] = {}
    for msg in history:
        if isinstance(msg, AssistantMessage):
            for call in msg.tool_calls:
                calls[call.id] = call
        elif isinstance(msg, ToolMessage):
            _from_result(facts, calls.get(msg.tool_call_id), msg, meta.get(msg.tool_call_id, {}))
        elif isinstance(msg, UserMessage) and msg.kind == "summary":
            facts = facts.merged(parse_facts(msg.content))
    return facts.merged(Facts())  # dedupe and bound


def _from_result(facts: Facts, call: ToolCall | None, result: ToolMessage, meta: Mapping[str, Any]) -> None:
    if call is not None:
        args = call.args()
        _file_facts(facts, call.name, args, result.is_error, meta)
        command = _shell_command(call.name, args)
        if command:
            facts.commands.append(f"[exit {_exit_code(result, meta)}] {_one_line(command)}")
            if not result.is_error:
                facts.files_modified.extend(_shell_writes(command))
    _scan_output(facts, result.content)


def _scan_output(facts: Facts, text: str) -> None:
    """Test results, error lines and project locations, as each ecosystem prints them (`diagnostics`)."""
    found = scan(text)
    facts.test_results.extend(_clip(line) for line in found.tests)
    facts.errors.extend(_clip(line) for line in found.errors)
    facts.locations.extend(f"{path}:{line}" for path, line in found.locations
                           if not path[0].isdigit() and not _THIRD_PARTY.search(path))


def _path_arg(args: Mapping[str, Any], meta: Mapping[str, Any]) -> str:
    for key in _PATH_KEYS:
        value = meta.get(key) if key in meta else args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _file_facts(facts: Facts, tool: str, args: Mapping[str, Any], failed: bool, meta: Mapping[str, Any]) -> None:
    path = _path_arg(args, meta)
    if not path:
        return
    kind = facts_for(tool).kind
    bucket = ""
    if isinstance(args.get("command"), str) and args["command"] in _EDITOR_COMMANDS:
        bucket = _EDITOR_COMMANDS[args["command"]]  # str_replace_editor (SWE-agent, OpenHands)
    elif kind == "write":
        bucket = "files_modified" if meta.get("existed") else "files_created"
    elif kind == "edit":
        bucket = "files_modified"
    elif kind == "read":
        bucket = "files_read"
    if bucket and (not failed or bucket == "files_read"):
        getattr(facts, bucket).append(path)


def _shell_command(tool: str, args: Mapping[str, Any]) -> str:
    command = args.get("command", args.get("cmd"))
    if facts_for(tool).is_shell and isinstance(command, str):
        return command.strip()
    return ""


def _exit_code(result: ToolMessage, meta: Mapping[str, Any]) -> str:
    code = meta.get("exit_code")
    if isinstance(code, int):
        return str(code)
    # Some agents print the code first (`<returncode>`), shells and swecli's bash tool last.
    for part in (result.content[:400], result.content[-200:]):
        for pattern in _EXIT_PATTERNS:
            match = pattern.search(part)
            if match:
                return match.group(1)
    return "?"


def _shell_writes(command: str) -> list[str]:
    """Files a shell command writes: redirections, `sed -i`, `tee`. Heredoc bodies are skipped."""
    first = (command.splitlines() or [""])[0] if "<<" in command else command
    first = _HEREDOC.sub(" ", first)
    targets = [m.group(2) for m in _REDIRECT.finditer(first) if not m.group(2).startswith("/dev/")]
    if _SED_INPLACE.search(first) or re.search(r"\btee\b", first):
        targets.extend(_last_word_targets(first))
    return [t for t in targets if "$" not in t and "*" not in t]


def _last_word_targets(command: str) -> list[str]:
    try:
        words = shlex.split(command.splitlines()[0] if command else "")
    except ValueError:
        return []
    if not words or words[-1].startswith("-"):
        return []
    last = words[-1]
    return [last] if "/" in last or "." in last else []


def _one_line(text: str) -> str:
    lines = text.strip().splitlines() or [""]
    first = lines[0]
    if len(lines) > 1:
        first += f"  …(+{len(lines) - 1} lines)"
    return _clip(first)


def _clip(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"


# --- rendering and parsing --------------------------------------------------------------------

def render_facts(facts: Facts) -> str:
    """The facts as a markdown section; empty categories are left out."""
    parts = [FACTS_HEADING]
    for f in fields(Facts):
        items = getattr(facts, f.name)
        if items:
            parts.append(f"### {_TITLES[f.name]}")
            parts.extend(f"- {item}" for item in items)
    return "\n".join(parts) if len(parts) > 1 else ""


def parse_facts(text: str) -> Facts:
    """Read back a section `render_facts` wrote (inside a summary message); tolerant of anything else."""
    facts = Facts()
    start = text.find(FACTS_HEADING)
    if start < 0:
        return facts
    by_title = {title: name for name, title in _TITLES.items()}
    current: list[str] | None = None
    for line in text[start + len(FACTS_HEADING):].splitlines():
        if line.startswith("### "):
            name = by_title.get(line[4:].strip())
            current = getattr(facts, name) if name else None
        elif line.startswith("## "):
            break
        elif line.startswith("- ") and current is not None:
            current.append(line[2:])
    return facts
