"""The context budget: the window, the compaction threshold, and where the tokens go.

Local counts (tiktoken) are calibrated against what the provider reports, so the meter matches what
the provider bills and enforces even for tokenizers we cannot ship (Qwen, Llama, Claude). Both the
raw and the calibrated figures are kept.
"""

from __future__ import annotations

import math
from functools import cached_property

from swecli.messages import Usage
from swecli.records import datarecord

MIN_RATIO, MAX_RATIO = 0.5, 2.5
"""A provider/local ratio outside this range is a misreport (e.g. usage that excludes cached tokens
in a way we did not recognize), not a different tokenizer: such samples are ignored."""


def provider_prompt_tokens(usage: Usage) -> int:
    """The full prompt size the provider saw.

    OpenAI-style usage counts cached tokens inside `input_tokens`; Anthropic-style usage reports
    cache reads and writes apart from `input_tokens`. When the cache figures alone exceed the input
    figure they cannot be part of it, so they are added.
    """
    cached = usage.cache_read_tokens + usage.cache_write_tokens
    if cached > usage.input_tokens:
        return usage.input_tokens + cached
    return usage.input_tokens


@datarecord
class Calibration:
    """Smoothed ratio provider_prompt_tokens / local_count, applied to later estimates."""

    ratio: float = 1.0
    samples: int = 0
    smoothing: float = 0.3
    """Weight of a new sample; the first sample is taken as is."""
    last_provider_tokens: int = 0
    last_local_tokens: int = 0
    rejected: int = 0

    def observe(self, provider_tokens: int, local_tokens: int) -> bool:
        """Record one request; False when the sample was implausible and ignored."""
        if provider_tokens <= 0 or local_tokens <= 0:
            return False
        sample = provider_tokens / local_tokens
        if not MIN_RATIO <= sample <= MAX_RATIO:
            self.rejected += 1
            return False
        self.ratio = sample if self.samples == 0 else (1 - self.smoothing) * self.ratio + self.smoothing * sample
        self.samples += 1
        self.last_provider_tokens, self.last_local_tokens = provider_tokens, local_tokens
        return True

    def at_least(self, ratio: float) -> None:
        """Raise the ratio to a proven lower bound (after a provider's context-length error)."""
        self.ratio = min(MAX_RATIO, max(self.ratio, ratio))

    def apply(self, local_tokens: int) -> int:
        return math.ceil(local_tokens * self.ratio)

    def to_local(self, provider_tokens: int) -> int:
        return math.floor(provider_tokens / self.ratio)


KEEP_RECENT_SHARE = 0.25
KEEP_RECENT_FLOOR = 2_000
KEEP_RECENT_CEILING = 40_000
"""When `context.keep_recent_tokens` is unset, compaction keeps this share of the window verbatim, within
the floor and the ceiling: 8k of a 32k window, 16k of 64k, 32k of 128k, 40k of 200k and more."""
DECAY_RECENT_CEILING = 12_000
"""Decay keeps at most this much of the newest history verbatim when `keep_recent_tokens` is unset: a big
window is no reason to keep re-sending old outputs in full (each one is a read away once folded)."""
MIN_REPLY = 256
"""The smallest max_tokens worth sending (a quarter of the reserve when that is smaller: a tiny window)."""


def keep_recent_for(window: int, configured: int | None = None) -> int:
    """Recent history compaction keeps verbatim: the configured number, else scaled with the window."""
    if configured is not None:
        return configured
    return max(KEEP_RECENT_FLOOR, min(KEEP_RECENT_CEILING, round(window * KEEP_RECENT_SHARE)))


def decay_recent_for(window: int, configured: int | None = None) -> int:
    """The newest history decay leaves verbatim: the configured `keep_recent_tokens`, else what compaction
    keeps, up to `DECAY_RECENT_CEILING`."""
    if configured is not None:
        return configured
    return min(DECAY_RECENT_CEILING, keep_recent_for(window))


