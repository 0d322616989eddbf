from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path

import pytest

from swecli.messages import (
    AssistantMessage,
    ImagePart,
    Message,
    ThinkingBlock,
    ToolCall,
    ToolMessage,
    UserMessage,
    dangling_tool_calls,
)
from swecli.session.secrets import NO_REDACTION, Redactor
from swecli.session.store import (
    RESUME_CLOSE_REASON,
    SessionError,
    Transcript,
    delete_session,
    format_session_line,
    latest_session,
    list_sessions,
    load_session,
    log_path,
    message_line,
    new_session_id,
    persist_closed_calls,
    replace_line,
    resolve_session_id,
    sessions_older_than,
    transcript_path,
)
from swecli.testing.shared import load_trajectory, trajectory_paths


def conversation() -> list[Message]:
    call = ToolCall(id="c1", name="read_file", arguments='{"path": "a.py"}')
    return [
        UserMessage(content="fix the bug in a.py"),
        AssistantMessage(content="Reading it.", reasoning="look first", tool_calls=(call,)),
        ToolMessage(tool_call_id="c1", name="read_file", content="print('hi')"),
        AssistantMessage(content="Done."),
    ]


def write(root: Path, session_id: str, messages: list[Message], model: str = "m") -> Transcript:
    transcript = Transcript(root, session_id, model=model)
    for message in messages:
        transcript.append(message)
    transcript.close()
    return transcript


def set_mtime(path: Path, seconds: int) -> None:
    os.utime(path, (seconds, seconds))


def test_session_ids_sort_by_creation_time(project: Path) -> None:
    early = new_session_id(project, datetime(2026, 11, 22, 9, 5, 1))
    late = new_session_id(project, datetime(2026, 11, 22, 10, 15, 30))
    assert re.fullmatch(r"20261122-090501-[0-9a-f]{4}", early)
    assert late.startswith("20261122-101530-") and sorted([late, early]) == [early, late]


def test_messages_replay_to_the_same_history(project: Path) -> None:
    write(project, "s1", conversation())
    loaded = load_session(project, "s1")
    assert loaded.history == conversation() and not loaded.problems and loaded.closed_calls == 0


def test_meta_line_comes_first_with_the_first_prompt(project: Path) -> None:
    write(project, "s1", conversation(), model="gpt-x")
    first = json.loads(transcript_path(project, "s1").read_text().splitlines()[0])
    assert first["type"] == "meta" and first["session_id"] == "s1" and first["model"] == "gpt-x"
    assert first["first_prompt"] == "fix the bug in a.py" and first["cwd"] == str(project)
    assert datetime.fromisoformat(first["created"])


def test_nothing_is_written_for_a_session_without_messages(project: Path) -> None:
    Transcript(project, "empty").close()
    assert not transcript_path(project, "empty").exists()


def test_write_meta_creates_the_file_up_front(project: Path) -> None:
    transcript = Transcript(project, "s1")
    transcript.write_meta("the task")
    transcript.append(UserMessage(content="the task"))
    transcript.close()
    lines = transcript_path(project, "s1").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["first_prompt"] == "the task"


def test_torn_last_line_after_a_kill_is_skipped_and_the_session_goes_on(project: Path) -> None:
    write(project, "s1", conversation()[:3])
    path = transcript_path(project, "s1")
    with path.open("ab") as f:  # a kill in the middle of writing the fourth message
        f.write(b'{"type":"message","message":{"role":"assistant","content":"Do')
    loaded = load_session(project, "s1")
    assert loaded.history == conversation()[:3]
    assert len(loaded.problems) == 1 and "incomplete last line" in loaded.problems[0]
    resumed = Transcript(project, "s1")
    resumed.append(AssistantMessage(content="Done."))
    resumed.close()
    again = load_session(project, "s1")
    assert again.history == conversation() and len(again.problems) == 1


def test_replace_lines_reproduce_the_compacted_history(project: Path) -> None:
    transcript = Transcript(project, "s1")
    for message in conversation():
        transcript.append(message)
    summary = UserMessage(content="Summary: fixed a.py", kind="summary")
    transcript.replace([summary, conversation()[-1]], "compaction")
    transcript.append(UserMessage(content="now add a test"))
    transcript.close()
    loaded = load_session(project, "s1")
    assert loaded.history == [summary, conversation()[-1], UserMessage(content="now add a test")]


def test_dangling_tool_calls_are_closed_on_load(project: Path) -> None:
    calls = (ToolCall(id="c1", name="bash", arguments='{"command": "make"}'),
             ToolCall(id="c2", name="read_file", arguments="{}"))
    messages: list[Message] = [
        UserMessage(content="build it"),
        AssistantMessage(content="Building.", tool_calls=calls),
        ToolMessage(tool_call_id="c1", name="bash", content="ok"),
    ]
    write(project, "s1", messages)  # killed while c2 was running
    loaded = load_session(project, "s1")
    assert loaded.raw_history == messages and loaded.closed_calls == 1
    assert not dangling_tool_calls(loaded.history)
    closing = loaded.history[-1]
    assert isinstance(closing, ToolMessage) and closing.tool_call_id == "c2" and closing.is_error
    assert closing.content == RESUME_CLOSE_REASON


