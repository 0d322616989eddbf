"""The append-only check and prefix-reuse accounting for outgoing requests.

Providers cache the longest prompt prefix a request shares with an earlier one: tool schemas, then
the system prompt (and session memory), then the history. swecli keeps that prefix byte-identical
between requests; only a compaction or a decay event may rewrite it (each one costs a cache miss
from the first changed message on). `PrefixMonitor` watches every request the loop sends:

- it measures how much of the request (in local tokens) is the prefix shared with the previous
  request, and keeps totals: reuse ratio and effective input (uncached + 0.1 x cached, what a
  caching provider bills in uncached-token equivalents);
- between two requests with no `mark_rewrite(reason)` call in between, the earlier request's tool
  schemas, system blocks and messages must be an exact prefix of the later one's; otherwise
  `observe` returns a warning (the caller shows it as a Notice). The dynamic tail is exempt: it is
  sent after the history and may change every request.

Comparison is by identity first, then by a deterministic serialization (`json.dumps(sort_keys=True)` of
each part), hashed once per object and cached by identity (as `TokenCounter` caches counts): messages are
immutable, so the same object is the same bytes. Only two different objects at the same place (a rewrite,
an equal copy of a message) are serialized to be compared. A request that extends the previous one costs
one identity comparison per message (in C) and a count per new message; none is serialized.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING

from swecli.context.tokens import MESSAGE_OVERHEAD, TOOL_SCHEMA_OVERHEAD, IdentityCache, TokenCounter, serialize_tool
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolMessage, ToolSchema, UserMessage
from swecli.records import datarecord

if TYPE_CHECKING:
    from swecli.llm.base import ModelRequest

CACHED_PRICE = 0.1
"""What a cached prompt token costs relative to an uncached one (OpenAI and Anthropic read price)."""


@datarecord(frozen=True)
class Unit:
    """One cacheable piece of a request, in wire order."""

    kind: str
    """`tool`, `system`, `message` or `tail`."""
    key: bytes
    """The hash of its serialization; b"" until it is needed (`PrefixMonitor` compares identity first)."""
    tokens: int
    label: str


class Reuse:
    """What reusing a prefix saves, for one request (`PrefixReport`) or a session's (`PrefixStats`)."""

    total_tokens: int
    shared_tokens: int

    @property
    def reuse_ratio(self) -> float:
        return self.shared_tokens / self.total_tokens if self.total_tokens else 0.0

    @property
    def effective_tokens(self) -> float:
        return self.total_tokens - self.shared_tokens + CACHED_PRICE * self.shared_tokens


@datarecord(frozen=True)
class PrefixReport(Reuse):
    """How much of one request's prompt repeats the previous request's (what a cache can serve)."""

    number: int
    """1 for the first request observed."""
    total_tokens: int
    shared_tokens: int
    """Tokens of the prefix this request shares with the previous one (what a provider can serve cached)."""
    shared_units: int
    rewrite: str = ""
    """The reasons passed to `mark_rewrite` since the previous request."""
    warning: str = ""
    """Set when the prefix changed without a marked rewrite (an append-only violation)."""


@datarecord
class PrefixStats(Reuse):
    """The prefix reuse of a session's requests so far."""

    requests: int = 0
    total_tokens: int = 0
    shared_tokens: int = 0
    rewrites: int = 0
    """Requests preceded by a marked rewrite (compaction, decay, ...)."""
    breaks: int = 0
    """Requests that did not reuse all of the previous request's prefix (marked or not)."""
    violations: int = 0


_SORTED = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
"""`json.dumps` with these options, made once (it would build an encoder per message)."""


def serialize_message(msg: Message | SystemBlock) -> str:
    """The deterministic byte form compared between requests: every field, sorted keys."""
    return _SORTED.encode(msg.model_dump(mode="json"))


def _hash(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).digest()


def describe(msg: Message) -> str:
    if isinstance(msg, ToolMessage):
        return f"the {msg.name} result {msg.tool_call_id}"
    if isinstance(msg, AssistantMessage):
        names = ", ".join(c.name for c in msg.tool_calls)
        return f"an assistant message{f' calling {names}' if names else ''}"
    assert isinstance(msg, UserMessage)
    return f"a user message ({msg.kind})"


