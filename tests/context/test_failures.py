from __future__ import annotations

import json

import pytest

from swecli.context.failures import FailureTracker, classify, describe_call, evidence_line, normalized_args
from swecli.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage

PYTEST_FAIL = """============================= test session starts ==============================
collected 3 items

tests/test_parse.py .F.                                                  [100%]

=================================== FAILURES ===================================
___________________________________ test_quoted ___________________________________
    def test_quoted():
>       assert parse('"a b"') == "a b"
E       AssertionError: assert 'ab' == 'a b'
=========================== short test summary info ============================
FAILED tests/test_parse.py::test_quoted - AssertionError: assert 'ab' == 'a b'
========================= 1 failed, 2 passed in 0.05s ==========================
[exit code 1]"""


def bash(command: str, i: int = 0) -> ToolCall:
    return ToolCall(id=f"b{i}", name="bash", arguments=json.dumps({"command": command}))


def read(path: str, i: int = 0) -> ToolCall:
    return ToolCall(id=f"r{i}", name="read_file", arguments=json.dumps({"path": path}))


@pytest.mark.parametrize(("tool", "text", "kind"), [
    ("read_file", "path 'src/nope.py' does not exist; list the directory to find the file.", "not_found"),
    ("bash", "bash: pyhton: command not found\n[exit code 127]", "not_found"),
    ("bash", "ModuleNotFoundError: No module named 'yaml'", "not_found"),
    ("bash", "cat: /root/x: Permission denied", "permission"),
    ("write_file", "path '../x' is outside the project root /p; the file tools only work inside", "permission"),
    ("bash", '  File "a.py", line 3\n    def f(:\n          ^\nSyntaxError: invalid syntax', "syntax"),
    ("bash", "TypeError: unsupported operand type(s) for +: 'int' and 'str'", "type"),
    ("bash", "src/a.py:3: error: Incompatible types in assignment", "type"),
    ("bash", "command timed out after 120s (killed)", "timeout"),
    ("bash", "curl: (6) Could not resolve host: example.com", "network"),
    ("bash", "requests.exceptions.ConnectionError: Connection refused", "network"),
    ("bash", PYTEST_FAIL, "test_failure"),
    ("bash", "Ran 4 tests in 0.01s\n\nFAILED (failures=1)", "test_failure"),
    ("edit_file", "Invalid arguments for edit_file: old_string: Field required.", "invalid_args"),
    ("frobnicate", "Unknown tool 'frobnicate'. Available tools: bash, read_file.", "invalid_args"),
    ("bash", "bash is not available in plan mode (read-only). Explore with the read-only tools", "refused"),
    ("edit_file", "The user declined this edit_file call. Do not retry it unchanged", "refused"),
    ("bash", "something odd happened", "other"),
])
def test_classify(tool: str, text: str, kind: str) -> None:
    assert classify(tool, text) == kind


def test_a_read_file_with_assertions_in_it_is_not_a_test_failure() -> None:
    assert classify("read_file", "assert x == 1\nNo such file or directory") == "not_found"


def test_evidence_line_prefers_the_line_of_its_kind() -> None:
    assert evidence_line(PYTEST_FAIL, "test_failure").startswith("FAILED tests/test_parse.py::test_quoted")
    assert evidence_line("\n\n  first line\nsecond", "other") == "first line"
    assert evidence_line("", "other") == "(no output)"
    assert len(evidence_line("x" * 500, "other")) == 160


def test_normalized_args_ignore_key_order_and_whitespace() -> None:
    assert normalized_args('{"b": 1, "a": "pytest   -q"}') == normalized_args('{"a":"pytest -q","b":1}')
    assert normalized_args("{not json") == "{not json"
    assert describe_call(bash("pytest   -q")) == "pytest -q"
    assert describe_call(read("a.py")) == 'read_file {"path":"a.py"}'


def test_three_identical_failures_produce_a_note_with_the_evidence() -> None:
    tracker = FailureTracker()
    for i in range(2):
        obs = tracker.observe(bash("pytest -q", i), PYTEST_FAIL, True)
        assert obs.kind == "test_failure"
    assert tracker.note() == ""
    tracker.observe(bash("pytest  -q", 2), PYTEST_FAIL.replace("0.05s", "0.07s"), True)
    note = tracker.note()
    assert note.startswith("[Failure evidence]")
    assert "`pytest -q` failed 3 times in a row with test_failure: FAILED tests/test_parse.py::test_quoted" in note
    assert "try something else" in note
    assert tracker.summary() == "3 tool calls, 3 failed (test_failure 3)"