def test_persisting_closed_calls_makes_the_file_replay_to_a_valid_history(project: Path) -> None:
    call = ToolCall(id="c1", name="bash", arguments="{}")
    write(project, "s1", [UserMessage(content="go"), AssistantMessage(tool_calls=(call,))])
    loaded = load_session(project, "s1")
    transcript = Transcript(project, "s1")
    persist_closed_calls(transcript, loaded)
    transcript.close()
    reloaded = load_session(project, "s1")
    assert reloaded.raw_history == loaded.history and reloaded.closed_calls == 0


def test_invalid_message_record_is_reported_not_fatal(project: Path) -> None:
    write(project, "s1", conversation()[:1])
    with transcript_path(project, "s1").open("a") as f:
        f.write('{"type":"message","message":{"role":"wizard","content":"x"}}\n')
        f.write('{"type":"surprise"}\n')
    loaded = load_session(project, "s1")
    assert loaded.history == conversation()[:1] and len(loaded.problems) == 2


def test_loading_an_unknown_session_is_a_clear_error(project: Path) -> None:
    with pytest.raises(SessionError, match=r"no session 'nope'.*swecli sessions"):
        load_session(project, "nope")


def test_list_sessions_latest_first_with_prompt_turns_and_tokens(project: Path) -> None:
    write(project, "20261120-090000-aaaa", [UserMessage(content="old task")])
    write(project, "20261121-090000-bbbb", [
        UserMessage(content="first"), AssistantMessage(content="ok"),
        UserMessage(content="context", kind="context"), UserMessage(content="second"),
    ])
    log = log_path(project, "20261121-090000-bbbb")
    log.parent.mkdir(parents=True)
    log.write_text('{"event":"llm_call","tokens_in":100,"tokens_out":20}\n'
                   '{"event":"llm_call","tokens_in":150,"tokens_out":30}\n{"event":"tool"}\n')
    set_mtime(transcript_path(project, "20261120-090000-aaaa"), 1_000)
    set_mtime(transcript_path(project, "20261121-090000-bbbb"), 2_000)
    sessions = list_sessions(project)
    assert [s.session_id for s in sessions] == ["20261121-090000-bbbb", "20261120-090000-aaaa"]
    newest = sessions[0]
    assert (newest.first_prompt, newest.turns, newest.tokens) == ("first", 2, 300)
    assert sessions[1].tokens == 0 and sessions[1].turns == 1
    assert latest_session(project) == "20261121-090000-bbbb"


def test_latest_is_the_most_recently_active_session(project: Path) -> None:
    write(project, "20261120-090000-aaaa", [UserMessage(content="old")])
    write(project, "20261121-090000-bbbb", [UserMessage(content="new")])
    set_mtime(transcript_path(project, "20261121-090000-bbbb"), 1_000)
    set_mtime(transcript_path(project, "20261120-090000-aaaa"), 2_000)  # resumed later
    assert latest_session(project) == "20261120-090000-aaaa"


def test_no_sessions_yet(project: Path) -> None:
    assert list_sessions(project) == [] and latest_session(project) is None


def test_resolve_session_id_accepts_a_unique_prefix(project: Path) -> None:
    for sid in ("20261120-090000-aaaa", "20261120-090000-abbb", "20261121-100000-cccc"):
        write(project, sid, [UserMessage(content="x")])
    assert resolve_session_id(project, "20261121") == "20261121-100000-cccc"
    assert resolve_session_id(project, "20261120-090000-aaaa") == "20261120-090000-aaaa"
    with pytest.raises(SessionError, match="matches 2 sessions"):
        resolve_session_id(project, "20261120-090000-a")
    with pytest.raises(SessionError, match="no session matches"):
        resolve_session_id(project, "1999")


def test_delete_removes_transcript_and_log_only_of_that_session(project: Path) -> None:
    write(project, "s1", [UserMessage(content="x")])
    write(project, "s2", [UserMessage(content="y")])
    log_path(project, "s1").parent.mkdir(parents=True)
    log_path(project, "s1").write_text("{}\n")
    removed = delete_session(project, "s1")
    assert set(removed) == {transcript_path(project, "s1"), log_path(project, "s1")}
    assert not any(p.exists() for p in removed) and transcript_path(project, "s2").exists()
    with pytest.raises(SessionError, match="no session 's1' to delete"):
        delete_session(project, "s1")


