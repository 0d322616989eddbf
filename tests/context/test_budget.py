from __future__ import annotations

from pathlib import Path

import pytest

from swecli.context.budget import (
    Calibration,
    ContextBudget,
    ContextState,
    decay_recent_for,
    keep_recent_for,
    provider_prompt_tokens,
)
from swecli.messages import Usage
from swecli.testing.replay import held_out_replay
from swecli.testing.shared import TRAJECTORIES, load_trajectory, trajectory_paths


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
    assert ContextBudget(window=200_000, threshold=0.8, max_tokens=8_192).limit == 160_000
    # A window whose threshold would leave no room for the reply.
    assert ContextBudget(window=20_000, threshold=0.95, max_tokens=4_000).limit == 16_000
    small = ContextBudget(window=8_192, threshold=0.8, max_tokens=8_192)
    assert small.reserve == 2_048 and small.limit == 6_144
    assert small.should_compact(6_145) and not small.should_compact(6_144)


def test_the_three_levels_are_in_order_warning_then_compaction_then_the_hard_limit() -> None:
    big = ContextBudget(window=200_000, threshold=0.8, max_tokens=8_192, warning=0.7)
    assert (big.warning_limit, big.limit, big.hard_limit) == (140_000, 160_000, 191_808)
    # At 32k the reply reserve (a quarter of the window) caps compaction below 80%.
    mid = ContextBudget(window=32_000, threshold=0.8, max_tokens=8_192, warning=0.7)
    assert (mid.reserve, mid.warning_limit, mid.limit, mid.hard_limit) == (8_000, 22_400, 24_000, 24_000)
    # A warning level above the compaction level is capped to it.
    assert ContextBudget(window=10_000, threshold=0.5, max_tokens=100, warning=0.9).warning_limit == 5_000


@pytest.mark.parametrize("window", [1_024, 4_096, 32_000, 32_768, 200_000])
@pytest.mark.parametrize("max_tokens", [16, 1_000, 8_192, 64_000])
def test_every_prompt_the_compaction_limit_allows_leaves_the_whole_reply_inside_the_window(
        window: int, max_tokens: int) -> None:
    budget = ContextBudget(window=window, max_tokens=max_tokens)
    for prompt in range(0, budget.hard_limit + 1, max(1, budget.hard_limit // 97)):
        reply = budget.reply_tokens(prompt)
        assert reply == budget.reserve <= max_tokens
        assert prompt + reply <= window


def test_the_reply_shrinks_for_a_prompt_over_the_hard_limit_and_never_passes_the_window() -> None:
    budget = ContextBudget(window=1_024, max_tokens=8_192)
    assert budget.reserve == 256  # not the 8,192 asked for: a 1,024-token window cannot hold that
    assert budget.reply_tokens(700) == 256
    assert budget.reply_tokens(800) == 224 and 800 + 224 == 1_024
    big = ContextBudget(window=200_000, max_tokens=8_192)
    assert big.reply_tokens(195_000) == 5_000
    # Past the point where a useful reply fits: the floor, and the server's overflow error compacts.
    assert big.reply_tokens(199_900) == 256
    assert budget.reply_tokens(1_000) == 64  # a quarter of the reserve, for a tiny window


@pytest.mark.parametrize(("window", "kept"), [(4_096, 2_000), (8_192, 2_048), (32_000, 8_000), (64_000, 16_000),
                                              (128_000, 32_000), (200_000, 40_000), (1_000_000, 40_000)])
def test_what_compaction_keeps_scales_with_the_window_between_a_floor_and_a_ceiling(window: int, kept: int) -> None:
    assert keep_recent_for(window) == kept
    assert keep_recent_for(window, 5_000) == 5_000  # a configured number is used as is
    # Decay's verbatim zone follows it up to 12k: a big window is no reason to re-send old outputs.
    assert decay_recent_for(window) == min(kept, 12_000) and decay_recent_for(window, 5_000) == 5_000


def test_state_breakdown() -> None:
    budget = ContextBudget(window=100_000, threshold=0.8, max_tokens=8_000)
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


# --- the held-out replay ----------------------------------------------------------------------------

@pytest.mark.skipif(not TRAJECTORIES.is_dir(), reason="../shared/trajectories not present")
@pytest.mark.parametrize("path", trajectory_paths(), ids=lambda p: p.name[:12])
def test_a_real_session_replayed_at_32k_never_sends_prompt_plus_max_tokens_over_the_window(path: Path) -> None:
    """Every request the engine builds (summary requests included), with the default settings and every
    mechanism on: its prompt and its max_tokens fit the window together; the prompt is under the
    compaction level and its tool calls are paired."""
    system, tools, history = load_trajectory(path)
    _, check = held_out_replay(system, tools, history, 32_000)
    assert check.requests > 0
    assert (check.over_window, check.over_threshold, check.unpaired) == (0, 0, 0), check
    assert check.worst <= 32_000
