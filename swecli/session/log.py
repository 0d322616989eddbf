"""Structured session logs: `<root>/.swecli/logs/<session_id>.jsonl`, one JSON object per line.

Every record has `ts` (local ISO time) and `event`:
  session_start  cwd, model, provider, context_window, window_source, config_digest (hash of the settings
                 without secrets), resumed
  user_input     text
  llm_call       model, tokens_in, tokens_out, tokens_cached, cache_write, tokens_reasoning (when
                 reported), duration, finish_reason, usage_reported (false: the server sent no usage
                 and the token numbers are swecli's own counts)
  tool           tool, call_id, args (summary, long values truncated), approved, is_error, exit_code,
                 duration, summary, path (files a write/edit changed)
  context        total_tokens, window, usage_percent
  compaction     trigger, strategy, tokens_before, tokens_after, reduction_percent, messages_compacted,
                 duration, waited (seconds the loop stood still), background (summary made ahead)
  background_summary  phase (started, then used | failed | cancelled | declined | dropped), messages,
                 tokens, duration (start to end), used, note
  context_overflow planned_window, server_window, requested, adopted, text (a provider's context-length error)
  history_replaced reason, messages
  turn_end       stop_reason, iterations, tool_calls, tokens, tokens_estimated, duration
  subagent       a sub-agent's end: parent_call, agent, stop_reason, iterations, tool_calls, tokens, transcript
                 (its llm_call and tool records carry parent_call and agent too)
  error/warning  text
  stats          (on close) turns, llm_calls, tools_executed, compactions, compaction_wait, total_tokens,
                 files_modified...
Lines are appended as events happen (see `jsonl.AppendOnlyFile`), so a crash leaves every earlier
line valid; the stats are recomputed from the whole file, so a resumed session's stats cover all of it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from swecli.config import Settings
from swecli.events import BackgroundSummary, CompactionDone, ContextOverflow, SummarySpent, TurnFinished
from swecli.messages import ToolCall, Usage
from swecli.session.jsonl import AppendOnlyFile, encode_line, read_jsonl
from swecli.session.secrets import NO_REDACTION, Redactor
from swecli.session.store import SessionError, log_path, logs_dir
from swecli.tools.base import ToolResult
from swecli.tools.facts import facts_for

ARG_VALUE_CHARS = 120
ARGS_SUMMARY_CHARS = 1_000
USER_INPUT_CHARS = 4_000


def now_iso() -> str:
    """The local time to the millisecond, with its UTC offset: `2026-11-26T19:34:12.123+01:00`."""
    now = time.time()
    second = int(now)
    cached = _SECOND_ISO[0]
    if cached[0] != second:
        cached = _iso_of_second(second)
    return f"{cached[1]}.{int((now - second) * 1000):03d}{cached[2]}"


def _iso_of_second(second: int) -> tuple[int, str, str]:
    """The date and time of one second, and its UTC offset, kept while the clock stays in that second: a
    record's time was three datetimes made and formatted (~30,000 instructions, three records a tool call);
    a day or an offset (daylight saving) changes only at a second's boundary. One tuple, replaced whole, so
    a thread reading it never sees one second's date with another's offset."""
    text = datetime.fromtimestamp(second).astimezone().isoformat(timespec="seconds")
    _SECOND_ISO[0] = kept = (second, text[:19], text[19:])
    return kept


_SECOND_ISO: list[tuple[int, str, str]] = [(-1, "", "")]


def config_digest(settings: Settings) -> str:
    """A short hash of every setting except the key: two logs with the same digest ran the same config."""
    data = settings.model_dump(mode="json", exclude={"api_key"})
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]


_ARGS_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
"""`json.dumps(..., ensure_ascii=False, default=str)`, kept: `dumps` with options builds an encoder per call."""


def summarize_args(call: ToolCall) -> dict[str, Any] | str:
    """Tool arguments for the log: long strings cut (with their length), the whole bounded."""
    raw, data = call.arguments, call.args()
    if not data and raw.strip() not in ("", "{}"):
        return _cut(raw, ARG_VALUE_CHARS)  # malformed JSON from the model: keep a readable piece
    summary = {key: _cut(value, ARG_VALUE_CHARS) if isinstance(value, str) else value for key, value in data.items()}
    text = _ARGS_ENCODER.encode(summary)
    return summary if len(text) <= ARGS_SUMMARY_CHARS else _cut(text, ARGS_SUMMARY_CHARS)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[: limit - 20]}… ({len(text):,} chars)"


def modified_path(call: ToolCall, result: ToolResult, root: Path | None = None) -> str | None:
    """The file a successful call of a file-writing tool changed, relative to root when it is inside it."""
    if not facts_for(call.name).writes_files or result.is_error:
        return None
    args = call.args()
    raw = result.meta.get("path") or args.get("path") or args.get("file_path")
    if not isinstance(raw, str) or not raw:
        return None
    if root is not None and Path(raw).is_absolute():
        try:
            return Path(raw).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return raw
    return raw


class SessionLog:
    """The writer for one session's JSON log; every method appends one record and flushes it."""

    def __init__(self, root: Path, session_id: str, redactor: Redactor = NO_REDACTION, durable: bool = False,
                 clock: Callable[[], str] = now_iso) -> None:
        self.root = root
        self.session_id = session_id
        self.path = log_path(root, session_id)
        self.redactor = redactor
        self._clock = clock
        self._file = AppendOnlyFile(self.path, durable=durable)

    def write(self, event: str, **fields: Any) -> None:
        record = {"ts": self._clock(), "event": event, **fields}
        self._file.append_line(encode_line(record, self.redactor))

    def session_start(self, settings: Settings, cwd: Path, resumed: bool = False) -> None:
        from swecli import __version__

        self.write("session_start", session_id=self.session_id, cwd=str(cwd), model=settings.model,
                   provider=settings.provider, base_url=settings.base_url, mode=settings.mode,
                   context_window=settings.context_window, window_source=settings.window_source,
                   config_digest=config_digest(settings),
                   resumed=resumed, version=__version__)

    def user_input(self, text: str) -> None:
        self.write("user_input", text=_cut(text, USER_INPUT_CHARS), chars=len(text))

    def llm_call(self, usage: Usage, duration: float, model: str, finish_reason: str = "",
                 reported: bool = True, **link: str) -> None:
        """`link`: parent_call and agent, for a sub-agent's call."""
        extra = {"tokens_reasoning": usage.reasoning_tokens} if usage.reasoning_tokens else {}
        self.write("llm_call", model=model, tokens_in=usage.input_tokens, tokens_out=usage.output_tokens,
                   tokens_cached=usage.cache_read_tokens, cache_write=usage.cache_write_tokens, **extra,
                   duration=round(duration, 3), finish_reason=finish_reason, usage_reported=reported, **link)

    def subagent(self, turn: TurnFinished, transcript: str, **link: str) -> None:
        self.write("subagent", **link, stop_reason=turn.stop_reason, iterations=turn.iterations,
                   tool_calls=turn.tool_calls, tokens=turn.usage.total_tokens, duration=round(turn.duration, 3),
                   transcript=transcript)

    def tool(self, call: ToolCall, result: ToolResult, duration: float, approved: bool = True, **link: str) -> None:
        fields: dict[str, Any] = {
            "tool": call.name, "call_id": call.id, "args": summarize_args(call), "approved": approved,
            "is_error": result.is_error, "duration": round(duration, 3), "summary": result.summary, **link,
        }
        if "exit_code" in result.meta:
            fields["exit_code"] = result.meta["exit_code"]
        path = modified_path(call, result, self.root) if approved else None
        if path:
            fields["path"] = path
        self.write("tool", **fields)

    def context(self, total_tokens: int, window: int) -> None:
        percent = round(100 * total_tokens / window, 1) if window else 0.0
        self.write("context", total_tokens=total_tokens, window=window, usage_percent=percent)

    def compaction(self, done: CompactionDone) -> None:
        self.write("compaction", trigger=done.trigger, strategy=done.strategy, tokens_before=done.tokens_before,
                   tokens_after=done.tokens_after, reduction_percent=round(100 * done.reduction, 1),
                   messages_compacted=done.messages_compacted, duration=round(done.duration, 3),
                   waited=round(done.waited, 3), background=done.background, note=done.note)

    def summary(self, spent: SummarySpent) -> None:
        """A compaction's summary requests: billed like llm_calls (and counted with them in the stats)."""
        usage = spent.usage
        self.write("summary", trigger=spent.trigger, requests=usage.requests, tokens_in=usage.input_tokens,
                   tokens_out=usage.output_tokens, tokens_cached=usage.cache_read_tokens,
                   cache_write=usage.cache_write_tokens, usage_estimated=usage.estimated)

    def background_summary(self, event: BackgroundSummary) -> None:
        self.write("background_summary", phase=event.phase, messages=event.messages, tokens=event.tokens,
                   duration=round(event.duration, 3), used=event.used, note=event.note)

    def context_overflow(self, overflow: ContextOverflow) -> None:
        self.write("context_overflow", planned_window=overflow.planned_window, server_window=overflow.server_window,
                   requested=overflow.requested, adopted=overflow.adopted, text=overflow.message)

    def history_replaced(self, reason: str, messages: int) -> None:
        self.write("history_replaced", reason=reason, messages=messages)

    def turn_end(self, turn: TurnFinished) -> None:
        self.write("turn_end", stop_reason=turn.stop_reason, iterations=turn.iterations, tool_calls=turn.tool_calls,
                   tokens=turn.usage.total_tokens, tokens_estimated=turn.usage.estimated,
                   duration=round(turn.duration, 3), error=turn.error)

    def error(self, text: str, level: str = "error") -> None:
        self.write(level, text=text)

    def stats(self) -> dict[str, Any]:
        """Write (and return) the stats of the whole session, recomputed from this log."""
        stats = stats_from_records(read_jsonl(self.path).records)
        self.write("stats", **stats)
        return stats

    def close(self) -> None:
        self._file.close()

    @property
    def closed(self) -> bool:
        return self._file.closed


