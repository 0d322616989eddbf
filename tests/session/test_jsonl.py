from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from swecli.session.jsonl import AppendOnlyFile, encode_line, read_jsonl
from swecli.session.secrets import REDACTED, Redactor


def test_append_writes_one_object_per_line(tmp_path: Path) -> None:
    path = tmp_path / "a" / "log.jsonl"
    f = AppendOnlyFile(path)
    f.append({"n": 1, "text": "line\nbreak"})
    f.append({"n": 2})
    f.close()
    lines = path.read_text().splitlines()
    assert [json.loads(line)["n"] for line in lines] == [1, 2]
    assert path.stat().st_mode & 0o777 == 0o600


def test_torn_last_line_is_reported_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"n":1}\n{"n":2}\n{"n":3, "te')
    contents = read_jsonl(path)
    assert [r["n"] for r in contents.records] == [1, 2]
    assert len(contents.problems) == 1 and "incomplete last line" in contents.problems[0]


def test_reopening_after_a_torn_line_starts_a_clean_line(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"n":1}\n{"n":2, "te')
    f = AppendOnlyFile(path)
    f.append({"n": 3})
    f.close()
    contents = read_jsonl(path)
    assert [r["n"] for r in contents.records] == [1, 3]
    assert len(contents.problems) == 1 and ":2:" in contents.problems[0]


def test_lines_written_before_a_sigkill_are_all_there(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from swecli.session.jsonl import AppendOnlyFile\n"
        "f = AppendOnlyFile(Path(sys.argv[1]))\n"
        "for n in range(50):\n"
        "    f.append({'n': n, 'pad': 'x' * 1000})\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(path)], check=False)
    assert proc.returncode == -signal.SIGKILL
    contents = read_jsonl(path)
    assert [r["n"] for r in contents.records] == list(range(50)) and not contents.problems


def test_a_line_that_is_not_an_object_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text('{"n":1}\n[1, 2]\nnot json\n{"n":2}\n')
    contents = read_jsonl(path)
    assert [r["n"] for r in contents.records] == [1, 2]
    assert len(contents.problems) == 2


def test_durable_mode_fsyncs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = os.fsync

    def recording_fsync(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    f = AppendOnlyFile(tmp_path / "d.jsonl", durable=True)
    f.append({"n": 1})
    f.close()
    assert calls


def _dumps_line(record: dict[str, object]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str) + "\n").encode()


def test_encode_line_parses_to_what_json_dumps_wrote_with_every_secret_replaced() -> None:
    key = "sk-live-ABCDEFGH12345678"
    redactor = Redactor([key])
    record: dict[str, object] = {
        "ts": "2026-11-26T19:34:12.123+00:00", "event": "tool", "args": {"command": f"curl -H {key}"},
        "nested": [1, 2.5, 0.004, 1e-05, 1e16, True, None, {"k": "ünïcode \"q\" \\ \x00\x1f\t"}],
        key: "a key that is a secret", "path": Path("src/a.py"), "big": 2**70,
    }
    line = encode_line(record, redactor)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == json.loads(_dumps_line(redactor.redact_obj(record)))
    assert key.encode() not in line and REDACTED.encode() in line
    plain = {k: v for k, v in record.items() if k not in ("nested", key)}
    assert encode_line(plain) == _dumps_line(plain)  # floats aside, the very bytes


def test_a_secret_inside_a_value_json_has_no_type_for_is_replaced_too() -> None:
    # the redaction walked dicts, lists and strings only; the encoder writes a Path, a set, bytes, a dataclass
    # or a pydantic model as the strings they hold, so a key inside one reached the log
    from pydantic import BaseModel

    from swecli.records import datarecord

    key = "sk-live-ABCDEFGH12345678"

    class Model(BaseModel):
        header: str

    @datarecord
    class Record:
        header: str

    values = [Path(f"/tmp/{key}/x"), {f"Bearer {key}"}, frozenset([key]), f"b:{key}".encode(), Model(header=key),
              Record(header=key), (key, 1)]
    for value in values:
        line = encode_line({"event": "tool", "value": value}, Redactor([key]))
        assert key.encode() not in line and REDACTED.encode() in line, value
        assert json.loads(line)["event"] == "tool"


def test_encode_line_fails_where_json_did() -> None:
    with pytest.raises(UnicodeEncodeError):
        encode_line({"text": "lone \ud800 surrogate"})


def test_append_line_writes_the_line_as_given(tmp_path: Path) -> None:
    log = AppendOnlyFile(tmp_path / "log.jsonl")
    log.append_line(b'{"a":1}\n')
    log.append({"b": 2})
    assert read_jsonl(log.path).records == [{"a": 1}, {"b": 2}]
