"""Session notes: `.swecli/memory/notes/<session id>.md`, the agent's working memory for one session.

Plain Markdown with six `## ` sections (current goal, key decisions, files modified and why, current
task, open issues, code patterns discovered). One file per session, so a new session never takes an
earlier one's goal and decisions for its own: `notes_prompt` gives a new session the previous session's
notes under a heading that says whose they are (a resumed session gets its own back). A file from
before per-session notes (`.swecli/memory/session_notes.md`) counts as the previous session's.

A session's notes are kept current three ways:
- `NotesUpdater.handle(event)`: cheap rules fed by the agent's events, no model call (a prompt sets
  the goal and the task, a successful write/edit records the file and the model's stated reason, a
  shell command records the files it changed (`sed -i`, formatters; see changes.py), a compaction records a
  decision line, a finished turn marks the task's status);
- the `notes` tool (`notes_tool()`), through which the model records decisions, issues and patterns;
- a person editing the file: parsing keeps unknown sections and free text, and matches headings
  loosely ("## Files modified (and why)", "## files changed", "## Code patterns" all work).
Every write reads the file first and replaces it atomically (temp file + rename + fsync), one at a time
(`_NOTES_LOCK`), so no edit is lost to a stale copy and a kill never leaves half a file. The updater's
writes run on a background thread (`_WRITER`): an fsync costs ~20 ms on a disk, which the loop would
otherwise wait for around every tool call. `read_notes` and `NotesUpdater.close` wait for them.
"""

from __future__ import annotations

import os
import queue
import re
import tempfile
import threading
from collections.abc import Callable
from dataclasses import field
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from swecli.collector import ON_THE_WIRE
from swecli.events import CompactionDone, MessageAppended, ModelCallStarted, ToolFinished, ToolStarted, TurnFinished
from swecli.memory.changes import ChangeTracker, track_changes
from swecli.memory.opencli import CountTokens, fit_to_budget
from swecli.messages import AssistantMessage, UserMessage
from swecli.records import datarecord
from swecli.session.log import modified_path
from swecli.session.private import make_private_dir
from swecli.session.secrets import NO_REDACTION, Redactor
from swecli.tools.base import Tool, ToolContext, ToolError, ToolResult
from swecli.tools.facts import ToolFacts, declare, facts_for

NOTES_DIR = ".swecli/memory/notes"
LEGACY_NOTES = ".swecli/memory/session_notes.md"
"""The one per-project file of earlier versions; read as the previous session's notes."""

SectionKey = Literal["current_goal", "key_decisions", "files_modified", "current_task", "open_issues",
                     "code_patterns"]

# key -> (heading written in new files, heading prefixes recognised when parsing human edits)
SECTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "current_goal": ("Current goal", ("current goal", "goal")),
    "key_decisions": ("Key decisions", ("key decisions", "decisions")),
    "files_modified": ("Files modified (and why)", ("files modified", "modified files", "files changed", "files")),
    "current_task": ("Current task", ("current task", "task")),
    "open_issues": ("Open issues", ("open issues", "issues", "todo", "open questions")),
    "code_patterns": ("Code patterns discovered", ("code patterns", "patterns", "conventions")),
}
LIST_SECTIONS = frozenset({"key_decisions", "files_modified", "open_issues", "code_patterns"})
MAX_ITEMS = 30
"""Rule-added bullets kept per list section; older ones are dropped so the notes stay prompt-sized."""
PROMPT_CHARS = 300
REASON_CHARS = 160

PREAMBLE = """# Session notes

<!-- swecli's working memory for this project, kept across sessions and compactions. swecli updates it
after significant actions and the model edits it with the `notes` tool; edit it freely too (keep the
"## " headings so each section is found again). -->"""


def notes_path(root: Path, session_id: str) -> Path:
    return root / NOTES_DIR / f"{session_id}.md"


def notes_relpath(session_id: str) -> str:
    return f"{NOTES_DIR}/{session_id}.md"


