from __future__ import annotations

import gzip
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from swecli.context import tokens
from swecli.context.tokens import (
    MESSAGE_OVERHEAD,
    REPLY_PRIMING,
    TOOL_CALL_OVERHEAD,
    TOOL_SCHEMA_OVERHEAD,
    TokenCounter,
    Tokenizer,
    encoding_for_model,
    head_by_tokens,
    load_encoding,
    serialize_tool,
    tail_by_tokens,
)
from swecli.llm.base import ModelRequest
from swecli.messages import (
    AssistantMessage,
    SystemBlock,
    ThinkingBlock,
    ToolCall,
    ToolMessage,
    ToolSchema,
    UserMessage,
)

# The names tiktoken's own loader caches these files under: sha1 of the download URL.
CACHE_NAMES = {
    "cl100k_base": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
    "o200k_base": "fb374d419588a4632f3f557e76b4b70aebbca790",
}

SAMPLES = [
    "hello world",
    "def f(x):\n    return x ** 2  # square\n\n\n",
    '{"path":"src/app.py","lines":[1,2,3],"ok":true}',
    "Ünïcödé, 漢字, emoji 🎉 and Ελληνικά",
    "text with <|endoftext|> and <|endofprompt|> inside",
    "   leading and trailing spaces   \r\n\ttabs",
    "1234567890 3.14159 -42",
    "I'm sure they'll say it's fine, we've done it",
]


@pytest.fixture(scope="module")
def real_tiktoken(tmp_path_factory: pytest.TempPathFactory) -> object:
    """tiktoken's own `get_encoding`, reading the same vocabularies from a pre-filled cache (it checks
    the sha256 itself), so our encodings are compared with tiktoken's real constructors."""
    import tiktoken
    import tiktoken.registry

    cache = tmp_path_factory.mktemp("tiktoken-cache")
    for name, key in CACHE_NAMES.items():
        with gzip.open(tokens.vocabulary_path(name), "rb") as src:
            (cache / key).write_bytes(src.read())
    mp = pytest.MonkeyPatch()
    mp.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    mp.setattr(tiktoken.registry, "ENCODINGS", {})
    yield tiktoken
    mp.undo()


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_offline_encodings_match_tiktoken_token_for_token(real_tiktoken: object, name: str) -> None:
    ours = load_encoding(name)
    theirs = real_tiktoken.get_encoding(name)  # type: ignore[attr-defined]
    assert ours is not None
    assert ours._pat_str == theirs._pat_str
    assert ours._special_tokens == theirs._special_tokens
    assert ours.n_vocab == theirs.n_vocab
    source = Path(tokens.__file__).read_text(encoding="utf-8")
    for text in [*SAMPLES, source]:
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
        assert ours.encode(text, disallowed_special=()) == theirs.encode(text, disallowed_special=())


def test_counts_equal_raw_tiktoken_on_the_same_text(real_tiktoken: object) -> None:
    theirs = real_tiktoken.get_encoding("o200k_base")  # type: ignore[attr-defined]
    counter = TokenCounter("o200k_base")
    for text in SAMPLES:
        assert counter.text(text) == len(theirs.encode_ordinary(text))


