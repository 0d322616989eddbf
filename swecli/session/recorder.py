"""One session's files, fed by the agent's events: the transcript and the JSON log, plus any other
per-session writer attached to it (the session notes, wired by `swecli.assembly`).

    recorder = SessionRecorder.start(root, settings)                 # a new session
    recorder, loaded = SessionRecorder.resume(root, settings, None)  # --continue (or an id: --resume ID)
    agent.history = loaded.history
    recorder.attach("notes", NotesUpdater(root, recorder.session_id, resumed=recorder.resumed).handle)
    bus.listeners.append(recorder.handle)                            # after the UI's listener
    ...
    recorder.close()                                                 # writes the stats record

Writing must never break the agent loop: a failed write (disk full, permissions) is reported once per
file through `on_error` and kept in `problems`, and the session goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, assert_never

from swecli.config import Settings
from swecli.events import (
    BackgroundSummary,
    ChildEvent,
    CompactionDone,
    ContextOverflow,
    Event,
    HistoryReplaced,
    MessageAppended,
    ModelCallFinished,
    ModelCallStarted,
    Notice,
    ReasoningDelta,
    SummarySpent,
    TextDelta,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnFinished,
    Waiting,
)
from swecli.messages import UserMessage
from swecli.session.log import SessionLog
from swecli.session.secrets import Redactor
from swecli.session.store import (
    LoadedSession,
    SessionError,
    Transcript,
    latest_session,
    load_session,
    new_session_id,
    persist_closed_calls,
    resolve_session_id,
    subagent_transcript_path,
)

ErrorSink = Callable[[str], None]


class SessionRecorder:
    def __init__(  # noqa: PLR0913 (keyword-only options)
            self, root: Path, session_id: str, settings: Settings, *, redactor: Redactor, resumed: bool = False,
            cwd: Path | None = None, durable: bool = False, on_error: ErrorSink | None = None) -> None:
        self.root = root
        self.session_id = session_id
        self.settings = settings
        self.redactor = redactor
        self.on_error = on_error
        self.problems: list[str] = []
        self._failed: set[str] = set()
        self.transcript = Transcript(root, session_id, model=settings.model, cwd=cwd, redactor=redactor,
                                     durable=durable)
        self.log = SessionLog(root, session_id, redactor=redactor, durable=durable)
        self.resumed = resumed
        self._writers: list[tuple[str, Callable[[object], None]]] = []
        self._closers: list[Callable[[], None]] = []
        self._children: dict[str, Transcript] = {}
        self.stats: dict[str, Any] | None = None
        self._guard("log", lambda: self.log.session_start(settings, cwd or root, resumed=resumed))

    @classmethod
    def start(  # noqa: PLR0913 (keyword-only options)
            cls, root: Path, settings: Settings, *, session_id: str | None = None, first_prompt: str | None = None,
            cwd: Path | None = None, env: Mapping[str, str] | None = None, durable: bool = False,
            on_error: ErrorSink | None = None) -> SessionRecorder:
        """A new session. Pass `first_prompt` when it is known up front (`-p`) to write the transcript's
        meta line at once; otherwise the file appears with the first message."""
        recorder = cls(root, session_id or new_session_id(root), settings,
                       redactor=Redactor.from_environment(settings, env), cwd=cwd, durable=durable,
                       on_error=on_error)
        if first_prompt is not None:
            recorder._guard("transcript", lambda: recorder.transcript.write_meta(first_prompt))
        return recorder

    @classmethod
    def resume(cls, root: Path, settings: Settings, session: str | None = None, *, cwd: Path | None = None,
               env: Mapping[str, str] | None = None, durable: bool = False,
               on_error: ErrorSink | None = None) -> tuple[SessionRecorder, LoadedSession]:
        """Reopen a session (None: the latest, for --continue; else an id or unique prefix) to go on
        appending to its transcript and log. Use `loaded.history` as the agent's history and show
        `loaded.problems` as warnings. Raises SessionError when there is nothing to resume."""
        if session is None:
            session_id = latest_session(root)
            if session_id is None:
                raise SessionError("no session to continue in this project yet; start one without --continue.")
        else:
            session_id = resolve_session_id(root, session)
        loaded = load_session(root, session_id)
        recorder = cls(root, session_id, settings, redactor=Redactor.from_environment(settings, env),
                       resumed=True, cwd=cwd, durable=durable, on_error=on_error)
        for problem in loaded.problems:
            recorder._guard("log", partial(recorder.log.error, problem, level="warning"))
        recorder._guard("transcript", lambda: persist_closed_calls(recorder.transcript, loaded))
        return recorder, loaded

    def attach(self, target: str, write: Callable[[object], None], close: Callable[[], None] | None = None) -> None:
        """Another per-session writer fed the same events, guarded like the transcript and the log (a
        failed write is reported once, as "could not write the session <target>"); `close` runs when the
        session's files are closed."""
        self._writers.append((target, write))
        if close is not None:
            self._closers.append(close)

    def handle(self, event: Event) -> None:
        """The event bus's listener for this session's files."""
        self._record(event)
        for target, write in self._writers:
            self._guard(target, partial(write, event))

    def _record(self, event: Event) -> None:  # noqa: C901 (one case per event kind, exhaustive: see events.py)
        log = self.log
        match event:  # the most frequent first: each case passed over is an isinstance
            case TextDelta() | ReasoningDelta() | Waiting() | ToolStarted() | ToolOutput():
                pass  # streaming progress: the finished message and the tool record carry it
            case MessageAppended():
                self._guard("transcript", lambda: self.transcript.append(event.message))
                if isinstance(event.message, UserMessage) and event.message.kind == "prompt":
                    self._guard("log", lambda: log.user_input(event.message.content))
            case ModelCallFinished():
                self._guard("log", lambda: log.llm_call(event.usage, event.duration, event.model, event.finish_reason,
                                                        event.reported))
            case ToolFinished():
                self._guard("log", lambda: log.tool(event.call, event.result, event.duration, event.approved))
            case ModelCallStarted():
                if event.context_tokens:
                    self._guard("log", lambda: log.context(event.context_tokens,
                                                           event.window or self.settings.context_window))
            case HistoryReplaced():
                self._guard("transcript", lambda: self.transcript.replace(event.history, event.reason))
                self._guard("log", lambda: log.history_replaced(event.reason, len(event.history)))
            case CompactionDone():
                self._guard("log", lambda: log.compaction(event))
            case SummarySpent():
                self._guard("log", lambda: log.summary(event))
            case BackgroundSummary():
                self._guard("log", lambda: log.background_summary(event))
            case ContextOverflow():
                self._guard("log", lambda: log.context_overflow(event))
            case TurnFinished():
                self._guard("log", lambda: log.turn_end(event))
            case Notice():
                if event.level in ("error", "warning"):
                    self._guard("log", lambda: log.error(event.text, level=event.level))
            case ChildEvent():
                self._record_child(event)
            case _:
                assert_never(event)

    def child_transcript(self, call_id: str) -> Path:
        """Where the sub-agent started by the parent's call `call_id` has its transcript."""
        return subagent_transcript_path(self.root, self.session_id, call_id)

    def _record_child(self, wrapped: ChildEvent) -> None:
        """A sub-agent's messages go to its own transcript; its calls, tools and end go to the session log,
        each linked to the parent's call (`parent_call`)."""
        event, link = wrapped.event, {"parent_call": wrapped.call_id, "agent": wrapped.agent}
        if isinstance(event, MessageAppended | HistoryReplaced):
            transcript = self._children.get(wrapped.call_id)
            if transcript is None:
                transcript = self._children[wrapped.call_id] = Transcript(
                    self.root, self.session_id, model=self.settings.model, redactor=self.redactor,
                    path=self.child_transcript(wrapped.call_id))
            if isinstance(event, MessageAppended):
                self._guard("transcript", lambda: transcript.append(event.message))
            else:
                self._guard("transcript", lambda: transcript.replace(event.history, event.reason))
        elif isinstance(event, ModelCallFinished):
            self._guard("log", lambda: self.log.llm_call(event.usage, event.duration, event.model,
                                                         event.finish_reason, event.reported, **link))
        elif isinstance(event, ToolFinished):
            self._guard("log", lambda: self.log.tool(event.call, event.result, event.duration, event.approved,
                                                     **link))
        elif isinstance(event, TurnFinished):
            path = self.child_transcript(wrapped.call_id)
            self._guard("log", lambda: self.log.subagent(event, transcript=str(path.relative_to(self.root)),
                                                         **link))
            child = self._children.pop(wrapped.call_id, None)
            if child is not None:
                child.close()

    def context_update(self, total_tokens: int, window: int | None = None) -> None:
        """Log the context size (call it when the context engine recounts, e.g. after each request)."""
        self._guard("log", lambda: self.log.context(total_tokens, window or self.settings.context_window))

    def record(self, event: str, **fields: Any) -> None:
        """A log record for something the loop's events do not carry (a playbook reflection, say)."""
        self._guard("log", lambda: self.log.write(event, **fields))

    def user_input(self, text: str) -> None:
        """Log input that does not become a prompt message (a slash command, say)."""
        self._guard("log", lambda: self.log.user_input(text))

    def close(self) -> dict[str, Any] | None:
        """Write the stats record (covering the whole session, resumed runs included) and close the
        files. Safe to call twice; returns the stats (None if they could not be written)."""
        if self.log.closed:
            return self.stats

        def finish() -> None:
            self.stats = self.log.stats()

        self._guard("log", finish)
        self.log.close()
        self.transcript.close()
        for child in self._children.values():
            child.close()
        for close in self._closers:
            close()
        return self.stats

    def _guard(self, target: str, write: Callable[[], None]) -> None:
        try:
            write()
        except OSError as exc:
            message = f"could not write the session {target} ({exc.strerror or exc}); the session goes on without it"
            self.problems.append(message)
            if target not in self._failed:
                self._failed.add(target)
                if self.on_error is not None:
                    self.on_error(message)