def previous_notes(root: Path, session_id: str) -> Path | None:
    """The notes of the most recently active other session (or the legacy per-project file)."""
    folder = root / NOTES_DIR
    try:
        others = [p for p in folder.glob("*.md") if p.stem != session_id and p.is_file()]
    except OSError:
        others = []
    if others:
        return max(others, key=lambda p: (p.stat().st_mtime_ns, p.stem))
    legacy = root / LEGACY_NOTES
    return legacy if legacy.is_file() else None


def _normalize(heading: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", heading.lower()).split())


def section_key(heading: str) -> str | None:
    normalized = _normalize(heading)
    for key, (_, prefixes) in SECTIONS.items():
        if any(normalized == p or normalized.startswith(p + " ") for p in prefixes):
            return key
    return None


@datarecord
class Section:
    """One `## heading` of the notes and its lines."""

    heading: str
    lines: list[str] = field(default_factory=list)

    @property
    def key(self) -> str | None:
        return section_key(self.heading)

    @property
    def body(self) -> str:
        return "\n".join(self.lines).strip()

    def set_body(self, text: str) -> None:
        self.lines = text.strip().splitlines()

    def add_item(self, item: str, max_items: int | None = MAX_ITEMS) -> None:
        self.lines = [line for line in self.lines if line.strip()]
        self.lines.append(item if item.startswith("- ") else f"- {item}")
        bullets = [i for i, line in enumerate(self.lines) if line.startswith("- ")]
        if max_items is not None and len(bullets) > max_items:
            drop = set(bullets[: len(bullets) - max_items])  # oldest bullets; free text stays
            self.lines = [line for i, line in enumerate(self.lines) if i not in drop]

    def remove_items_containing(self, marker: str) -> None:
        self.lines = [line for line in self.lines if not (line.startswith("- ") and marker in line)]


@datarecord
class NotesDocument:
    """The session notes file, read into its sections so that each is updated in place."""

    preamble: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)

    @classmethod
    def new(cls) -> NotesDocument:
        return cls(PREAMBLE.splitlines(), [Section(heading) for heading, _ in SECTIONS.values()])

    @classmethod
    def parse(cls, text: str) -> NotesDocument:
        doc = cls()
        current: list[str] = doc.preamble
        in_fence = False
        for line in text.splitlines():
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
            if not in_fence and line.startswith("## "):
                section = Section(line[3:].strip())
                doc.sections.append(section)
                current = section.lines
            else:
                current.append(line)
        return doc

    def find(self, key: str) -> Section | None:
        return next((s for s in self.sections if s.key == key), None)

    def section(self, key: str) -> Section:
        """The section for `key`, added (with its standard heading) when a person removed it."""
        found = self.find(key)
        if found is None:
            found = Section(SECTIONS[key][0])
            self.sections.append(found)
        return found

    def render(self) -> str:
        parts = ["\n".join(self.preamble).strip()]
        for section in self.sections:
            body = section.body
            parts.append(f"## {section.heading}\n{body}" if body else f"## {section.heading}")
        return "\n\n".join(p for p in parts if p) + "\n"

    def has_content(self) -> bool:
        return any(s.body for s in self.sections)


def read_notes_document(path: Path) -> NotesDocument:
    if not path.is_file():
        return NotesDocument.new()
    return NotesDocument.parse(path.read_text(encoding="utf-8", errors="replace"))


def write_atomically(path: Path, text: str) -> None:
    make_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_NOTES_LOCK = threading.Lock()
"""One read-modify-write of a notes file at a time: the updater's writer thread and the notes tool."""


def update_notes(path: Path, change: Callable[[NotesDocument], None]) -> NotesDocument:
    """Read the current file, apply `change`, write it back atomically (only if something changed)."""
    with _NOTES_LOCK:
        before = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
        doc = NotesDocument.parse(before) if before is not None else NotesDocument.new()
        change(doc)
        text = doc.render()
        if text != before:
            write_atomically(path, text)
        return doc