@datarecord(frozen=True)
class ContextBudget:
    """The window and its three levels, lowest first: `warning_limit` (the background summary of the
    older history starts), `limit` (compaction: the ready summary is applied) and `hard_limit` (the
    largest prompt that still leaves the full reply reserve; the loop waits for a summary only here).

    The reply reserve and the `max_tokens` of every request are one number (`reserve`), and each request
    satisfies prompt + max_tokens <= window (`reply_tokens`). The levels are worked out once per budget (it
    is frozen; the meter hands out the same one while the window and the settings stay)."""

    window: int
    threshold: float = 0.8
    max_tokens: int = 8_192
    """The reply size asked for (`Settings.max_tokens`)."""
    warning: float = 0.7

    @cached_property
    def reserve(self) -> int:
        """The max_tokens requests send: the configured reply size, at most a quarter of the window (a
        small local model cannot give more of itself to one reply)."""
        return max(1, min(self.max_tokens, self.window // 4))

    @cached_property
    def hard_limit(self) -> int:
        return max(0, self.window - self.reserve)

    @cached_property
    def limit(self) -> int:
        """The prompt size above which the next request triggers compaction."""
        return max(0, min(math.floor(self.window * self.threshold), self.hard_limit))

    @cached_property
    def warning_limit(self) -> int:
        return max(0, min(math.floor(self.window * self.warning), self.limit))

    def should_compact(self, prompt_tokens: int) -> bool:
        return prompt_tokens > self.limit

    def reply_tokens(self, prompt_tokens: int) -> int:
        """The max_tokens for a request whose prompt is `prompt_tokens` (provider tokens): the reserve,
        shrunk so that prompt + max_tokens never exceeds the window. Only a prompt that leaves less than
        `MIN_REPLY` (compaction could not make it fit) gets that floor: a reply that short would be useless,
        and the server's context-length error then compacts and retries."""
        floor = max(1, min(MIN_REPLY, self.reserve // 4))
        return max(floor, min(self.reserve, self.window - prompt_tokens))


@datarecord(frozen=True)
class ContextState:
    """What the next request would send, by component, in calibrated (provider) tokens.

    `/context` prints `rows()` as a table plus `percent` as a bar; the REPL toolbar shows
    `percent`, `total` and `budget.window` (`ctx 34% · 87.1k/256k`).
    """

    budget: ContextBudget
    system: int
    tools: int
    memory: int
    history: int
    current_turn: int
    tail: int = 0
    raw_total: int = 0
    """The same request in local tiktoken counts, before calibration."""
    ratio: float = 1.0
    calibrated: bool = False
    """True once a provider usage report has been folded in."""
    exact: bool = True
    """False when local counts are the characters-based fallback (no tiktoken encoding loaded)."""
    encoding: str = ""
    messages: int = 0

    @cached_property
    def total(self) -> int:
        """(Worked out once: a state is frozen, and the loop asks for its total several times a turn.)"""
        return self.system + self.tools + self.memory + self.history + self.current_turn + self.tail

    @property
    def free(self) -> int:
        """Room left in the window after the prompt and the reserved reply."""
        return max(0, self.budget.window - self.budget.reserve - self.total)

    @property
    def until_compaction(self) -> int:
        return max(0, self.budget.limit - self.total)

    @property
    def percent(self) -> float:
        return 100.0 * self.total / self.budget.window if self.budget.window else 0.0

    @property
    def over_threshold(self) -> bool:
        return self.budget.should_compact(self.total)

    def rows(self) -> list[tuple[str, int]]:
        """(component, tokens) in prompt order, then the free space and the reserve."""
        return [
            ("system", self.system),
            ("tools", self.tools),
            ("memory", self.memory),
            ("history", self.history),
            ("current turn", self.current_turn + self.tail),
            ("free", self.free),
            ("reserved for reply", self.budget.reserve),
        ]
