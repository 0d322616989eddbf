"""Almost-JSON tool arguments: repaired where there is one reading, left alone otherwise."""

from __future__ import annotations

import json

import pytest

from swecli.llm.arguments import normalize_arguments, repair_arguments
from swecli.llm.base import ModelRequest, ResponseDone
from swecli.llm.openai import OpenAIProvider
from swecli.messages import UserMessage
from swecli.testing.server import Call, Reply, ScriptedLLM


@pytest.mark.parametrize(("written", "meant"), [
    ('```json\n{"path": "a.py"}\n```', {"path": "a.py"}),
    ('```\n{"path": "a.py"}\n```\n', {"path": "a.py"}),
    ('{"path": "a.py", "limit": 10,}', {"path": "a.py", "limit": 10}),
    ('{"paths": ["a", "b",],}', {"paths": ["a", "b"]}),
    ("{'path': 'it\\'s.py'}", {"path": "it's.py"}),
    ('{path: "a.py"}', {"path": "a.py"}),
    ('{"path": "a.py" /* the file */}', {"path": "a.py"}),
    ('{"content": "line one\nline two\ttabbed"}', {"content": "line one\nline two\ttabbed"}),
    ('"{\\"path\\": \\"a.py\\"}"', {"path": "a.py"}),
    ("```json\n{'path': 'notes.txt', 'content': 'hi',}\n```", {"path": "notes.txt", "content": "hi"}),
])
def test_unambiguous_repairs(written: str, meant: dict[str, object]) -> None:
    repaired = repair_arguments(written)
    assert repaired is not None and json.loads(repaired) == meant


@pytest.mark.parametrize("written", [
    '{"path": "a.py", "content": "def f():\\n    ret',  # cut off inside a string: never completed by guessing
    '{"path": "a.py"',                                   # cut off before the closing brace
    '{"path": "a.py" "limit": 3}',                       # a missing comma: which was meant?
    '["a.py"]',                                          # not an object
    '{"ratio": NaN}',                                    # JSON cannot carry it
    "write a.py please",
])
def test_no_repair_without_one_reading(written: str) -> None:
    assert repair_arguments(written) is None
    assert normalize_arguments(written) == written


def test_valid_json_is_kept_byte_for_byte() -> None:
    text = '{"b": 1,   "a": "\\u00e9"}'
    assert repair_arguments(text) is None and normalize_arguments(text) == text
    assert normalize_arguments("") == normalize_arguments("  ") == "{}"


def test_the_provider_hands_over_repaired_arguments() -> None:
    with ScriptedLLM([Reply(calls=[Call("read_file", "```json\n{'path': 'a.py',}\n```")])]) as llm:
        provider = OpenAIProvider(model="m", base_url=llm.base_url)
        events = list(provider.stream(ModelRequest(system=(), messages=(UserMessage(content="go"),))))
        done = next(e for e in events if isinstance(e, ResponseDone))
        provider.close()
    assert done.message.tool_calls[0].arguments == '{"path": "a.py"}'