class _Writer:
    """Runs notes writes in order on one daemon thread; `flush()` waits until every write so far is done."""

    def __init__(self) -> None:
        self._jobs: queue.Queue[Callable[[], None]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()
        self._hurry = threading.Event()

    def submit(self, job: Callable[[], None]) -> None:
        with self._start:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="swecli-notes", daemon=True)
                self._thread.start()
        self._jobs.put(job)

    def _run(self) -> None:
        # Its first write is a task's (`NotesUpdater.on_prompt`), just before the task's request is built and
        # sent: it waits until that is done, or until someone waits for it (`flush`).
        self._hurry.wait(ON_THE_WIRE)
        while True:
            job = self._jobs.get()
            try:
                job()
            finally:
                self._jobs.task_done()

    def flush(self) -> None:
        self._hurry.set()
        self._jobs.join()


_WRITER = _Writer()


def flush_notes() -> None:
    """Wait until every notes update handed to the writer thread so far is on disk."""
    _WRITER.flush()


def read_notes(root: Path, session_id: str) -> str:
    """A session's notes file as it is, for `/notes` ("" when there is none yet)."""
    flush_notes()
    path = notes_path(root, session_id)
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def notes_prompt(root: Path, session_id: str, budget_tokens: int, count_tokens: CountTokens) -> str:
    """The notes for the system prompt at session start ("" when there are none): a resumed session's
    own notes, or, for a new session, the previous session's, labelled as such."""
    flush_notes()
    own = _notes_text(notes_path(root, session_id))
    if own:
        fitted, _ = fit_to_budget(own, budget_tokens, count_tokens, notes_relpath(session_id))
        return (f"# Session notes\n\nYour working notes from earlier in this session ({notes_relpath(session_id)}); "
                f"keep them current with the `notes` tool.\n\n{fitted}")
    previous = previous_notes(root, session_id)
    text = _notes_text(previous) if previous is not None else ""
    if not text or previous is None:
        return ""
    shown = previous.relative_to(root).as_posix()
    fitted, _ = fit_to_budget(text, budget_tokens, count_tokens, shown)
    return (f"# Notes from the previous session\n\nWritten by an earlier session in this project ({shown}), not by "
            "you in this one: its goal, decisions and changed files describe that session's work. Its open issues "
            "and code patterns may still hold; carry forward what does with the `notes` tool, which keeps this "
            f"session's own notes.\n\n{fitted}")


def _notes_text(path: Path) -> str:
    if not path.is_file():
        return ""
    doc = NotesDocument.parse(path.read_text(encoding="utf-8", errors="replace"))
    if not doc.has_content():
        return ""
    text = re.sub(r"<!--.*?-->\s*", "", doc.render(), flags=re.DOTALL).strip()
    return text.removeprefix("# Session notes").strip()  # the prompt gives its own heading


# --- rule-based updates from events ---------------------------------------------------------------


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _first_line(text: str, limit: int) -> str:
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return _one_line(line, limit)


