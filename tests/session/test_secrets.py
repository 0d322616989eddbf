from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from swecli.config import Settings
from swecli.session.secrets import REDACTED, Redactor

KEY = "sk-test-0123456789abcdef"


def test_secret_environment_values_are_redacted() -> None:
    env = {"ACME_API_KEY": KEY, "GITHUB_TOKEN": "ghp_abcdefgh1234", "DB_SECRET": "hunter2hunter2",
           "PATH": "/usr/bin:/bin", "EDITOR": "vim-editor-long"}
    redactor = Redactor.from_environment(env=env)
    text = f"key={KEY} token=ghp_abcdefgh1234 secret=hunter2hunter2 path=/usr/bin:/bin editor=vim-editor-long"
    assert redactor.redact(text) == (
        f"key={REDACTED} token={REDACTED} secret={REDACTED} path=/usr/bin:/bin editor=vim-editor-long")


def test_settings_api_key_is_redacted_even_without_environment() -> None:
    redactor = Redactor.from_environment(Settings(api_key=KEY), env={})
    assert redactor.redact(f"Authorization: Bearer {KEY}") == f"Authorization: Bearer {REDACTED}"


def test_short_values_are_not_treated_as_secrets() -> None:
    redactor = Redactor.from_environment(Settings(api_key="ollama"), env={"X_TOKEN": "abc"})
    assert not redactor
    assert redactor.redact("ollama abc") == "ollama abc"


def test_json_escaped_form_is_redacted_too() -> None:
    secret = 'pa"ss\\word-123'
    redactor = Redactor([secret])
    arguments = json.dumps({"command": f"login {secret}"})  # how it sits inside a tool call's raw JSON
    assert secret not in json.loads(redactor.redact(arguments))["command"]
    assert REDACTED in redactor.redact(arguments)


def test_redact_obj_walks_nested_structures_and_keeps_other_types() -> None:
    redactor = Redactor([KEY])
    data = {"a": [KEY, {"b": f"x{KEY}y"}], "n": 3, "ok": True, KEY: None}
    assert redactor.redact_obj(data) == {"a": [REDACTED, {"b": f"x{REDACTED}y"}], "n": 3, "ok": True,
                                         REDACTED: None}


def test_longer_secret_containing_a_shorter_one_is_replaced_whole() -> None:
    redactor = Redactor(["abcdefgh", "abcdefgh-ijklmnop"])
    assert redactor.redact("abcdefgh-ijklmnop") == REDACTED


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from(["sk-live-ABCDEFGH1234", "tok_0123456789", "x", "\n", "sk-live-", "abc"]),
                       max_size=40),
       sizes=st.lists(st.integers(min_value=1, max_value=17), min_size=1, max_size=8))
def test_secrets_cut_by_any_piece_boundary_are_masked_in_a_stream(pieces: list[str], sizes: list[int]) -> None:
    redactor = Redactor(["sk-live-ABCDEFGH1234", "tok_0123456789"])
    data = "".join(pieces).encode()
    chunks, start, turn = [], 0, 0
    while start < len(data):  # the same bytes, cut into pieces of varying sizes
        size = sizes[turn % len(sizes)]
        chunks.append(data[start:start + size])
        start, turn = start + size, turn + 1
    assert b"".join(redactor.redact_chunks(chunks)) == redactor.redact_bytes(data)
    assert redactor.redact_bytes(data) == redactor.redact(data.decode()).encode()


def test_a_stream_without_secrets_passes_through_untouched() -> None:
    assert list(Redactor([]).redact_chunks([b"a", b"b"])) == [b"a", b"b"]


def test_may_be_in_json_is_false_only_when_no_string_holds_a_secret() -> None:
    redactor = Redactor([KEY])
    clean, holding = json.dumps({"a": ["x", {"b": "y"}]}), json.dumps({"a": ["x", {"b": f"y{KEY}z"}]})
    assert not redactor.may_be_in_json(clean) and not redactor.may_be_in_json(clean.encode())
    assert redactor.may_be_in_json(holding) and redactor.may_be_in_json(holding.encode())
    assert not Redactor([]).may_be_in_json(holding)
    # a secret JSON escapes may hide behind its escapes: never ruled out
    assert Redactor(['pass"word-12345']).may_be_in_json(clean)


_plain = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_secrets = st.lists(st.sampled_from([KEY, "ghp_abcdefghijklmnop", 'tab\there-and"quote', "é-unicode-secret"]),
                    max_size=3)


@settings(max_examples=200, deadline=None)
@given(secrets=_secrets, pieces=st.lists(st.tuples(_plain, st.booleans()), min_size=1, max_size=6))
def test_a_json_text_without_a_secret_is_an_object_redaction_leaves_alone(
        secrets: list[str], pieces: list[tuple[str, bool]]) -> None:
    redactor = Redactor(secrets)
    planted = [text + (secrets[0] if secret and secrets else "") for text, secret in pieces]
    obj = {text: [text, {"k": text}] for text in planted}
    for text in (json.dumps(obj, ensure_ascii=False), json.dumps(obj, ensure_ascii=False, separators=(",", ":"))):
        if not redactor.may_be_in_json(text):
            assert redactor.redact_obj(obj) == obj
            assert not redactor.may_be_in_json(text.encode())