def stats_from_records(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    counts = {"user_input": 0, "llm_call": 0, "tool": 0, "compaction": 0, "error": 0, "session_start": 0}
    tokens = {"tokens_in": 0, "tokens_out": 0, "tokens_cached": 0}
    files: set[str] = set()
    tool_errors = 0
    waited = 0.0
    for record in records:
        event = record.get("event")
        if event in counts:
            counts[str(event)] += 1
        if event == "compaction":
            waited += float(record.get("waited") or 0.0)
        if event in ("llm_call", "summary"):  # a compaction's summary requests are billed too
            for key in tokens:
                tokens[key] += int(record.get(key) or 0)
        elif event == "tool":
            tool_errors += bool(record.get("is_error"))
            if record.get("path"):
                files.add(str(record["path"]))
    return {
        "turns": counts["user_input"], "llm_calls": counts["llm_call"], "tools_executed": counts["tool"],
        "tool_errors": tool_errors, "compactions": counts["compaction"],
        "compaction_wait": round(waited, 3), "errors": counts["error"],
        **tokens, "total_tokens": tokens["tokens_in"] + tokens["tokens_out"],
        "files_modified": sorted(files), "runs": counts["session_start"],
    }


# --- reading: `swecli logs [SESSION]` -----------------------------------------------------------


def find_log(root: Path, session: str | None = None) -> Path:
    """The log of `session` (an id or unique prefix), or the most recently written one."""
    folder = logs_dir(root)
    logs = sorted(folder.glob("*.jsonl"), key=lambda p: (p.stat().st_mtime_ns, p.stem), reverse=True) \
        if folder.is_dir() else []
    if not logs:
        raise SessionError(f"no session logs in {folder} yet; they are written as sessions run.")
    if session is None:
        return logs[0]
    matches = [p for p in logs if p.stem == session] or [p for p in logs if p.stem.startswith(session)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise SessionError(f"no log for session {session!r} in {folder}; run `swecli sessions` to list them.")
    raise SessionError(f"{session!r} matches {len(matches)} logs; give more of the session id.")


def format_log(path: Path) -> list[str]:
    """A session log as readable lines (plain text: the CLI may style it)."""
    contents = read_jsonl(path)
    lines = [f"Session {path.stem}  ({path})"]
    day = ""
    for record in contents.records:
        ts = str(record.get("ts", ""))
        if ts[:10] != day:
            day = ts[:10]
            lines.append(f"── {day} ──")
        event = str(record.get("event", "?"))
        lines.append(f"{ts[11:19]:8}  {event:<14} {_describe(event, record)}".rstrip())
    if not any(r.get("event") == "stats" for r in contents.records[-1:]):
        stats = stats_from_records(contents.records)
        lines.append(f"(no final stats record: the session did not end cleanly) {_describe('stats', stats)}")
    lines.extend(f"warning: {problem}" for problem in contents.problems)
    return lines


def _describe(event: str, r: dict[str, Any]) -> str:
    describe = _DESCRIBERS.get(event)
    if describe is not None:
        try:
            return describe(r)
        except (KeyError, TypeError, ValueError):
            pass  # a hand-edited or older record: fall back to its raw fields
    return " ".join(f"{k}={v}" for k, v in r.items() if k not in ("ts", "event"))


def _describe_tool(r: dict[str, Any]) -> str:
    args = r.get("args")
    shown = " ".join(f"{k}={v!r}" for k, v in args.items()) if isinstance(args, dict) else str(args or "")
    status = "declined" if not r.get("approved", True) else ("error" if r.get("is_error") else "ok")
    if "exit_code" in r:
        status += f" (exit {r['exit_code']})"
    return f"{r['tool']} {_cut(shown, 100)}  {status}  {r.get('duration', 0):.2f}s"


def _describe_stats(r: dict[str, Any]) -> str:
    files = r.get("files_modified") or []
    return (f"{r['turns']} turns, {r['llm_calls']} llm calls, {r['tools_executed']} tools, "
            f"{r['compactions']} compactions, {r['total_tokens']:,} tokens"
            + (f", files modified: {', '.join(files)}" if files else ""))


_DESCRIBERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "session_start": lambda r: (f"{'resumed ' if r.get('resumed') else ''}model={r['model']} "
                                f"provider={r['provider']} cwd={r['cwd']} config={r['config_digest']}"),
    "user_input": lambda r: repr(_cut(str(r["text"]), 100)),
    "llm_call": lambda r: (f"{r['model']}  in {r['tokens_in']:,} (cached {r['tokens_cached']:,})  "
                           f"out {r['tokens_out']:,}  {r['duration']:.2f}s"
                           + ("  (estimated: no usage reported)" if r.get("usage_reported") is False else "")),
    "tool": _describe_tool,
    "context": lambda r: f"{r['total_tokens']:,} / {r['window']:,} tokens ({r['usage_percent']}%)",
    "compaction": lambda r: (f"{r['strategy']} ({r['trigger']}): {r['tokens_before']:,} → {r['tokens_after']:,} "
                             f"tokens (-{r['reduction_percent']}%), {r['messages_compacted']} messages"
                             + (f", summary made in the background, waited {r.get('waited', 0):.1f}s"
                                if r.get("background") else "")),
    "background_summary": lambda r: (f"{r['phase']}: {r['messages']} messages at {r['tokens']:,} tokens"
                                     + (f", after {r['duration']:.1f}s" if r["phase"] != "started" else "")
                                     + (f" ({r['note']})" if r.get("note") else "")),
    "history_replaced": lambda r: f"{r['reason']}: {r['messages']} messages",
    "context_overflow": lambda r: (f"server window {r['server_window'] or '?'}, planned {r['planned_window']:,}"
                                   f"{' (adopted)' if r.get('adopted') else ''}: {_cut(str(r['text']), 100)}"),
    "turn_end": lambda r: (f"{r['stop_reason']} after {r['iterations']} iterations, {r['tool_calls']} tool calls, "
                           f"{r['tokens']:,} tokens, {r['duration']:.1f}s"),
    "subagent": lambda r: (f"{r['agent']} for call {r['parent_call']}: {r['stop_reason']} after {r['iterations']} "
                           f"iterations, {r['tool_calls']} tool calls, {r['tokens']:,} tokens; {r['transcript']}"),
    "error": lambda r: str(r["text"]),
    "warning": lambda r: str(r["text"]),
    "stats": _describe_stats,
}