class NotesUpdater:
    """Feeds one session's notes from agent events; plug `handle` into the agent's on_event chain."""

    def __init__(self, root: Path, session_id: str, *, resumed: bool = False,
                 clock: Callable[[], datetime] = datetime.now, redactor: Redactor = NO_REDACTION) -> None:
        self.root = root
        self.path = notes_path(root, session_id)
        self._clock = clock
        self._redact = redactor.redact
        self._goal_set = resumed  # a resumed session keeps the goal it had
        self._reasons: dict[str, str] = {}
        self._failed: OSError | None = None
        """A background write that failed, raised at the next event (the recorder reports it)."""
        self._tracker: ChangeTracker | bool | None = False
        """Which files shell commands change: made at the first model call, so its watches are set up in the
        background while the model thinks, not while the request is built (False: not yet made; None: not a
        git work tree)."""

    def _stamp(self) -> str:
        return self._clock().strftime("%Y-%m-%d %H:%M")

    def handle(self, event: object) -> None:
        if isinstance(event, MessageAppended):
            message = event.message
            if isinstance(message, UserMessage) and message.kind == "prompt":
                self.on_prompt(message.content)
            elif isinstance(message, AssistantMessage) and message.tool_calls:
                reason = _first_line(message.content, REASON_CHARS)
                self._reasons.update({call.id: reason for call in message.tool_calls})
        elif isinstance(event, ModelCallStarted):
            self._changes()  # the request is on its way: the watches are set up once it is out, while the
            # model thinks
        elif isinstance(event, ToolStarted) and facts_for(event.call.name).is_shell:
            tracker = self._changes()
            if tracker is not None:
                tracker.begin(event.call.id)
        elif isinstance(event, ToolFinished):
            self.on_tool(event)
            self.on_shell(event)
        elif isinstance(event, CompactionDone):
            self.on_compaction(event)
        elif isinstance(event, TurnFinished):
            self.on_turn(event)
        failed, self._failed = self._failed, None
        if failed is not None:
            raise failed

    def _update(self, change: Callable[[NotesDocument], None]) -> None:
        """Apply `change` to the notes file on the writer thread (the loop does not wait for the disk)."""
        def write() -> None:
            try:
                update_notes(self.path, change)
            except OSError as exc:
                self._failed = exc

        _WRITER.submit(write)

    def flush(self) -> None:
        """Wait until the notes file holds every update so far."""
        flush_notes()

    def on_prompt(self, prompt: str) -> None:
        text = self._redact(_one_line(prompt, PROMPT_CHARS))
        if not text:
            return
        set_goal = not self._goal_set
        self._goal_set = True
        stamp = self._stamp()

        def change(doc: NotesDocument) -> None:
            if set_goal:
                doc.section("current_goal").set_body(text)
            doc.section("current_task").set_body(f"{text}\nStatus: in progress (since {stamp})")

        self._update(change)

    def on_tool(self, event: ToolFinished) -> None:
        path = modified_path(event.call, event.result, self.root) if event.approved else None
        reason = self._reasons.pop(event.call.id, "")
        if not path:
            return
        item = self._redact(f"- `{path}` — {reason} ({self._stamp()})" if reason else f"- `{path}` ({self._stamp()})")

        def change(doc: NotesDocument) -> None:
            files = doc.section("files_modified")
            files.remove_items_containing(f"`{path}`")  # one line per file: its latest change
            files.add_item(item)

        self._update(change)

    def _changes(self) -> ChangeTracker | None:
        if self._tracker is False:
            self._tracker = track_changes(self.root, delay=ON_THE_WIRE)
        return self._tracker if not isinstance(self._tracker, bool) else None

    def close(self) -> None:
        """Finish the pending writes and stop watching the project (the session is over)."""
        self.flush()
        if not isinstance(self._tracker, bool) and self._tracker is not None:
            self._tracker.close()

    def on_shell(self, event: ToolFinished) -> None:
        """Files a shell command changed (edits through `sed -i`, formatters, `rm`)."""
        tracker = self._changes() if facts_for(event.call.name).is_shell else None
        changes = tracker.end(event.call.id) if tracker is not None else None
        if changes is None or (not changes.paths and changes.complete):
            return
        command = _one_line(str(event.call.args().get("command", "")), 80)
        stamp = self._stamp()

        def change(doc: NotesDocument) -> None:
            files = doc.section("files_modified")
            for path, exists in changes.paths:
                files.remove_items_containing(f"`{path}`")
                how = "changed" if exists else "deleted"
                files.add_item(self._redact(f"- `{path}` — {how} by `{command}` ({stamp})"))
            if not changes.complete:
                files.add_item(self._redact(f"- more files than could be followed were changed by `{command}` "
                                            f"({stamp})"))

        self._update(change)

    def on_compaction(self, event: CompactionDone) -> None:
        if event.strategy == "decay":
            return  # folding old outputs into digests drops nothing the notes need to carry
        line = (f"- {self._stamp()} — context compacted ({event.strategy}, {event.trigger}): "
                f"{event.tokens_before:,} → {event.tokens_after:,} tokens, {event.messages_compacted} messages "
                "summarized; these notes carry what must not be lost")
        if event.note:
            line += f" ({_one_line(event.note, REASON_CHARS)})"
        if event.references:
            # The references compaction dropped (with where to re-open them) stay findable here too.
            refs = "; ".join(ref.removeprefix("- ") for ref in event.references)
            line += f"; references: {_one_line(refs, 4 * REASON_CHARS)}"
        self._update(lambda doc: doc.section("key_decisions").add_item(self._redact(line)))

    def on_turn(self, event: TurnFinished) -> None:
        status = {"done": "done", "interrupted": "interrupted"}.get(event.stop_reason, f"stopped: {event.stop_reason}")
        stamp = self._stamp()

        def change(doc: NotesDocument) -> None:
            task = doc.section("current_task")
            kept = [line for line in task.body.splitlines() if not line.strip().lower().startswith("status:")]
            task.lines = [*kept, f"Status: {status} ({stamp})"]
            if event.stop_reason not in ("done", "interrupted"):
                problem = self._redact(_one_line(event.error or event.answer, REASON_CHARS))
                doc.section("open_issues").add_item(f"- {stamp} — last task stopped ({event.stop_reason}): {problem}")

        self._update(change)


