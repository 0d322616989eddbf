"""The runway: when the background summary starts, from the growth per step and the latency measured."""

from __future__ import annotations

from swecli.context.budget import ContextBudget
from swecli.context.runway import FIRST_LATENCY, Runway

BUDGET = ContextBudget(window=100_000, max_tokens=8_000)  # warning 70k, threshold 80k, hard limit 92k


def steps(runway: Runway, *samples: tuple[int, float], key: object = "turn") -> None:
    for tokens, when in samples:
        runway.observe(tokens, when, key)


def test_before_two_steps_the_summary_starts_at_the_warning_level() -> None:
    runway = Runway()
    assert runway.start_level(BUDGET, floor=10_000) == BUDGET.warning_limit == 70_000
    runway.observe(50_000, 0.0, "turn")
    assert runway.tokens_needed() is None and runway.start_level(BUDGET, floor=10_000) == 70_000


def test_slow_steps_leave_room_enough_from_the_warning_level() -> None:
    runway = Runway()
    steps(runway, (50_000, 0.0), (51_000, 10.0), (52_000, 20.0))  # 1k tokens a step, a step every 10 s
    # A 30 s summary is applied 3 steps + 1 later: 4k of room, far less than the 22k from the warning level.
    assert runway.latency == FIRST_LATENCY and runway.steps_needed() == 4 and runway.tokens_needed() == 4_000
    assert runway.start_level(BUDGET, floor=10_000) == 70_000


def test_fast_steps_start_the_summary_earlier_so_that_it_is_ready_before_the_hard_limit() -> None:
    runway = Runway()
    steps(runway, (50_000, 0.0), (52_000, 3.0), (54_000, 6.0))  # 2k a step, 3 s a step
    assert runway.steps_needed() == 11  # a 30 s guess: 10 steps, and the one that applies it
    assert runway.start_level(BUDGET, floor=10_000) == 92_000 - 22_000 == 70_000
    runway.summary_took(45.0)  # the first summary took longer than the guess: start earlier from now on
    assert runway.latency == 45.0 and runway.start_level(BUDGET, floor=10_000) == 92_000 - 16 * 2_000


def test_a_model_that_answers_at_once_starts_the_summary_at_the_earliest_level() -> None:
    runway = Runway()
    steps(runway, (50_000, 0.0), (51_500, 0.05), (53_000, 0.1))
    assert runway.start_level(BUDGET, floor=40_000) == 40_000  # the floor (a summary worth its size)
    assert runway.start_level(BUDGET, floor=10_000) == 35_000  # never below half the warning level
    # A floor above the warning level (a small window, where a summary barely pays): the warning level.
    assert runway.start_level(BUDGET, floor=80_000) == 70_000


def test_steps_across_a_rewrite_or_a_new_turn_are_not_growth() -> None:
    runway = Runway()
    steps(runway, (50_000, 0.0), (52_000, 1.0), key=("generation", 1))
    runway.observe(20_000, 2.0, ("generation", 2))  # compacted: smaller, and no sample
    runway.observe(21_000, 600.0, ("generation", 3))  # the person took ten minutes to type: no sample either
    assert list(runway.growth) == [2_000] and list(runway.steps) == [1.0]
    assert runway.step_growth() == 2_000


def test_the_estimates_follow_the_recent_steps() -> None:
    runway = Runway()
    for i in range(20):
        runway.observe(i * (500 if i < 10 else 3_000), float(i), "turn")
    assert runway.step_growth() > 2_000  # the last eight steps, not the whole session


def test_what_the_runway_needs_follows_every_new_sample_and_no_level_is_below_the_lowest() -> None:
    runway = Runway()
    lowest = runway.lowest_start(BUDGET)
    assert lowest == 35_000 and all(runway.start_level(BUDGET, floor) >= lowest for floor in range(0, 100_001, 5_000))
    needs = []
    for i, tokens in enumerate((50_000, 51_000, 55_000, 59_000)):  # steps of 1k, 4k, 4k tokens, a second each
        runway.observe(tokens, float(i), "turn")  # asked for between two samples, as a turn does
        needs.append(runway.tokens_needed())
        assert all(runway.start_level(BUDGET, floor) >= lowest for floor in range(0, 100_001, 5_000))
    assert needs == [None, 31 * 1_000, 31 * 2_500, 31 * 3_000]  # a 30 s guess: 30 steps, and the one applying it
    runway.summary_took(1.0)  # a quick summary: far fewer steps to wait
    assert runway.tokens_needed() == 2 * 3_000
