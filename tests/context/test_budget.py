from __future__ import annotations

import pytest

from swecli.context.budget import Calibration, ContextBudget, ContextState, provider_prompt_tokens
from swecli.messages import Usage


def test_openai_style_usage_includes_cached_tokens() -> None:
    assert provider_prompt_tokens(Usage(input_tokens=1000, cache_read_tokens=800)) == 1000


def test_usage_reporting_cache_apart_from_input_is_added_up() -> None:
    # Anthropic's raw shape: input_tokens counts only the uncached part.
    assert provider_prompt_tokens(Usage(input_tokens=50, cache_read_tokens=9000, cache_write_tokens=400)) == 9450


def test_first_sample_sets_the_ratio_and_later_ones_are_smoothed() -> None:
    cal = Calibration()
    assert cal.apply(1000) == 1000
    assert cal.observe(1200, 1000)
    assert cal.ratio == pytest.approx(1.2)
    assert cal.apply(1000) == 1200
    cal.observe(1000, 1000)
    assert cal.ratio == pytest.approx(0.7 * 1.2 + 0.3 * 1.0)
    assert cal.samples == 2
    assert (cal.last_provider_tokens, cal.last_local_tokens) == (1000, 1000)


def test_implausible_samples_are_ignored() -> None:
    cal = Calibration()
    assert not cal.observe(10, 10_000)  # usage that left out a cached prefix
    assert not cal.observe(0, 100)
    assert cal.ratio == 1.0 and cal.rejected == 1


def test_overflow_lower_bound_only_raises() -> None:
    cal = Calibration(ratio=1.3, samples=1)
    cal.at_least(1.1)
    assert cal.ratio == 1.3
    cal.at_least(1.5)
    assert cal.ratio == 1.5
    assert cal.to_local(1500) == 1000


def test_budget_limit_is_the_threshold_or_what_leaves_room_for_the_reply() -> None:
    assert ContextBudget(window=200_000, threshold=0.8, reserve_output=8_192).limit == 160_000
    # A window whose threshold would leave no room for the reply.
    assert ContextBudget(window=20_000, threshold=0.95, reserve_output=4_000).limit == 16_000
    small = ContextBudget(window=8_192, threshold=0.8, reserve_output=8_192)
    assert small.reserve == 2_048 and small.limit == 6_144
    assert small.should_compact(6_145) and not small.should_compact(6_144)


def test_state_breakdown() -> None:
    budget = ContextBudget(window=100_000, threshold=0.8, reserve_output=8_000)
    state = ContextState(budget=budget, system=2_000, tools=3_000, memory=1_000, history=50_000,
                         current_turn=4_000, tail=100)
    assert state.total == 60_100
    assert state.free == 100_000 - 8_000 - 60_100
    assert state.until_compaction == 80_000 - 60_100
    assert state.percent == pytest.approx(60.1)
    assert not state.over_threshold
    rows = dict(state.rows())
    assert rows["current turn"] == 4_100 and rows["reserved for reply"] == 8_000
    assert sum(v for k, v in state.rows()) == 100_000
