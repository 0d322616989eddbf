from __future__ import annotations

import json
import os
import re
import time
from datetime import datetime
from pathlib import Path

import pytest

from swecli.config import Settings
from swecli.events import CompactionDone, ContextOverflow, TurnFinished
from swecli.messages import ToolCall, Usage
from swecli.session.log import (
    SessionLog,
    config_digest,
    find_log,
    format_log,
    modified_path,
    now_iso,
    stats_from_records,
    summarize_args,
)
from swecli.session.secrets import REDACTED, Redactor
from swecli.session.store import SessionError, log_path
from swecli.tools.base import ToolResult


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_call(path: str, call_id: str = "w1") -> ToolCall:
    return ToolCall(id=call_id, name="write_file", arguments=json.dumps({"path": path, "content": "x" * 500}))


def busy_log(root: Path) -> SessionLog:
    log = SessionLog(root, "s1")
    log.session_start(Settings(model="gpt-4.1", provider="openai", api_key="sk-abcdefgh12345678"), root)
    log.user_input("fix it")
    log.llm_call(Usage(input_tokens=1000, output_tokens=50, cache_read_tokens=800, requests=1), 1.25, "gpt-4.1",
                 "tool_calls")
    log.tool(write_call("src/a.py"), ToolResult("wrote"), 0.01)
    log.tool(ToolCall(id="b1", name="bash", arguments='{"command": "pytest"}'),
             ToolResult("1 failed", is_error=True, meta={"exit_code": 1}), 2.5)
    log.tool(write_call("src/b.py", "w2"), ToolResult("declined", is_error=True), 0.0, approved=False)
    log.context(64_000, 128_000)
    log.compaction(CompactionDone("auto", "summarize", 100_000, 20_000, 42, 3.0))
    log.turn_end(TurnFinished("done", 3, Usage(input_tokens=1000, output_tokens=50), 5.0, tool_calls=3))
    log.error("provider said no")
    return log


def test_every_line_is_a_json_object_with_ts_and_event(project: Path) -> None:
    log = busy_log(project)
    log.stats()
    log.close()
    lines = log_path(project, "s1").read_text().splitlines()
    events = []
    for line in lines:
        record = json.loads(line)
        assert isinstance(record["ts"], str) and record["ts"][:2] == "20"
        events.append(record["event"])
    assert events == ["session_start", "user_input", "llm_call", "tool", "tool", "tool", "context", "compaction",
                      "turn_end", "error", "stats"]


def test_record_fields(project: Path) -> None:
    busy_log(project).close()
    by_event: dict[str, list[dict[str, object]]] = {}
    for record in records(log_path(project, "s1")):
        by_event.setdefault(str(record["event"]), []).append(record)
    start = by_event["session_start"][0]
    assert start["model"] == "gpt-4.1" and start["cwd"] == str(project) and len(str(start["config_digest"])) == 12
    assert "sk-abcdefgh12345678" not in json.dumps(start)
    llm = by_event["llm_call"][0]
    assert (llm["tokens_in"], llm["tokens_out"], llm["tokens_cached"], llm["duration"]) == (1000, 50, 800, 1.25)
    write, bash, declined = by_event["tool"]
    assert write["path"] == "src/a.py" and write["approved"] is True and write["is_error"] is False
    assert isinstance(write["args"], dict) and "500 chars" in str(write["args"]["content"])
    assert bash["exit_code"] == 1 and bash["is_error"] is True and "path" not in bash
    assert declined["approved"] is False and "path" not in declined
    assert by_event["context"][0]["usage_percent"] == 50.0
    compaction = by_event["compaction"][0]
    assert compaction["reduction_percent"] == 80.0 and compaction["messages_compacted"] == 42


def test_stats_cover_the_whole_session(project: Path) -> None:
    busy_log(project).close()
    resumed = SessionLog(project, "s1")  # a resumed session appends to the same log
    resumed.session_start(Settings(model="gpt-4.1"), project, resumed=True)
    resumed.user_input("and the test")
    resumed.tool(write_call("tests/test_a.py", "w3"), ToolResult("wrote"), 0.01)
    stats = resumed.stats()
    resumed.close()
    assert stats["turns"] == 2 and stats["llm_calls"] == 1 and stats["tools_executed"] == 4
    assert stats["tool_errors"] == 2 and stats["compactions"] == 1 and stats["errors"] == 1
    assert stats["total_tokens"] == 1050 and stats["tokens_cached"] == 800 and stats["runs"] == 2
    assert stats["files_modified"] == ["src/a.py", "tests/test_a.py"]
    last = records(log_path(project, "s1"))[-1]
    assert last["event"] == "stats" and {k: last[k] for k in stats} == stats


def test_secrets_never_reach_the_log(project: Path) -> None:
    secret = "sk-live-SECRET-0123456789"
    log = SessionLog(project, "s1", redactor=Redactor([secret]))
    log.user_input(f"use key {secret}")
    log.tool(ToolCall(id="b", name="bash", arguments=json.dumps({"command": f"curl -H 'k: {secret}'"})),
             ToolResult(secret), 0.1)
    log.error(f"401 for key {secret}")
    log.close()
    text = log_path(project, "s1").read_text()
    assert secret not in text and text.count(REDACTED) == 3