# --- the `notes` tool ------------------------------------------------------------------------------


class NotesArgs(BaseModel):
    section: SectionKey | None = Field(
        None, description="The section to change; leave empty with mode=rewrite.")
    text: str = Field(description="The text: one item to append, a section's new body, or the whole file.")
    mode: Literal["append", "replace", "rewrite"] = Field(
        "append", description="append: add an item to the section; replace: set the section's text; "
                              "rewrite: replace the whole file (keep the '## ' headings).")


NOTES_DESCRIPTION = (
    f"Update your session notes ({NOTES_DIR}/<session id>.md), the working memory that survives compaction and "
    "is loaded when this session is resumed (a new session sees them as the previous session's). Record key "
    "decisions and why, open issues, and code patterns you discover (with path:line); keep the current goal and "
    "task accurate. Sections: current_goal, key_decisions, files_modified, current_task, open_issues, "
    "code_patterns. Read the file with read_file before a rewrite."
)


def _apply_notes_args(args: NotesArgs, path: Path, stamp: str) -> str:
    if args.mode == "rewrite":
        doc = NotesDocument.parse(args.text)
        if not any(s.key for s in doc.sections):
            headings = ", ".join(f"'## {h}'" for h, _ in SECTIONS.values())
            raise ToolError(f"A rewrite must keep the section headings ({headings}); nothing was changed.")
        with _NOTES_LOCK:
            write_atomically(path, doc.render())
        return "the whole file"
    if args.section is None:
        raise ToolError(f"mode={args.mode} needs a section: one of {', '.join(SECTIONS)}.")
    if not args.text.strip():
        raise ToolError("text is empty; nothing was changed.")
    key, text = args.section, args.text.strip()

    def change(doc: NotesDocument) -> None:
        section = doc.section(key)
        if args.mode == "replace" or (key not in LIST_SECTIONS and not section.body):
            section.set_body(text)
        elif key in LIST_SECTIONS:
            item = text.removeprefix("- ")
            section.add_item(f"{stamp} — {item}" if key == "key_decisions" else item, max_items=None)
        else:
            section.set_body(f"{section.body}\n{text}")

    update_notes(path, change)
    return SECTIONS[key][0]


def notes_tool(session_id: str, clock: Callable[[], datetime] = datetime.now,
               redactor: Redactor | None = None) -> Tool[NotesArgs]:
    """The `notes` tool, writing session `session_id`'s notes. Secrets are masked in what it writes (by
    default those of the environment at call time; pass `redactor` to include the settings' key)."""
    relpath = notes_relpath(session_id)

    def run(args: NotesArgs, ctx: ToolContext) -> ToolResult:
        redact = redactor or Redactor.from_environment()
        args = args.model_copy(update={"text": redact.redact(args.text)})
        changed = _apply_notes_args(args, notes_path(ctx.root, session_id), clock().strftime("%Y-%m-%d %H:%M"))
        return ToolResult(f"Updated {changed} in {relpath}.", summary=f"notes: {changed}", meta={"path": relpath})

    # Not mutating: the notes are swecli's own memory, not the project's files, so plan mode may use it.
    return Tool("notes", NOTES_DESCRIPTION, NotesArgs, run, mutating=False, facts=NOTES_FACTS)


NOTES_FACTS = ToolFacts(kind="memory", fold_after=None)
"""A note is short and meant to be kept: never folded."""
declare("notes", NOTES_FACTS)