@datarecord
class PrefixMonitor:
    """Measures each request's prefix against the previous one, serializing each message once."""

    counter: TokenCounter
    stats: PrefixStats = field(default_factory=PrefixStats)
    serialized: int = 0
    """Objects serialized so far (each once, and only to compare it with another object in its place)."""
    _cache: IdentityCache[Unit] = field(default_factory=IdentityCache, repr=False)
    _previous: list[Unit] = field(default_factory=list, repr=False)
    _previous_request: ModelRequest | None = field(default=None, repr=False)
    _previous_stable: int = field(default=0, repr=False)
    """Tokens of the previous request without its tail."""
    _rewrites: list[str] = field(default_factory=list, repr=False)

    def mark_rewrite(self, reason: str) -> None:
        """The next request may differ from the previous one anywhere (compaction, decay, resume)."""
        self._rewrites.append(reason or "rewrite")

    def observe(self, request: ModelRequest) -> PrefixReport:
        previous, rewrites = self._previous, self._rewrites
        appended = self._appended(request)
        if appended is not None:
            # The request extends the previous one: only its new messages are looked at.
            units, shared, shared_tokens, stable = appended
            total = stable + (units[-1].tokens if request.tail else 0)
            warning = ""
        else:
            units = self._units(request)
            shared = self._shared(previous, units, request)
            stable = sum(u.tokens for u in units if u.kind != "tail")
            total = sum(u.tokens for u in units)
            shared_tokens = sum(u.tokens for u in units[:shared])
            warning = "" if rewrites or not previous else self._violation(previous, units, shared)
        report = PrefixReport(number=self.stats.requests + 1, total_tokens=total, shared_tokens=shared_tokens,
                              shared_units=shared, rewrite="; ".join(rewrites), warning=warning)
        self._account(report, previous, shared)
        self._previous, self._rewrites = units, []
        self._previous_request, self._previous_stable = request, stable
        return report

    def _appended(self, request: ModelRequest) -> tuple[list[Unit], int, int, int] | None:
        """(units, shared units, shared tokens, tokens without the tail) when `request` is the previous
        request plus new messages (same tools and system blocks, its messages a prefix of these); else None."""
        before = self._previous_request
        if before is None or request.tools != before.tools or request.system != before.system:
            return None
        held = len(before.messages)
        if len(request.messages) < held or request.messages[:held] != before.messages:
            return None  # tuple equality: identical messages compare without their __eq__
        stable = self._previous[:-1] if before.tail else list(self._previous)
        new = [self._unit(m) for m in request.messages[held:]]
        units = stable + new
        tokens = self._previous_stable + sum(u.tokens for u in new)
        if request.tail:
            same_tail = request.tail == before.tail
            units.append(self._previous[-1] if same_tail else self._tail(request.tail))
        shared, shared_tokens = len(stable), self._previous_stable
        if before.tail and not new and request.tail == before.tail:
            shared, shared_tokens = shared + 1, shared_tokens + units[-1].tokens  # the same request again
        return units, shared, shared_tokens, tokens

    def units(self, request: ModelRequest) -> list[Unit]:
        """The request's cacheable pieces in wire order (tool schemas, system blocks, messages, tail), each
        with its key (`shared_prefix` compares them)."""
        return [self._keyed(unit, source) for unit, source in zip(self._units(request), _sources(request),
                                                                   strict=True)]

    def _units(self, request: ModelRequest) -> list[Unit]:
        """`units`, with the keys made so far only."""
        out = [self._tool(t) for t in request.tools]
        out += [self._unit(b) for b in request.system]
        out += [self._unit(m) for m in request.messages]
        if request.tail:
            out.append(self._tail(request.tail))
        return out

    def _shared(self, previous: list[Unit], units: list[Unit], request: ModelRequest) -> int:
        """`shared_prefix` of the previous request's units and `request`'s: the same object is the same unit,
        and two different objects are serialized to be compared."""
        before = self._previous_request
        if before is None:
            return 0
        shared = 0
        for old, new, was, now in zip(previous, units, _sources(before), _sources(request), strict=False):
            if old.kind != new.kind or (was is not now and self._keyed(old, was).key != self._keyed(new, now).key):
                break
            shared += 1
        return shared

    def _tail(self, tail: str) -> Unit:
        return Unit("tail", _hash(tail), MESSAGE_OVERHEAD + self.counter.text(tail), "tail")

    def _unit(self, obj: Message | SystemBlock) -> Unit:
        """The unit of a message or a system block, its key not made yet (a count and a label)."""
        unit = self._cache.get(obj)
        if unit is None:
            if isinstance(obj, SystemBlock):
                unit = Unit("system", b"", self.counter.message(obj), "the system prompt")
            else:
                unit = Unit("message", b"", self.counter.message(obj), describe(obj))
            self._cache.put(obj, unit)
        return unit

    def _keyed(self, unit: Unit, source: Message | SystemBlock | ToolSchema | str) -> Unit:
        """`unit` with its key, made now (and kept for `source`) if it was not."""
        if unit.key:
            return unit
        kept = self._cache.get(source)
        if kept is not None and kept.key:
            return kept
        assert not isinstance(source, ToolSchema | str)  # tool and tail units are made with their keys
        self.serialized += 1
        keyed = dataclasses.replace(unit, key=_hash(serialize_message(source)))
        self._cache.put(source, keyed)
        return keyed

    def _tool(self, schema: ToolSchema) -> Unit:
        unit = self._cache.get(schema)
        if unit is None:
            self.serialized += 1
            text = serialize_tool(schema)
            unit = Unit("tool", _hash(text), TOOL_SCHEMA_OVERHEAD + self.counter.text(text), f"tool {schema.name}")
            self._cache.put(schema, unit)
        return unit

    def _violation(self, previous: list[Unit], units: list[Unit], shared: int) -> str:
        """Why the previous request (its tail aside) is not a prefix of this one, or ""."""
        stable = [u for u in previous if u.kind != "tail"]
        if shared >= len(stable):
            return ""
        lost = sum(u.tokens for u in units[shared:] if u.kind != "tail")
        where = self._where(stable, units, shared)
        return (f"append-only check: {where} changed between two requests with no compaction or decay event; "
                f"the provider's prompt cache is lost from there ({lost:,} tokens re-sent uncached)")

    def _where(self, stable: list[Unit], units: list[Unit], shared: int) -> str:
        old = stable[shared]
        if old.kind == "tool":
            return old.label
        if old.kind == "system":
            return "the system prompt"
        position = shared - sum(1 for u in stable if u.kind != "message")
        new = units[shared] if shared < len(units) else None
        if new is None or new.kind != "message":
            return f"the history (message {position + 1} of {self._count(stable)} was removed)"
        return f"message {position + 1} of {self._count(stable)} ({old.label})"

    @staticmethod
    def _count(units: Sequence[Unit]) -> int:
        return sum(1 for u in units if u.kind == "message")

    def _account(self, report: PrefixReport, previous: list[Unit], shared: int) -> None:
        stats = self.stats
        stats.requests += 1
        stats.total_tokens += report.total_tokens
        stats.shared_tokens += report.shared_tokens
        stats.rewrites += bool(report.rewrite)
        stats.violations += bool(report.warning)
        stable = len(previous) - (1 if previous and previous[-1].kind == "tail" else 0)  # the tail comes last
        stats.breaks += bool(previous) and shared < stable


def _sources(request: ModelRequest) -> list[Message | SystemBlock | ToolSchema | str]:
    """What each of the request's units stands for, in the same order."""
    tail: list[str] = [request.tail] if request.tail else []
    return [*request.tools, *request.system, *request.messages, *tail]


def shared_prefix(previous: Sequence[Unit], current: Sequence[Unit]) -> int:
    """How many leading units the two requests have in common."""
    n = 0
    for old, new in zip(previous, current, strict=False):
        if old.key != new.key or old.kind != new.kind:
            break
        n += 1
    return n