def test_loading_reads_nothing_from_tiktoken_cache_or_network(monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken.load

    def forbidden(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("tiktoken's downloader/cache was used")

    monkeypatch.setattr(tiktoken.load, "read_file_cached", forbidden)
    monkeypatch.setattr(tiktoken.load, "read_file", forbidden)
    monkeypatch.setattr(tokens, "_loaded", {})
    assert load_encoding("cl100k_base") is not None


def test_loading_is_once_and_thread_safe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_loaded", {})
    builds = []
    real_build = tokens._build

    def counting_build(name: str) -> object:
        builds.append(name)
        return real_build(name)

    monkeypatch.setattr(tokens, "_build", counting_build)
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(load_encoding("cl100k_base"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds == ["cl100k_base"]
    assert len({id(r) for r in results}) == 1


def test_missing_or_corrupt_vocabulary_falls_back_to_a_character_estimate(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cold"))  # no decoded copy (conftest links a warm one)
    corrupt = tmp_path / "o200k_base.tiktoken.gz"
    corrupt.write_bytes(gzip.compress(b"bm90IHRoZSByZWFsIGZpbGU= 0\n"))
    monkeypatch.setattr(tokens, "_loaded", {})
    monkeypatch.setattr(tokens, "vocabulary_path", lambda name: str(corrupt))
    counter = TokenCounter("o200k_base")
    assert counter.text("x" * 300) == 100
    assert not counter.exact and counter.encoding_in_use == "chars"
    assert "sha256" in tokens.encoding_error("o200k_base")

    monkeypatch.setattr(tokens, "_loaded", {})
    monkeypatch.setattr(tokens, "vocabulary_path", lambda name: str(tmp_path / "missing.gz"))
    assert load_encoding("o200k_base") is None
    assert "cannot read" in tokens.encoding_error("o200k_base")


def test_a_broken_vocabulary_falls_back_to_the_other_one_before_characters(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cold"))  # no decoded copy (conftest links a warm one)
    real = tokens.vocabulary_path
    monkeypatch.setattr(tokens, "_loaded", {})
    monkeypatch.setattr(tokens, "vocabulary_path",
                        lambda name: str(tmp_path / "gone.gz") if name == "o200k_base" else real(name))
    counter = TokenCounter("o200k_base")
    assert counter.exact and counter.encoding_in_use == "cl100k_base"
    assert counter.text("hello world") == 2


def test_importing_the_module_loads_nothing(fresh_process: dict[str, Any]) -> None:
    assert fresh_process["imported"] == {"loaded": [], "tiktoken": False}


@pytest.mark.parametrize(("model", "encoding"), [
    ("gpt-4", "cl100k_base"), ("gpt-4-turbo", "cl100k_base"), ("gpt-3.5-turbo", "cl100k_base"),
    ("gpt-4o", "o200k_base"), ("gpt-4.1-mini", "o200k_base"), ("openai/gpt-4-0613", "cl100k_base"),
    ("claude-sonnet-4-5", "o200k_base"), ("qwen3-coder", "o200k_base"), ("", "o200k_base"),
])
def test_encoding_for_model(model: str, encoding: str) -> None:
    assert encoding_for_model(model) == encoding


def test_message_counts_cover_everything_that_is_sent() -> None:
    counter = TokenCounter()
    text = counter.text
    call = ToolCall(id="call_abc", name="read_file", arguments='{"path": "src/app.py"}')
    assistant = AssistantMessage(content="", reasoning="long private thoughts " * 20, tool_calls=(call,))
    assert counter.message(assistant) == (MESSAGE_OVERHEAD + TOOL_CALL_OVERHEAD + text("read_file")
                                          + text('{"path": "src/app.py"}'))
    result = ToolMessage(tool_call_id="call_abc", name="read_file", content="print('hi')\n")
    assert counter.message(result) == MESSAGE_OVERHEAD + text("read_file") + text("print('hi')\n")
    user = UserMessage(content="fix it")
    assert counter.message(user) == MESSAGE_OVERHEAD + text("fix it")
    with_reasoning = TokenCounter(include_reasoning=True)
    assert with_reasoning.message(assistant) == counter.message(assistant) + text(assistant.reasoning)


def test_request_count_adds_system_tools_tail_and_priming() -> None:
    counter = TokenCounter()
    schema = ToolSchema(name="bash", description="Run a command",
                        parameters={"type": "object", "properties": {"command": {"type": "string"}}})
    system = (SystemBlock(text="You are swecli."),)
    messages = (UserMessage(content="hello"),)
    request = ModelRequest(system=system, messages=messages, tools=(schema,), tail="goal: x")
    expected = (counter.system(system) + TOOL_SCHEMA_OVERHEAD + counter.text(serialize_tool(schema))
                + counter.messages(messages) + MESSAGE_OVERHEAD + counter.text("goal: x") + REPLY_PRIMING)
    assert counter.request(request) == expected


def test_tool_schemas_serialize_deterministically() -> None:
    a = ToolSchema(name="t", description="d", parameters={"b": 1, "a": {"z": 1, "y": 2}})
    b = ToolSchema(name="t", description="d", parameters={"a": {"y": 2, "z": 1}, "b": 1})
    assert serialize_tool(a) == serialize_tool(b)
    assert json.loads(serialize_tool(a))["parameters"] == {"a": {"y": 2, "z": 1}, "b": 1}


class CountingTokenizer(Tokenizer):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def __call__(self, text: str) -> int:
        self.texts.append(text)
        return len(text)


def test_each_message_is_counted_once() -> None:
    counter = TokenCounter()
    spy = CountingTokenizer()
    counter.text = spy
    history = [UserMessage(content=f"message {i}") for i in range(50)]
    first = counter.messages(history)
    calls_after_first = len(spy.texts)
    history.append(UserMessage(content="new"))
    assert counter.messages(history) == first + MESSAGE_OVERHEAD + 3
    assert len(spy.texts) == calls_after_first + 1  # only the new message was tokenized


def test_the_cache_forgets_dead_messages_and_never_returns_a_stale_count() -> None:
    counter = TokenCounter()
    counter.message(UserMessage(content="short"))
    assert counter.cached_messages() == 0  # the temporary died and its entry went with it
    keep = [UserMessage(content="x " * n) for n in range(1, 200)]
    counts = [counter.message(m) for m in keep]
    assert counts == sorted(counts) and len(set(counts)) == len(counts)
    assert counter.cached_messages() == len(keep)


def test_signed_thinking_blocks_count_as_sent_and_plain_reasoning_does_not() -> None:
    counter = TokenCounter()
    plain = AssistantMessage(content="answer", reasoning="a long private chain of thought " * 20)
    signed = plain.model_copy(update={"thinking": (ThinkingBlock(text="a long private chain of thought " * 20,
                                                                 signature="sig"),)})
    assert counter.message(plain) == counter.message(AssistantMessage(content="answer"))
    assert counter.message(signed) == counter.message(plain) + counter.text("a long private chain of thought " * 20)


def test_head_and_tail_by_tokens_keep_the_most_text_within_the_budget() -> None:
    counter = TokenCounter()
    text = "word " * 1000
    head = head_by_tokens(text, 100, counter.text)
    assert counter.text(head) <= 100 < counter.text(text[: len(head) + 10])
    tail = tail_by_tokens(text, 100, counter.text)
    assert text.endswith(tail) and counter.text(tail) <= 100 < counter.text(text[-len(tail) - 10:])
    assert head_by_tokens("short", 100, counter.text) == "short" == tail_by_tokens("short", 100, counter.text)
    assert tail_by_tokens("x" * 50, 0, len) == "" == head_by_tokens("x" * 50, 0, len)


# --- the decoded vocabulary kept per user, and loading beside the first request --------------------------


def test_the_decoded_vocabulary_is_kept_once_and_read_back_the_same(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    sha = tokens._SPECS["cl100k_base"].sha256
    path = Path(tokens.ranks_cache_path("cl100k_base", sha))
    assert not path.exists()
    decoded = tokens._read_ranks("cl100k_base")  # decodes the gzip file and keeps the result
    assert path.is_file() and path.parent == tmp_path / "swecli" / "tokenizers"
    assert tokens._read_cached_ranks("cl100k_base", sha) == decoded
    assert tokens._read_ranks("cl100k_base") == decoded


def test_no_vocabulary_is_kept_or_read_in_the_project_under_a_relative_cache_home(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative `$XDG_CACHE_HOME` names a place in the directory swecli starts in (the project, which a
    repository or a sandboxed command may fill): the vocabulary is decoded, not read from or kept there."""
    sha = tokens._SPECS["cl100k_base"].sha256
    kept = Path(str(tokens.ranks_cache_path("cl100k_base", sha))).read_bytes()  # the run's, decoded once (conftest)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", "cache")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    planted = tmp_path / "cache" / "swecli" / "tokenizers" / f"cl100k_base-{sha[:16]}.marshal"
    planted.parent.mkdir(parents=True)
    planted.write_bytes(kept)  # a valid table: it would be used if the path were read
    assert tokens.ranks_cache_path("cl100k_base", sha) == str(tmp_path / "home/.cache" / planted.relative_to(
        tmp_path / "cache"))  # the home's, as with no $XDG_CACHE_HOME
    assert tokens.ranks_cache_path("cl100k_base", sha, {"XDG_CACHE_HOME": "cache", "HOME": "home"}) is None
    assert tokens._read_cached_ranks("cl100k_base", sha) is None
    planted.unlink()
    tokens._write_cached_ranks("cl100k_base", sha, {b"a": 0, b"b": 1})
    assert not planted.exists()


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "not a token list", "empty"])
def test_a_damaged_kept_vocabulary_is_decoded_again_never_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  damage: str) -> None:
    import hashlib
    import marshal

    sha = tokens._SPECS["cl100k_base"].sha256
    kept = Path(tokens.ranks_cache_path("cl100k_base", sha)).read_bytes()  # the run's, decoded once (conftest)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = Path(tokens.ranks_cache_path("cl100k_base", sha))
    path.parent.mkdir(parents=True)
    path.write_bytes(kept)
    decoded = tokens._read_cached_ranks("cl100k_base", sha)
    assert decoded is not None and len(decoded) > 100_000
    blob = path.read_bytes()
    if damage == "flipped byte":
        blob = blob[:1000] + bytes([blob[1000] ^ 1]) + blob[1001:]
    elif damage == "truncated":
        blob = blob[: len(blob) // 2]
    elif damage == "not a token list":  # a valid digest over something else: still refused
        body = marshal.dumps({"a": 1})
        blob = hashlib.blake2b(body, digest_size=16).digest() + body
    else:
        blob = b""
    path.write_bytes(blob)
    assert tokens._read_cached_ranks("cl100k_base", sha) is None
    assert tokens._read_ranks("cl100k_base") == decoded  # decoded again, and the file rewritten
    assert tokens._read_cached_ranks("cl100k_base", sha) == decoded


def test_an_unwritable_cache_leaves_counting_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert len(tokens._read_ranks("cl100k_base")) == 100_256


PREFETCH_SCRIPT = r"""
import json, sys, threading
import swecli.context.manager
from swecli.context import tokens
imported = {"loaded": sorted(tokens._loaded), "tiktoken": "tiktoken" in sys.modules}  # before anything counts
from swecli.context.tokens import TokenCounter, prefetch
from swecli.messages import UserMessage

start = threading.Event()
prefetch("o200k_base", start)
counter = TokenCounter("o200k_base")
message = UserMessage(content="hello world, " * 30)
before = {"loading": tokens.loading("o200k_base"), "generation": counter.generation, "exact": counter.exact,
          "count": counter.message(message), "cached": counter.cached_messages(),
          "retrieval_ready": counter.text.ready}
start.set()
tokens._prefetches["o200k_base"].join(60)
after = {"loading": tokens.loading("o200k_base"), "generation": counter.generation, "exact": counter.exact,
         "count": counter.message(message), "cached": counter.cached_messages()}
print(json.dumps({"imported": imported, "before": before, "after": after}))
"""


@pytest.fixture(scope="module")
def fresh_process(tmp_path_factory: pytest.TempPathFactory, _warm_vocabularies: list[Path]) -> dict[str, Any]:
    """PREFETCH_SCRIPT's findings, from a process of its own: encodings are loaded once per process, and what
    importing loads and what a prefetch does before its vocabulary is in need one with nothing loaded yet.
    One process for both tests, with a home of its own holding the run's decoded vocabularies (a module's
    fixture is made before the test's isolated environment is)."""
    import os
    import subprocess
    import sys

    from tests.unprivileged import link_vocabularies

    home = tmp_path_factory.mktemp("fresh-process-home")
    link_vocabularies(home, _warm_vocabularies)
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
           "XDG_CONFIG_HOME": str(home / ".config")}
    out = subprocess.run([sys.executable, "-c", PREFETCH_SCRIPT], capture_output=True, text=True, timeout=120,
                         check=True, env=env)
    findings: dict[str, Any] = json.loads(out.stdout)
    return findings


def test_a_prefetch_estimates_until_the_vocabulary_is_in_and_keeps_no_estimate(fresh_process: dict[str, Any]) -> None:
    before, after = fresh_process["before"], fresh_process["after"]
    text_tokens = len(("hello world, " * 30).strip()) / tokens.FALLBACK_CHARS_PER_TOKEN
    assert before["loading"] and before["generation"] == 0 and not before["exact"]
    assert not before["retrieval_ready"] and before["cached"] == 0  # an estimate is never kept
    assert before["count"] >= text_tokens
    assert not after["loading"] and after["generation"] == 1 and after["exact"]
    assert after["count"] == TokenCounter("o200k_base").message(UserMessage(content="hello world, " * 30))
    assert after["cached"] == 1


RESTARTED_SCRIPT = r"""
import json, threading
from swecli.context import tokens
from swecli.context.tokens import TokenCounter, prefetch

first, second = threading.Event(), threading.Event()
prefetch("o200k_base", first)  # a REPL's first session: its events would set `first`
prefetch("o200k_base", second)  # /clear before any request: a new session, whose events set `second`
second.set()
tokens._prefetches["o200k_base"].join(60)
print(json.dumps({"loading": tokens.loading("o200k_base"), "exact": TokenCounter("o200k_base").exact}))
"""


def test_a_prefetch_still_waiting_follows_the_latest_sessions_signal() -> None:
    # Before, the load kept waiting for the first session's signal, which nothing set again: every count of
    # the process stayed an estimate after a /clear or /resume that came before the first request.
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", RESTARTED_SCRIPT], capture_output=True, text=True, timeout=120,
                         check=True)
    assert json.loads(out.stdout) == {"loading": False, "exact": True}


def test_known_is_a_count_already_made_and_never_counts() -> None:
    from swecli.messages import UserMessage

    count = TokenCounter()
    message = UserMessage(content="hello there, counting once")
    assert count.known(message) is None
    assert count.known(message) is None  # asking did not count it
    made = count.message(message)
    assert count.known(message) == made > 0


def spied(tokenizer: Tokenizer) -> list[str]:
    """The texts `tokenizer` hands to tiktoken from now on (its encoding loaded first)."""
    assert tokenizer("warm") > 0 and tokenizer._encode is not None
    encode, seen = tokenizer._encode, []

    def counting(text: str) -> list[int]:
        seen.append(text)
        return encode(text)

    tokenizer._encode = counting
    return seen


def test_a_text_asked_about_again_is_tokenized_once_and_the_memo_stays_bounded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "MEMO_ENTRIES", 8)
    tokenizer = Tokenizer("o200k_base")
    seen = spied(tokenizer)
    tail = "[Failure evidence]\n- `pytest -q` failed 3 times in a row"
    assert tokenizer(tail) == tokenizer(tail) == tokenizer("".join(tail)) > 0  # an equal text is the same text
    assert seen == [tail]
    texts = [f"output {n}" for n in range(12)]
    first = [tokenizer(text) for text in texts]
    assert len(tokenizer._memo) == 8 and tail not in tokenizer._memo  # the oldest went first
    assert [tokenizer(text) for text in texts] == first and seen.count("output 0") == 2  # forgotten, counted again
    long = "x " * (tokens.MEMO_TEXT_CHARS // 2 + 1)
    tokenizer(long)
    assert long not in tokenizer._memo  # too long to keep: it would push out everything else