def test_a_success_resets_the_streak() -> None:
    tracker = FailureTracker()
    for i in range(2):
        tracker.observe(bash("pytest -q", i), PYTEST_FAIL, True)
    tracker.observe(bash("pytest -q", 3), "3 passed in 0.01s", False)
    tracker.observe(bash("pytest -q", 4), PYTEST_FAIL, True)
    assert "failed" not in tracker.note()


def test_changing_errors_take_longer_to_count_as_repeated() -> None:
    tracker = FailureTracker()
    outputs = ["FAILED tests/a.py::test_one", "FAILED tests/a.py::test_two", "FAILED tests/a.py::test_three",
               "FAILED tests/a.py::test_four", "FAILED tests/a.py::test_five"]
    for i, out in enumerate(outputs[:3]):
        tracker.observe(bash("pytest -q", i), out, True)
    assert tracker.note() == ""  # different errors: the model is making progress
    for i, out in enumerate(outputs[3:]):
        tracker.observe(bash("pytest -q", 10 + i), out, True)
    assert "failed 5 times in a row (latest: test_failure)" in tracker.note()


def test_different_calls_do_not_add_up() -> None:
    tracker = FailureTracker()
    for i, path in enumerate(["a.py", "b.py", "c.py"]):
        tracker.observe(read(path, i), f"path '{path}' does not exist", True)
    assert tracker.note() == ""
    assert tracker.failures == {"not_found": 3}


def test_identical_successful_calls_are_a_loop() -> None:
    tracker = FailureTracker(loop_threshold=4, window=10)
    for i in range(3):
        tracker.observe(read("src/a.py", i), "1\tdef f(): pass", False)
        tracker.observe(bash(f"echo {i}", i), "ok", False)
    assert tracker.note() == ""
    tracker.observe(read("src/a.py", 9), "1\tdef f(): pass", False)
    note = tracker.note()
    assert 'read_file {"path":"src/a.py"}` was called 4 times with identical arguments' in note


def test_the_note_fades_once_the_model_moved_on() -> None:
    tracker = FailureTracker(linger=5, window=10)
    for i in range(3):
        tracker.observe(bash("make", i), "make: *** No rule to make target 'all'. Stop.\nexit code 2", True)
    assert "`make` failed 3 times" in tracker.note()
    for i in range(4):
        tracker.observe(read(f"f{i}.py", i), "text", False)
    assert "`make` failed 3 times" in tracker.note()
    tracker.observe(read("g.py"), "text", False)
    assert tracker.note() == ""


def test_a_failing_loop_is_reported_once_as_a_failure() -> None:
    tracker = FailureTracker(loop_threshold=3)
    for i in range(3):
        tracker.observe(bash("pytest -q", i), PYTEST_FAIL, True)
    note = tracker.note()
    assert note.count("pytest -q") == 1 and "failed 3 times" in note


def test_nonzero_exit_of_a_shell_call_counts_as_failure_even_without_is_error() -> None:
    tracker = FailureTracker()
    obs = tracker.observe(bash("grep -r foo"), "no output\n[exit code 1]", False)
    assert obs.failed and obs.kind == "other"
    assert not tracker.observe(read("x"), "exit code 1 appears in this file", False).failed


def test_replay_observes_a_saved_history() -> None:
    history: list[Message] = [UserMessage(content="fix it")]
    for i in range(3):
        call = bash("pytest -q", i)
        history += [AssistantMessage(tool_calls=(call,)),
                    ToolMessage(tool_call_id=call.id, name="bash", content=PYTEST_FAIL, is_error=True)]
    tracker = FailureTracker()
    tracker.replay(history)
    assert tracker.calls == 3 and "failed 3 times" in tracker.note()


def test_long_output_keeps_the_verdict_at_the_end() -> None:
    text = ("collected 900 items\n" + "tests/a.py ....\n" * 20_000
            + "FAILED tests/a.py::t - boom\n1 failed in 3s\nexit code 1")
    assert classify("bash", text) == "test_failure"
    assert evidence_line(text, "test_failure") == "FAILED tests/a.py::t - boom"


def test_the_note_asked_for_twice_a_turn_follows_every_call_until_it_lingers_out() -> None:
    tracker = FailureTracker()
    notes = []
    for i in range(10):
        tracker.observe(bash("pytest -q", i) if i < 3 else read(f"src/m{i}.py", i), PYTEST_FAIL, i < 3)
        notes.append(tracker.note())
        assert tracker.note() == notes[-1]  # the request asks again, after prepare did
    assert notes[:2] == ["", ""] and "failed 3 times in a row" in notes[2]
    assert notes[2] == notes[6] and notes[7:] == ["", "", ""]  # five calls on, the model has moved on
