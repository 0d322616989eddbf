"""Session transcripts: `<root>/.swecli/sessions/<session_id>.jsonl`, appended one message at a time.

File format (JSON Lines, one object per line):
  {"type":"meta","session_id":...,"created":...,"cwd":...,"model":...,"first_prompt":...}   first line
  {"type":"message","message":{...}}             a message appended to the history
  {"type":"replace","reason":...,"messages":[...]}  the history was rewritten (compaction, /clear)
Replaying the lines in order reproduces the current history, compacted state included. Each line is
written with one write() as it happens, so a kill loses nothing written before it.

Loading never trusts the file to be whole (a kill mid-write, a truncation, a hand edit, a file the model
mangled): a line that is not a valid record is skipped, and the replayed history is made valid for the
APIs, which answer 400 to any break in the pairing of tool calls and results (`pair_tool_results`): a
tool result whose call is not in the assistant message just before it is dropped, and a call left
without a result is answered as interrupted. Each repair is one sentence in `problems`.

Session ids are `YYYYMMDD-HHMMSS-xxxx` (local time, 4 random hex digits): they sort by creation.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import stat
from collections.abc import Callable, Iterable
from dataclasses import field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError, to_json

from swecli.errors import SwecliError
from swecli.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from swecli.records import datarecord
from swecli.session.jsonl import AppendOnlyFile, encode_line, read_jsonl
from swecli.session.private import PRIVATE_DIR, ensure_private, unlink_planted_links
from swecli.session.secrets import NO_REDACTION, Redactor

RESUME_CLOSE_REASON = "interrupted: the session ended before this tool call finished (result unknown)"
_ID_FORMAT = "%Y%m%d-%H%M%S"


@functools.cache
def _message_adapter() -> TypeAdapter[Message]:
    """Built when a transcript is first read (a resume), not by every session that only writes one."""
    return TypeAdapter(Message)


class SessionError(SwecliError):
    """A session that cannot be found, resumed or deleted; `str()` says which and what to do."""


STATE_GITIGNORE = """\
# Written by swecli. Per-user state (sessions, logs, saved tool outputs, compaction archives, notes,
# the learned playbook, input history) stays out of git, and so does this file. What is meant to be
# shared is not ignored: config.toml, hooks/, skills/, agents/. Edit freely: swecli never rewrites it.
/*
!/config.toml
!/hooks/
!/skills/
!/agents/
"""


def swecli_dir(root: Path) -> Path:
    return root / ".swecli"


def ensure_state_dir(root: Path) -> list[str]:
    """Create `.swecli/` (0700) with its `.gitignore` (once: an existing one is a person's choice and is
    kept), so one `git add -A` never commits transcripts, logs or saved outputs. A folder left readable
    by an earlier version is tightened with everything in it (see private.py). A read-only project is
    left alone here; the writers that need the folder report their own failures.

    The folder is the repository's to ship, so it is checked before anything is read or written there:
    SessionError when `.swecli` is a link or not a directory (a cloned `.swecli -> /etc` had swecli, as
    root, make every file of /etc 0600 and write its records there), and any link among the records is
    removed (`unlink_planted_links`). Returns one warning per link removed."""
    folder = swecli_dir(root)
    _refuse_a_linked_state_dir(folder)
    try:
        folder.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    except OSError:
        return []
    _refuse_a_linked_state_dir(folder)  # made between the check and mkdir: still not followed
    warnings = [f"removed {name}: swecli keeps its own records in .swecli/ and never follows a link out of it "
                "(one a repository or a command put there would send its writes anywhere)"
                for name in unlink_planted_links(folder)]
    try:
        if stat.S_IMODE(os.lstat(folder).st_mode) != PRIVATE_DIR:
            ensure_private(folder)  # once: from then on every record is written 0600
        with (folder / ".gitignore").open("x", encoding="utf-8") as fh:
            fh.write(STATE_GITIGNORE)
    except OSError:
        pass
    return warnings


def _refuse_a_linked_state_dir(folder: Path) -> None:
    try:
        info = os.lstat(folder)
    except OSError:
        return  # missing (made next) or unreachable (the writers report it)
    if stat.S_ISLNK(info.st_mode):
        raise SessionError(f"{folder} is a symlink (to {os.readlink(folder)}): swecli keeps its transcripts, logs "
                           "and caches there and does not follow a link with them. Remove the link (`rm .swecli`) "
                           "and start swecli again.")
    if not stat.S_ISDIR(info.st_mode):
        raise SessionError(f"{folder} is not a directory: swecli keeps its transcripts, logs and caches there. Move "
                           "it aside and start swecli again.")


def sessions_dir(root: Path) -> Path:
    return swecli_dir(root) / "sessions"


def logs_dir(root: Path) -> Path:
    return swecli_dir(root) / "logs"


def transcript_path(root: Path, session_id: str) -> Path:
    return sessions_dir(root) / f"{session_id}.jsonl"


def log_path(root: Path, session_id: str) -> Path:
    return logs_dir(root) / f"{session_id}.jsonl"


def subagent_transcript_path(root: Path, session_id: str, call_id: str) -> Path:
    """A sub-agent's transcript, named by the parent's `task` call that started it."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in call_id)
    return sessions_dir(root) / session_id / "subagents" / f"{safe}.jsonl"


def new_session_id(root: Path | None = None, now: datetime | None = None) -> str:
    """A fresh id that sorts by creation time; unique among the project's sessions."""
    stamp = (now or datetime.now()).strftime(_ID_FORMAT)
    while True:
        session_id = f"{stamp}-{secrets.token_hex(2)}"
        if root is None or not (transcript_path(root, session_id).exists() or log_path(root, session_id).exists()):
            return session_id


def message_to_json(message: Message, redactor: Redactor = NO_REDACTION) -> dict[str, Any]:
    data: dict[str, Any] = redactor.redact_obj(message.model_dump(mode="json"))
    return data


def message_from_json(data: object) -> Message:
    return _message_adapter().validate_python(data)


def message_line(message: Message, redactor: Redactor = NO_REDACTION) -> bytes:
    """The transcript's line for `message`, with every secret of `redactor` replaced (see `encode_line`):
    the message encoded by its own pydantic serializer in one pass, then searched once for secrets."""
    return _line(lambda: b'{"type":"message","message":' + _message_json(message) + b"}\n",
                 lambda: {"type": "message", "message": message_to_json(message, redactor)}, redactor)


def replace_line(history: Iterable[Message], reason: str, redactor: Redactor = NO_REDACTION) -> bytes:
    """The transcript's line for a rewritten history (a compaction, /clear): every message of it."""
    messages = list(history)
    return _line(lambda: (b'{"type":"replace","reason":' + to_json(reason) + b',"messages":['
                          + b",".join(_message_json(m) for m in messages) + b"]}\n"),
                 lambda: {"type": "replace", "reason": redactor.redact(reason),
                          "messages": [message_to_json(m, redactor) for m in messages]}, redactor)


def _message_json(message: Message) -> bytes:
    """What `json.dumps(message.model_dump(mode="json"))` writes (ensure_ascii off, no spaces), in one pass:
    a message holds only strings, integers, booleans and lists of them, which both spell alike."""
    return message.__pydantic_serializer__.to_json(message)


def _line(fast: Callable[[], bytes], redacted: Callable[[], dict[str, Any]], redactor: Redactor) -> bytes:
    """`fast()`, or the line of `redacted()` (the record with every string already redacted, so encoded once
    and not searched nor redacted again) when it may hold a secret or pydantic refuses a message (a lone
    surrogate: json refuses it too, and says why)."""
    try:
        line = fast()
        if not redactor.may_be_in_json(line):
            return line
    except PydanticSerializationError:
        pass
    return encode_line(redacted())


# --- writing ----------------------------------------------------------------------------------


class Transcript:
    """The append-only writer for one session's transcript.

    The meta line is written just before the first message (or at once with `write_meta`), so a
    session in which nothing was said leaves no file behind, and the meta line can carry the first
    prompt of an interactive session.
    """

    def __init__(self, root: Path, session_id: str, *, model: str = "", cwd: Path | None = None,
                 redactor: Redactor = NO_REDACTION, durable: bool = False, path: Path | None = None) -> None:
        self.root = root
        self.session_id = session_id
        self.path = path or transcript_path(root, session_id)
        """`path`: another file of the session (a sub-agent's transcript), in the same format."""
        self.model = model
        self.cwd = cwd or root
        self.redactor = redactor
        self.durable = durable
        self._file: AppendOnlyFile | None = None

    @property
    def started(self) -> bool:
        return self._file is not None or self.path.exists()

    def _open(self, first: Message | None) -> AppendOnlyFile:
        if self._file is None:
            fresh = not self.path.exists()
            self._file = AppendOnlyFile(self.path, durable=self.durable)
            if fresh:
                prompt = first.content if isinstance(first, UserMessage) and first.kind == "prompt" else ""
                self._file.append(self._meta(prompt))
        return self._file

    def _meta(self, first_prompt: str) -> dict[str, Any]:
        return {
            "type": "meta",
            "session_id": self.session_id,
            "created": datetime.now().astimezone().isoformat(timespec="seconds"),
            "cwd": self.redactor.redact(str(self.cwd)),
            "model": self.model,
            "first_prompt": self.redactor.redact(first_prompt),
        }

    def write_meta(self, first_prompt: str = "") -> None:
        """Create the file now (headless runs know their prompt up front)."""
        if self._file is None and not self.path.exists():
            self._file = AppendOnlyFile(self.path, durable=self.durable)
            self._file.append(self._meta(first_prompt))

    def append(self, message: Message) -> None:
        self._open(message).append_line(message_line(message, self.redactor))

    def replace(self, history: Iterable[Message], reason: str) -> None:
        self._open(None).append_line(replace_line(history, reason, self.redactor))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


# --- reading ----------------------------------------------------------------------------------


@datarecord
class LoadedSession:
    """A saved session read back to go on with it (`--resume`, `--continue`)."""

    session_id: str
    path: Path
    meta: dict[str, Any]
    history: list[Message]
    """Valid for the next request: replayed, with tool calls left open by a kill closed."""
    raw_history: list[Message]
    """Exactly what the file replays to (before closing open tool calls)."""
    problems: list[str] = field(default_factory=list)
    """Lines that were skipped, one sentence each (show them as warnings)."""

    @property
    def closed_calls(self) -> int:
        return len(self.history) - len(self.raw_history)


def replay(records: Iterable[dict[str, Any]], problems: list[str], name: str = "transcript") -> list[Message]:
    history: list[Message] = []
    for index, record in enumerate(records, start=1):
        kind = record.get("type")
        try:
            if kind == "message":
                history.append(message_from_json(record.get("message")))
            elif kind == "replace":
                history = [message_from_json(m) for m in record.get("messages") or []]
            elif kind != "meta":
                problems.append(f"{name}: record {index} has unknown type {kind!r}; skipped")
        except ValidationError as exc:
            problems.append(f"{name}: record {index} ({kind}) is not a valid message "
                            f"({exc.errors()[0]['msg']}); skipped")
    return history


def load_session(root: Path, session_id: str) -> LoadedSession:
    path = transcript_path(root, session_id)
    if not path.is_file():
        raise SessionError(f"no session {session_id!r} in {sessions_dir(root)}; run `swecli sessions` to list them.")
    contents = read_jsonl(path)
    meta = next((r for r in contents.records if r.get("type") == "meta"), {})
    raw = replay(contents.records, contents.problems, path.name)
    history = pair_tool_results(raw, contents.problems, path.name)
    return LoadedSession(session_id, path, meta, history, raw, contents.problems)


def pair_tool_results(history: list[Message], problems: list[str], name: str = "transcript") -> list[Message]:
    """`history` as the APIs accept it: every tool result right after the assistant message that made its
    call (results of one message together, each call answered once), every call answered. A result that
    breaks this is dropped; an unanswered call gets an "interrupted" result. Each change is reported in
    `problems`."""
    out: list[Message] = []
    waiting: dict[str, ToolCall] = {}
    """Calls of the last assistant message still without a result (only tool messages since)."""
    orphans: list[str] = []
    closed = 0
    for message in history:
        if isinstance(message, ToolMessage):
            if waiting.pop(message.tool_call_id, None) is None:
                orphans.append(message.tool_call_id)
            else:
                out.append(message)
            continue
        closed += _answer(waiting, out)
        out.append(message)
        waiting = {call.id: call for call in message.tool_calls} if isinstance(message, AssistantMessage) else {}
    closed += _answer(waiting, out)
    if orphans:
        shown = ", ".join(orphans[:3]) + (" ..." if len(orphans) > 3 else "")
        problems.append(f"{name}: dropped {len(orphans)} tool result(s) whose call is not right before them ({shown}); "
                        "the file was cut or edited")
    if closed:
        problems.append(f"{name}: {closed} tool call(s) had no result (the session ended during them); answered "
                        "as interrupted")
    return out


def _answer(waiting: dict[str, ToolCall], out: list[Message]) -> int:
    out.extend(ToolMessage(tool_call_id=call.id, name=call.name, content=RESUME_CLOSE_REASON, is_error=True)
               for call in waiting.values())
    return len(waiting)


def persist_closed_calls(transcript: Transcript, loaded: LoadedSession) -> None:
    """Write the results that closed dangling calls, so the file alone replays to the resumed history."""
    if loaded.history == loaded.raw_history:
        return
    if loaded.history[: len(loaded.raw_history)] == loaded.raw_history:
        for message in loaded.history[len(loaded.raw_history):]:
            transcript.append(message)
    else:
        transcript.replace(loaded.history, "resume")


# --- listing and deleting -----------------------------------------------------------------------


@datarecord(frozen=True)
class SessionInfo:
    """One saved session as a list of them shows it."""

    session_id: str
    created: str
    updated: datetime
    first_prompt: str
    turns: int
    """User prompts appended over the session's life (compaction does not change it)."""
    tokens: int
    """Tokens spent (input + output of every model call), from the session's JSON log; 0 without one."""
    model: str
    path: Path


def _user_prompt_count(path: Path) -> tuple[int, str]:
    """(prompts, first prompt) from appended message lines; cheap prefix test before parsing."""
    count, first = 0, ""
    prefix = b'{"type":"message","message":{"role":"user"'
    with path.open("rb") as f:
        for line in f:
            if not line.startswith(prefix):
                continue
            try:
                message = json.loads(line)["message"]
            except (ValueError, KeyError, TypeError):
                continue
            if message.get("kind", "prompt") == "prompt":
                count += 1
                first = first or str(message.get("content", ""))
    return count, first


def _tokens_from_log(root: Path, session_id: str) -> int:
    path = log_path(root, session_id)
    if not path.is_file():
        return 0
    total = 0
    for record in read_jsonl(path).records:
        if record.get("event") == "llm_call":
            total += int(record.get("tokens_in", 0) or 0) + int(record.get("tokens_out", 0) or 0)
    return total


def _read_meta(path: Path) -> dict[str, Any]:
    with path.open("rb") as f:
        first = f.readline()
    try:
        meta = json.loads(first)
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) and meta.get("type") == "meta" else {}


def session_info(root: Path, session_id: str) -> SessionInfo:
    path = transcript_path(root, session_id)
    meta = _read_meta(path)
    turns, first_prompt = _user_prompt_count(path)
    return SessionInfo(
        session_id=session_id,
        created=str(meta.get("created", "")),
        updated=datetime.fromtimestamp(path.stat().st_mtime).astimezone(),
        first_prompt=str(meta.get("first_prompt") or first_prompt),
        turns=turns,
        tokens=_tokens_from_log(root, session_id),
        model=str(meta.get("model", "")),
        path=path,
    )


def session_ids(root: Path) -> list[str]:
    """Every session with a transcript, most recently active first (ties: newest id first)."""
    folder = sessions_dir(root)
    if not folder.is_dir():
        return []
    paths = [p for p in folder.glob("*.jsonl") if p.is_file()]
    paths.sort(key=lambda p: (p.stat().st_mtime_ns, p.stem), reverse=True)
    return [p.stem for p in paths]


def list_sessions(root: Path) -> list[SessionInfo]:
    """Sessions for `swecli sessions` / `--resume` pickers, most recently active first."""
    return [session_info(root, sid) for sid in session_ids(root)]


def latest_session(root: Path) -> str | None:
    """The session `--continue` resumes: the most recently active one, or None."""
    ids = session_ids(root)
    return ids[0] if ids else None


def resolve_session_id(root: Path, wanted: str) -> str:
    """An exact id or a unique prefix of one (`20261122-1015`); a clear error otherwise."""
    ids = session_ids(root)
    if wanted in ids:
        return wanted
    matches = [sid for sid in ids if sid.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise SessionError(f"no session matches {wanted!r}; run `swecli sessions` to list them.")
    shown = ", ".join(matches[:5]) + (" ..." if len(matches) > 5 else "")
    raise SessionError(f"{wanted!r} matches {len(matches)} sessions ({shown}); give more of the id.")


def sessions_older_than(root: Path, days: float, now: datetime | None = None) -> list[SessionInfo]:
    """Sessions not active for `days` days: candidates for `swecli sessions --delete-old` (the caller
    shows them and asks before deleting anything)."""
    now = (now or datetime.now()).astimezone()
    return [info for info in list_sessions(root) if (now - info.updated).total_seconds() > days * 86_400]


def format_session_line(info: SessionInfo, prompt_chars: int = 60) -> str:
    """One line for a session list: id, last activity, turns, tokens, first prompt."""
    prompt = " ".join(info.first_prompt.split())
    if len(prompt) > prompt_chars:
        prompt = prompt[: prompt_chars - 1] + "…"
    turns = f"{info.turns} turn{'s' if info.turns != 1 else ''}"
    return f"{info.session_id}  {info.updated:%Y-%m-%d %H:%M}  {turns:>9}  {info.tokens:>10,} tokens  {prompt}"


def delete_session(root: Path, session_id: str) -> list[Path]:
    """Delete one session's transcript and log (only when asked explicitly); returns what was removed."""
    paths = [p for p in (transcript_path(root, session_id), log_path(root, session_id)) if p.exists()]
    if not paths:
        raise SessionError(f"no session {session_id!r} to delete; run `swecli sessions` to list them.")
    for path in paths:
        os.remove(path)
    children = sessions_dir(root) / session_id
    if children.is_dir():
        import shutil

        shutil.rmtree(children)
        paths.append(children)
    return paths
