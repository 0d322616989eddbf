"""The context meter in the toolbar: how full the model's context window is, and how close to compaction.

The numbers come from one callable (`Repl.context_meter`); this module only formats them.
"""

from __future__ import annotations

from typing import Literal

from swecli.records import datarecord

Level = Literal["ok", "near", "over"]

NEAR_MARGIN = 0.10
"""The meter turns yellow this far (as a fraction of the window) below the compaction threshold."""


@datarecord(frozen=True)
class Meter:
    """What the context meter under the prompt shows."""

    used: int
    """Tokens the next request will carry (system + tools + history)."""
    window: int
    """The model's context window in tokens."""
    threshold: float
    """Fraction of the window at which auto-compaction fires."""

    @property
    def fraction(self) -> float:
        return self.used / self.window if self.window > 0 else 0.0

    @property
    def level(self) -> Level:
        if self.window <= 0:
            return "ok"
        # Compared in tokens, rounded, so 0.8 - 0.1 of 100k is exactly 70k (floats are not).
        if self.used >= round(self.threshold * self.window):
            return "over"
        if self.used >= round((self.threshold - NEAR_MARGIN) * self.window):
            return "near"
        return "ok"

    @property
    def label(self) -> str:
        """`ctx 34% · 87.1k/256k`."""
        return f"ctx {self.fraction:.0%} · {format_tokens(self.used)}/{format_tokens(self.window)}"


def format_tokens(n: int) -> str:
    """Compact token counts: 450, 3.2k, 87.1k, 256k, 1.05M."""
    if abs(n) < 1000:
        return str(n)
    if abs(n) < 1_000_000:
        return _trim(f"{n / 1000:.1f}") + "k"
    return _trim(f"{n / 1_000_000:.2f}") + "M"


def _trim(number: str) -> str:
    return number.rstrip("0").rstrip(".") if "." in number else number
