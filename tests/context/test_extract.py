from __future__ import annotations

import json

from swecli.context.extract import LIMITS, Facts, extract_facts, parse_facts, render_facts
from swecli.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage


def exchange(cid: str, name: str, args: dict[str, object], output: str, is_error: bool = False) -> list[Message]:
    return [AssistantMessage(tool_calls=(ToolCall(id=cid, name=name, arguments=json.dumps(args)),)),
            ToolMessage(tool_call_id=cid, name=name, content=output, is_error=is_error)]


PYTEST_FAILURE = """\
============================= test session starts ==============================
collected 3 items

tests/test_app.py .F.                                                    [100%]

=================================== FAILURES ===================================
    def test_total():
>       assert total([1, 2]) == 4
E       assert 3 == 4

tests/test_app.py:12: AssertionError
=========================== short test summary info ============================
FAILED tests/test_app.py::test_total - assert 3 == 4
========================= 1 failed, 2 passed in 0.05s ==========================
"""


def test_files_commands_errors_tests_and_locations() -> None:
    history: list[Message] = [
        UserMessage(content="fix test_total"),
        *exchange("1", "read_file", {"path": "src/app.py"}, "def total(xs): ..."),
        *exchange("2", "bash", {"command": "python -m pytest -q"}, f"exit code 1\n{PYTEST_FAILURE}"),
        *exchange("3", "edit_file", {"path": "src/app.py", "old": "a", "new": "b"}, "edited"),
        *exchange("4", "write_file", {"path": "tests/test_new.py", "content": "..."}, "wrote 3 lines"),
        *exchange("5", "edit_file", {"path": "src/broken.py"}, "old text not found", is_error=True),
        *exchange("6", "bash", {"command": "cat <<'EOF' > notes.md\nhello > not_a_file\nEOF"},
                  "<returncode>0</returncode>"),
        *exchange("7", "bash", {"command": "sed -i 's/a/b/' src/util.py"}, ""),
    ]
    facts = extract_facts(history, meta={"7": {"exit_code": 0}})
    assert facts.files_read == ["src/app.py"]
    assert facts.files_modified == ["src/app.py", "notes.md", "src/util.py"]
    assert facts.files_created == ["tests/test_new.py"]
    assert facts.commands == ["[exit 1] python -m pytest -q", "[exit 0] cat <<'EOF' > notes.md  …(+2 lines)",
                              "[exit 0] sed -i 's/a/b/' src/util.py"]
    assert "E       assert 3 == 4" in facts.errors
    assert "FAILED tests/test_app.py::test_total - assert 3 == 4" in facts.test_results
    assert "========================= 1 failed, 2 passed in 0.05s ==========================" in facts.test_results
    assert facts.locations == ["tests/test_app.py:12"]


def test_python_traceback_locations_and_error_line() -> None:
    trace = ('Traceback (most recent call last):\n  File "/repo/pkg/mod.py", line 41, in run\n'
             '    x = y[0]\nIndexError: list index out of range\n')
    facts = extract_facts(exchange("1", "bash", {"command": "python run.py"}, trace))
    assert facts.locations == ["/repo/pkg/mod.py:41"]
    assert "IndexError: list index out of range" in facts.errors


def test_str_replace_editor_commands() -> None:
    history = [
        *exchange("1", "str_replace_editor", {"command": "view", "path": "/r/a.py"}, "..."),
        *exchange("2", "str_replace_editor", {"command": "create", "path": "/r/new.py", "file_text": "x"}, "ok"),
        *exchange("3", "str_replace_editor", {"command": "str_replace", "path": "/r/a.py"}, "ok"),
    ]
    facts = extract_facts(history)
    assert (facts.files_read, facts.files_created, facts.files_modified) == (["/r/a.py"], ["/r/new.py"], ["/r/a.py"])


def test_malformed_arguments_and_orphan_results_do_not_crash() -> None:
    history: list[Message] = [
        AssistantMessage(tool_calls=(ToolCall(id="1", name="bash", arguments="{not json"),)),
        ToolMessage(tool_call_id="1", name="bash", content="ok"),
        ToolMessage(tool_call_id="ghost", name="bash", content="ValueError: boom"),
    ]
    facts = extract_facts(history)
    assert facts.commands == [] and facts.errors == ["ValueError: boom"]


def test_render_and_parse_round_trip() -> None:
    facts = Facts(files_created=["a.py"], files_modified=["b.py", "dir with space/c.py"],
                  commands=["[exit 0] pytest -q", "[exit ?] make"], errors=["E   KeyError: 'x'"],
                  test_results=["=== 1 passed ==="], locations=["a.py:3"], archives=[".swecli/compactions/x.jsonl"])
    text = "## Summary\nstuff\n\n" + render_facts(facts) + "\n## Something else\n- not a fact"
    assert parse_facts(text) == facts
    assert render_facts(Facts()) == ""
    assert parse_facts("no facts here") == Facts()


def test_merge_dedupes_keeps_newest_and_bounds() -> None:
    old = Facts(commands=[f"[exit 0] cmd {i}" for i in range(LIMITS["commands"])])
    new = Facts(commands=["[exit 0] cmd 0", "[exit 1] new"])
    merged = old.merged(new)
    assert len(merged.commands) == LIMITS["commands"]
    assert merged.commands[-2:] == ["[exit 0] cmd 0", "[exit 1] new"]
    assert "[exit 0] cmd 1" not in merged.commands  # the oldest fell off


def test_earlier_summary_facts_are_carried_forward() -> None:
    earlier = UserMessage(kind="summary", content="[swecli: compacted context]\n\n" + render_facts(
        Facts(files_created=["first.py"], archives=[".swecli/compactions/1.jsonl"])))
    facts = extract_facts([earlier, *exchange("1", "write_file", {"path": "second.py"}, "ok")])
    assert facts.files_created == ["first.py", "second.py"]
    assert facts.archives == [".swecli/compactions/1.jsonl"]


def test_version_pins_arrows_and_fd_redirects_are_not_files() -> None:
    history = [
        *exchange("1", "bash", {"command": 'pip install "astroid>=2.9" && python x.py 2>&1 > /dev/null'}, ""),
        *exchange("2", "bash", {"command": 'python -c "def f() -> int: return 1" >> out/log.txt'}, ""),
    ]
    assert extract_facts(history).files_modified == ["out/log.txt"]


def test_library_frames_are_not_reported_as_locations() -> None:
    trace = "\n".join([
        '  File "/usr/lib/python3.11/socket.py", line 706, in readinto',
        '  File "/venv/lib/python3.11/site-packages/pip/x.py", line 3, in f',
        '  File "<frozen posixpath>", line 76, in join',
        '  File "/testbed/astroid/builder.py", line 121, in file_build',
    ])
    assert extract_facts(exchange("1", "bash", {"command": "pylint src"}, trace)).locations == [
        "/testbed/astroid/builder.py:121"]