def test_config_digest_ignores_the_key_but_not_the_settings() -> None:
    a = config_digest(Settings(model="m", api_key="key-one-123456789"))
    assert a == config_digest(Settings(model="m", api_key="key-two-987654321"))
    assert a != config_digest(Settings(model="other"))


def test_args_summary_is_bounded() -> None:
    summary = summarize_args(call_with(json.dumps({f"k{i}": "v" * 100 for i in range(50)})))
    assert isinstance(summary, str) and len(summary) <= 1_000
    assert summarize_args(call_with("{not json")) == "{not json"
    assert summarize_args(call_with('{"path": "a.py"}')) == {"path": "a.py"}


def test_modified_path_is_relative_to_root_for_absolute_paths(project: Path) -> None:
    call = write_call(str(project / "pkg" / "m.py"))
    assert modified_path(call, ToolResult("ok"), project) == "pkg/m.py"
    assert modified_path(call, ToolResult("no", is_error=True), project) is None
    read = ToolCall(id="r", name="read_file", arguments='{"path": "a.py"}')
    assert modified_path(read, ToolResult("..."), project) is None


def test_stats_from_records_tolerates_missing_fields() -> None:
    stats = stats_from_records([{"event": "llm_call"}, {"event": "tool"}, {"nothing": 1}])
    assert stats["llm_calls"] == 1 and stats["tools_executed"] == 1 and stats["total_tokens"] == 0


def test_format_log_is_readable_and_reports_an_unclean_end(project: Path) -> None:
    busy_log(project).close()
    with log_path(project, "s1").open("a") as f:
        f.write('{"ts": "2026-11-22T10:00:00", "event": "llm_ca')  # killed mid-line
    lines = format_log(log_path(project, "s1"))
    text = "\n".join(lines)
    assert "in 1,000 (cached 800)  out 50" in text
    assert "write_file" in text and "declined" in text and "(exit 1)" in text
    assert "64,000 / 128,000 tokens (50.0%)" in text
    assert "100,000 → 20,000 tokens (-80.0%), 42 messages" in text
    assert "did not end cleanly" in text and "files modified: src/a.py" in text
    assert lines[-1].startswith("warning:") and "incomplete last line" in lines[-1]


def test_format_log_falls_back_to_raw_fields_for_odd_records(project: Path) -> None:
    path = log_path(project, "odd")
    path.parent.mkdir(parents=True)
    path.write_text('{"ts":"2026-11-22T10:00:00","event":"llm_call","model":"m"}\n'
                    '{"ts":"2026-11-22T10:00:01","event":"custom","x":1}\n')
    text = "\n".join(format_log(path))
    assert "model=m" in text and "x=1" in text


def test_find_log_latest_by_default_or_by_prefix(project: Path) -> None:
    with pytest.raises(SessionError, match="no session logs"):
        find_log(project)
    for i, sid in enumerate(["20261120-090000-aaaa", "20261121-090000-bbbb"]):
        SessionLog(project, sid).close()
        os.utime(log_path(project, sid), (1000 + i, 1000 + i))
    assert find_log(project).stem == "20261121-090000-bbbb"
    assert find_log(project, "20261120").stem == "20261120-090000-aaaa"
    with pytest.raises(SessionError, match="matches 2 logs"):
        find_log(project, "2026112")
    with pytest.raises(SessionError, match="no log for session"):
        find_log(project, "1999")


def call_with(arguments: str) -> ToolCall:
    return ToolCall(id="c1", name="write_file", arguments=arguments)


def test_context_overflow_record_and_its_line(project: Path) -> None:
    log = SessionLog(project, "s2")
    log.session_start(Settings(model="gemma3-270m", provider="llamacpp"), project)
    log.context_overflow(ContextOverflow(131_072, 4096, 5000, "prompt too long", adopted=True))
    log.close()
    start, overflow = records(log.path)
    assert start["context_window"] == 131_072 and start["window_source"] == "known-models table"
    assert overflow == {**overflow, "event": "context_overflow", "planned_window": 131_072, "server_window": 4096,
                        "requested": 5000, "adopted": True, "text": "prompt too long"}
    lines = format_log(log.path)
    assert any("server window 4096, planned 131,072 (adopted): prompt too long" in line for line in lines)


def test_a_records_time_is_the_local_time_to_the_millisecond_with_its_offset() -> None:
    before = datetime.now().astimezone()
    stamps = [now_iso() for _ in range(3)]
    after = datetime.now().astimezone()
    for stamp in stamps:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d(:\d\d)?", stamp)
        moment = datetime.fromisoformat(stamp)
        assert before.replace(microsecond=before.microsecond // 1000 * 1000) <= moment <= after
        assert moment.utcoffset() == after.utcoffset()
    assert stamps == sorted(stamps)


def test_a_records_time_follows_a_change_of_time_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        for zone, offset in (("IST-5:30", "+05:30"), ("EST5", "-05:00")):
            monkeypatch.setenv("TZ", zone)
            time.tzset()
            first = second = now_iso()
            # a second's text is kept while the clock stays in it: the new zone shows from the next second on
            while second[:19] == first[:19]:
                time.sleep(0.02)
                second = now_iso()
            assert second.endswith(offset), (zone, second)
    finally:
        monkeypatch.undo()
        time.tzset()
