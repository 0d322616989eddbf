from __future__ import annotations

import json

from swecli.context.references import (
    KIND_LIMIT,
    REFERENCES_HEADING,
    Reference,
    extract_references,
    merge,
    parse_references,
    render_references,
    select,
)
from swecli.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage

ARCHIVE = ".swecli/compactions/20250101-000000-abcd1234.jsonl"
PYTEST = """Traceback (most recent call last):
  File "src/headers.py", line 12, in parse_header
    return split(value)
TypeError: split() missing 1 required positional argument: 'sep'
FAILED tests/test_headers.py::test_quoted - TypeError: split() missing 1 required positional argument
========================= 1 failed, 4 passed in 0.21s =========================
exit code 1"""


def call(i: int, name: str, **args: object) -> ToolCall:
    return ToolCall(id=f"c{i}", name=name, arguments=json.dumps(args))


def session() -> list[Message]:
    run = call(1, "bash", command="pytest -q tests/test_headers.py")
    read = call(2, "read_file", path="src/headers.py")
    edit = call(3, "edit_file", path="src/headers.py", old_string="split(value)", new_string="split(value, ';')")
    return [
        UserMessage(content="Quoted header values break, see https://github.com/acme/http/issues/42."),
        AssistantMessage(content="I will run the tests first.", tool_calls=(run,)),
        ToolMessage(tool_call_id="c1", name="bash", content=PYTEST, is_error=True),
        AssistantMessage(content="The failure is in `parse_header`.", tool_calls=(read,)),
        ToolMessage(tool_call_id="c2", name="read_file",
                    content="[output too large: saved to .swecli/tool_results/c2.txt, 900 lines]\n"
                            "     1\timport re\n    10\tdef parse_header(value):\n    30\tclass HeaderMap:\n"),
        AssistantMessage(content="Found it at src/headers.py:12.", tool_calls=(edit,)),
        ToolMessage(tool_call_id="c3", name="edit_file", content="Edited src/headers.py (1 replacement)"),
    ]


def by_kind(refs: list[Reference]) -> dict[str, list[Reference]]:
    out: dict[str, list[Reference]] = {}
    for ref in refs:
        out.setdefault(ref.kind, []).append(ref)
    return out


def test_extracts_every_kind_with_a_pointer_back() -> None:
    refs = extract_references(session(), transcript=ARCHIVE)
    kinds = by_kind(refs)
    errors = [r.text for r in kinds["error"]]
    assert errors == ["TypeError: split() missing 1 required positional argument: 'sep'"]
    assert {r.text for r in kinds["test"]} == {
        "FAILED tests/test_headers.py::test_quoted - TypeError: split() missing 1 required positional argument",
        "========================= 1 failed, 4 passed in 0.21s ========================="}
    assert all((r.source, r.index) == (ARCHIVE, 2) for r in kinds["test"] + kinds["error"])
    [location] = kinds["location"]
    assert location.text == "src/headers.py:12" and location.index == 5 and location.count == 2  # tool + finding
    [command] = kinds["command"]
    assert command.text == "[exit 1] pytest -q tests/test_headers.py"
    [file] = kinds["file"]
    assert (file.text, file.note, file.index) == ("src/headers.py", "modified", 6)
    [url] = kinds["url"]
    assert url.text == "https://github.com/acme/http/issues/42" and url.index == 0
    symbols = {r.text: r for r in kinds["symbol"]}
    assert set(symbols) == {"parse_header", "HeaderMap"}
    assert symbols["HeaderMap"].pointer == ".swecli/tool_results/c2.txt"  # the offload file has the full text
    assert symbols["HeaderMap"].index is None


def test_start_index_offsets_the_pointers() -> None:
    refs = extract_references(session(), transcript=ARCHIVE, start_index=100)
    assert {r.index for r in refs if r.kind == "command"} == {102}


def test_render_is_compact_and_parses_back() -> None:
    refs = extract_references(session(), transcript=ARCHIVE)
    text = render_references(refs, ARCHIVE)
    lines = text.splitlines()
    assert lines[0] == REFERENCES_HEADING and ARCHIVE in lines[1]
    assert "- [exit 1] pytest -q tests/test_headers.py ← #2" in lines
    assert "- src/headers.py (modified) ← #6" in lines
    assert "- HeaderMap ← .swecli/tool_results/c2.txt" in lines
    back = parse_references("Summary text...\n\n" + text + "\n\n## Something else\n- x ← #1")
    assert [(r.kind, r.text, r.source, r.index, r.note) for r in back] == [
        (r.kind, r.text, r.source, r.index, r.note) for r in refs]
    assert render_references([]) == ""


def test_references_from_an_earlier_summary_are_carried_forward_with_their_pointers() -> None:
    older = render_references(extract_references(session(), transcript="old.jsonl"), "old.jsonl")
    newer: list[Message] = [
        UserMessage(content="[summary]\n" + older, kind="summary"),
        AssistantMessage(tool_calls=(call(9, "bash", command="make lint"),)),
        ToolMessage(tool_call_id="c9", name="bash", content="error: unused import\nexit code 2", is_error=True),
    ]
    refs = extract_references(newer, transcript="new.jsonl", start_index=0)
    pointers = {r.text: r.pointer for r in refs}
    assert pointers["[exit 1] pytest -q tests/test_headers.py"] == "old.jsonl#2"
    assert pointers["[exit 2] make lint"] == "new.jsonl#2"
    text = render_references(refs, "new.jsonl")
    assert "- [exit 1] pytest -q tests/test_headers.py ← old.jsonl#2" in text
    assert "- [exit 2] make lint ← #2" in text


def test_selection_is_bounded_and_prefers_recent_and_repeated() -> None:
    history: list[Message] = []
    for i in range(40):
        c = call(i, "bash", command=f"cmd{i}")
        history += [AssistantMessage(tool_calls=(c,)),
                    ToolMessage(tool_call_id=c.id, name="bash", content=f"error: boom {i}\nexit code 1",
                                is_error=True)]
    refs = extract_references(history, transcript=ARCHIVE, limit=15)
    assert len(refs) == 15
    kinds = by_kind(refs)
    assert len(kinds["error"]) <= KIND_LIMIT["error"]
    assert "error: boom 39" in {r.text for r in kinds["error"]}
    assert "error: boom 0" not in {r.text for r in kinds["error"]}
    repeated = merge([Reference("file", "a.py", "t", 1, 3.0), Reference("file", "a.py", "t", 5, 3.5, note="read"),
                      Reference("file", "a.py", "t", 3, 3.2, note="modified")])
    assert len(repeated) == 1 and repeated[0].count == 3 and repeated[0].index == 3
    assert repeated[0].note == "modified" and repeated[0].score == 3.5 + 1.0
    assert select([], 10) == []


def test_long_lines_are_clipped() -> None:
    c = call(1, "bash", command="x")
    refs = extract_references([AssistantMessage(tool_calls=(c,)),
                               ToolMessage(tool_call_id="c1", name="bash", content="error: " + "y" * 500)],
                              transcript=ARCHIVE)
    assert all(len(r.text) <= 200 for r in refs)
