"""What the rest of swecli needs to know about a tool, declared once, beside the tool's code.

Every tool carries `ToolFacts` (`Tool.facts`): what it does to the project (`kind`: is it a shell, does it
write files, does it locate code), how a call is shown (icon, verb, its key argument, which end of its
output is worth a preview) and how long its result stays verbatim in the history (`fold_after`). Whether
it may change anything is `Tool.mutating`. Modules that meet a tool only by name (in the history, a
transcript, the log, an event) ask `facts_for(name)` and never compare names themselves, so a new tool
is one module (its `Tool`, its facts, a `declare` line) plus its registration in the session.

The catalogue behind `facts_for` holds what tool modules `declare` (when they are imported; swecli's own
tools are loaded on the first question), the facts of MCP tools as they are built, and, for names no
swecli tool has, what other agents call tools of the same kind (SWE-agent, OpenHands, mini-swe-agent...:
their trajectories are read by compaction and reflection too). Anything else gets `ToolFacts()`.
This mirrors pydantic-ai's `ToolDefinition.kind` and `metadata`, with the facts swecli's readers need.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Literal

from swecli.records import datarecord

Kind = Literal["read", "list", "search", "write", "edit", "shell", "agent", "skill", "memory", "other"]
"""What a call does: reads a file, lists or searches the project, creates or overwrites a file, edits one,
runs a command, starts a sub-agent, loads a skill, keeps the session's own notes (todo, notes)."""

Describe = Callable[[Mapping[str, Any]], str]


def one_line(value: Any, limit: int = 100) -> str:
    """The first line of `value`, cut to `limit` characters; ` …` marks anything left out."""
    lines = str(value).splitlines() or [""]
    first, more = lines[0], len(lines) > 1
    if len(first) > limit:
        first, more = first[: limit - 1], True
    return first + (" …" if more else "")


def describe_any(args: Mapping[str, Any]) -> str:
    """A call of a tool that says nothing about itself: its path, else its arguments as `key=value`."""
    if "path" in args:
        return str(args["path"])
    return one_line(" ".join(f"{k}={v!r}" for k, v in args.items()), 100)


@datarecord(frozen=True)
class ToolFacts:
    """What the rest of swecli needs to know about a tool, declared beside its code."""

    kind: Kind = "other"
    icon: str = "🔧"
    verb: str = ""
    """The word on the call's action line ("": the tool's name)."""
    describe: Describe = describe_any
    """The call's key argument in a few words: the path read, the pattern searched, the command run."""
    key_args: tuple[str, ...] = ()
    """The arguments that identify a call in a folded result's digest (): decay's general guess)."""
    preview: Literal["head", "tail", "none"] = "head"
    """Which end of a result the UI previews: a listing's first lines, a command's last ones (errors, test
    summaries), or none (a file's text, a diff shown on its own)."""
    fold_after: int | None = 4
    """Steps (assistant messages) after which an old result may fold into a one-line digest (context/decay);
    None: never folded (a todo list, a note, a loaded skill stay relevant)."""

    @property
    def is_shell(self) -> bool:
        return self.kind == "shell"

    @property
    def writes_files(self) -> bool:
        """Its successful calls change the file its `path` argument names (counted as "files modified")."""
        return self.kind in ("write", "edit")

    @property
    def locates(self) -> bool:
        """It finds where things are: a listing, a search, or a command (`find`, `grep`)."""
        return self.kind in ("list", "search", "shell")


OTHER = ToolFacts()

FOREIGN_KINDS: Mapping[str, Kind] = {
    **dict.fromkeys(("read", "view", "view_file", "open", "cat", "viewcode"), "read"),
    **dict.fromkeys(("write", "create", "create_file"), "write"),
    **dict.fromkeys(("edit", "str_replace", "replace", "apply_patch", "patch", "multi_edit", "insert"), "edit"),
    **dict.fromkeys(("shell", "execute_bash", "run", "run_command", "terminal", "exec", "sh"), "shell"),
    **dict.fromkeys(("list", "ls", "glob", "find_files"), "list"),
    "search": "search",
}
"""Other agents' names for tools of a kind swecli knows (lower case), for their trajectories."""

_declared: dict[str, ToolFacts] = {}
_lock = threading.Lock()
_builtins_loaded = False


def declare(name: str, facts: ToolFacts) -> None:
    """Say what the tool called `name` is (its module does, when imported; MCP tools as they are built)."""
    with _lock:
        _declared[name] = facts


def facts_for(name: str) -> ToolFacts:
    """The facts of the tool called `name`: declared, else another agent's tool of a known kind, else none."""
    _load_builtins()
    facts = _declared.get(name)
    if facts is not None:
        return facts
    kind = FOREIGN_KINDS.get(name.lower())
    return ToolFacts(kind=kind) if kind is not None else OTHER


def key_argument(name: str, args: Mapping[str, Any]) -> str:
    """What a call does, in a few words (`src/app.py:10-20`, `'login' src/`, `pytest -q`); the model wrote
    it, so its control characters are shown, not sent to the terminal."""
    from swecli.tools.visible import visible

    return visible(facts_for(name).describe(args))


def _load_builtins() -> None:
    """swecli's own tools declare themselves when their modules are imported: import them once (an
    import finishes before any thread sees the module, so every declaration is in by the time it returns)."""
    global _builtins_loaded
    if not _builtins_loaded:
        from swecli.tools.builtin import default_tools

        default_tools()
        _builtins_loaded = True
