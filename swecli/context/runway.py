"""The runway: when to start the background summary so that it is ready before the hard limit.

The loop may send prompts up to the hard limit (the window minus the reply's reserve). A summary started
now comes back after its latency; in that time the loop makes latency / step-seconds more steps, each
adding the growth of a step to the prompt. So the summary has to start at the latest when the room left
below the hard limit is what those steps (and the one in which the summary is applied) will add:

    start level = hard limit - (ceil(latency / step seconds) + 1) x growth per step

Growth, step time and latency are measured as the session goes, over the last few of each: the growth
between two turn boundaries with no rewrite in between (the mean), the time between them (the median,
so one long test run does not stretch it), and how long the summaries took (the mean). Until a summary
has come back, the latency is a guess (`FIRST_LATENCY`); until two steps have been seen, the fixed
warning level is used.

The start level is never above the warning level (`context.warning_threshold`: big windows keep starting
where they always did) and never below the floor the scheduler gives (where a summary would replace less
than its own size) nor below half the warning level (`EARLIEST_SHARE`). A model that answers at once makes
many steps per second: no start level is early enough then, and the summary starts at the earliest level;
whatever is not ready by the hard limit is covered by folding older outputs (no model call), and the
summary is applied when it arrives.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable
from dataclasses import field

from swecli.context.budget import ContextBudget
from swecli.records import datarecord

FIRST_LATENCY = 30.0
"""Seconds a summary is assumed to take before one has been measured: a model's summary of a long history
takes 10-60 s."""
SAMPLES = 8
"""Steps (and summaries) the estimates look back over."""
MIN_STEP_SECONDS = 0.01
EARLIEST_SHARE = 0.5
"""The summary never starts below this share of the warning level: earlier, it would cover less than half of
what one started there covers (compactions twice as often, each billed), and a burst of quick steps (a model
that answers at once) would start one at a few percent of a big window. What the runway cannot cover from
there is covered at the hard limit without a model call."""


def _samples() -> deque[float]:
    return deque(maxlen=SAMPLES)


@datarecord
class Runway:
    """How fast the prompt grows and how long summaries take: when the background summary must start."""

    growth: deque[float] = field(default_factory=_samples)
    """Tokens each recent step added to the prompt."""
    steps: deque[float] = field(default_factory=_samples)
    """Seconds between recent turn boundaries."""
    latencies: deque[float] = field(default_factory=_samples)
    """Seconds recent summaries took."""
    _last: tuple[int, float, Hashable] | None = None
    _need: tuple[int | None] | None = field(default=None, repr=False, compare=False)
    """`tokens_needed`, once worked out: asked for at every turn boundary, it changes only with a sample
    (`observe`, `summary_took`)."""

    def observe(self, tokens: int, now: float, key: Hashable) -> None:
        """A turn boundary: the prompt's size, the time, and what must be the same at two boundaries for the
        difference to be one step of growth (the history not rewritten, the same user turn)."""
        last, self._last = self._last, (tokens, now, key)
        if last is None or last[2] != key:
            return
        self.growth.append(max(0, tokens - last[0]))
        self.steps.append(now - last[1])
        self._need = None

    def summary_took(self, seconds: float) -> None:
        self.latencies.append(seconds)
        self._need = None

    @property
    def latency(self) -> float:
        import statistics  # once there are samples: not on the way to the first request

        return statistics.fmean(self.latencies) if self.latencies else FIRST_LATENCY

    def steps_needed(self) -> int:
        """Steps the loop makes before a summary started now can be applied."""
        import statistics

        step = max(MIN_STEP_SECONDS, statistics.median(self.steps)) if self.steps else MIN_STEP_SECONDS
        return math.ceil(self.latency / step) + 1

    def step_growth(self) -> int:
        """Tokens a step adds to the prompt, on average (0 before two steps have been measured)."""
        import statistics

        return math.ceil(statistics.fmean(self.growth)) if self.growth else 0

    def tokens_needed(self) -> int | None:
        """The room below the hard limit a summary started now uses up before it can be applied (None before
        two steps have been measured)."""
        if self._need is None:
            self._need = (self._tokens_needed(),)
        return self._need[0]

    def _tokens_needed(self) -> int | None:
        if not self.growth:
            return None
        return self.steps_needed() * self.step_growth()

    def lowest_start(self, budget: ContextBudget) -> int:
        """No `start_level` is below this, whatever the floor and the samples (a check that needs neither)."""
        return int(budget.warning_limit * EARLIEST_SHARE)

    def start_level(self, budget: ContextBudget, floor: int) -> int:
        """The prompt size from which the background summary starts."""
        need = self.tokens_needed()
        latest = budget.warning_limit
        if need is None:
            return latest
        earliest = max(floor, int(latest * EARLIEST_SHARE))
        return max(min(earliest, latest), min(latest, budget.hard_limit - need))