def test_sessions_older_than_and_the_list_line(project: Path) -> None:
    write(project, "20261101-090000-aaaa", [UserMessage(content="an old   task\nwith lines")])
    write(project, "20261121-090000-bbbb", [UserMessage(content="x" * 100), UserMessage(content="y")])
    now = datetime(2026, 11, 22, 12, 0).astimezone()
    set_mtime(transcript_path(project, "20261101-090000-aaaa"), int(datetime(2026, 11, 1, 9, 0).timestamp()))
    set_mtime(transcript_path(project, "20261121-090000-bbbb"), int(datetime(2026, 11, 21, 9, 0).timestamp()))
    assert [s.session_id for s in sessions_older_than(project, 7, now)] == ["20261101-090000-aaaa"]
    assert sessions_older_than(project, 30, now) == []
    old, new = sorted(list_sessions(project), key=lambda s: s.session_id)
    assert format_session_line(old) == ("20261101-090000-aaaa  2026-11-01 09:00     1 turn           0 tokens  "
                                        "an old task with lines")
    assert format_session_line(new).endswith("2 turns           0 tokens  " + "x" * 59 + "…")


# --- the transcript's lines: pydantic's encoding, the same bytes as before -----------------------------

KEY = "sk-live-ABCDEFGH12345678"


def _old_line(record: dict[str, object]) -> bytes:
    """How a transcript line was made before: every string redacted, then `json.dumps`."""
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str) + "\n").encode()


def _every_kind_of_message() -> list[Message]:
    image = ImagePart(media_type="image/png", data="iVBORw0KGgo=", width=3, height=2, path="shot.png")
    call = ToolCall(id="call_1", name="bash", arguments=f'{{"command": "echo {KEY} \\"quoted\\" é\\n"}}')
    return [
        UserMessage(content="fix the bug: ünïcode, \"quotes\", back\\slash, \x00\x1f\x7f\u2028 tabs\t",
                    images=(image,)),
        UserMessage(content="a summary", kind="summary"),
        AssistantMessage(content="", reasoning="think", tool_calls=(call,),
                         thinking=(ThinkingBlock(text="t", signature="sig"), ThinkingBlock(redacted="xyz"))),
        ToolMessage(tool_call_id="call_1", name="bash", content=f"{KEY}\n[exit 0]", is_error=True, images=(image,)),
        ToolMessage(tool_call_id="call_2", name="read_file", content="no secret here"),
    ]


@pytest.mark.parametrize("secrets", [[], [KEY], ["nothing-like-it-here"], ['a"quote\\and-backslash']])
def test_message_and_replace_lines_are_the_bytes_json_dumps_wrote(secrets: list[str]) -> None:
    redactor = Redactor(secrets)
    history = _every_kind_of_message()
    for message in history:
        assert message_line(message, redactor) == _old_line(
            {"type": "message", "message": redactor.redact_obj(message.model_dump(mode="json"))})
    assert replace_line(history, f"compaction {KEY}", redactor) == _old_line(
        {"type": "replace", "reason": redactor.redact(f"compaction {KEY}"),
         "messages": [redactor.redact_obj(m.model_dump(mode="json")) for m in history]})
    if secrets == [KEY]:
        assert KEY.encode() not in b"".join(message_line(m, redactor) for m in history)


@pytest.mark.skipif(not trajectory_paths(), reason="../shared/trajectories not present")
def test_real_histories_lines_are_the_bytes_json_dumps_wrote() -> None:
    for path in trajectory_paths():
        history = load_trajectory(path)[2]
        words = [w for m in history for w in m.content.split() if len(w) >= 12 and w.isalnum()]
        # a word of the history taken as a secret, so that redaction really happens in some lines
        for redactor in (NO_REDACTION, Redactor([KEY]), Redactor(words[len(words) // 2:][:1])):
            for message in history:
                assert message_line(message, redactor) == _old_line(
                    {"type": "message", "message": redactor.redact_obj(message.model_dump(mode="json"))}), path


def test_a_message_json_cannot_encode_fails_as_it_did() -> None:
    with pytest.raises(UnicodeEncodeError):
        message_line(ToolMessage(tool_call_id="c", name="bash", content="lone \ud800 surrogate"))


def test_a_line_that_may_hold_a_secret_is_redacted_and_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A secret JSON escapes makes every line take the redacting path: the record, redacted once, is encoded
    once (not searched, redacted and encoded again)."""
    from swecli.session import jsonl

    encoded: list[object] = []
    real = jsonl.to_json
    monkeypatch.setattr(jsonl, "to_json", lambda value, **kw: encoded.append(value) or real(value, **kw))
    redactor = Redactor(['a"quote\\and-backslash'])
    history = _every_kind_of_message()
    for message in history:
        message_line(message, redactor)
    replace_line(history, "compaction", redactor)
    assert len(encoded) == len(history) + 1
