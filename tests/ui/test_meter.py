"""The context meter's label and colour level."""

from __future__ import annotations

from swecli.ui.meter import Meter, format_tokens


def test_token_counts_are_compact() -> None:
    assert [format_tokens(n) for n in (0, 450, 999, 1000, 3240, 87_149, 256_000, 262_144, 1_047_576)] == \
        ["0", "450", "999", "1k", "3.2k", "87.1k", "256k", "262.1k", "1.05M"]


def test_label() -> None:
    assert Meter(87_100, 256_000, 0.8).label == "ctx 34% · 87.1k/256k"


def test_levels_turn_yellow_near_the_threshold_and_red_above() -> None:
    assert Meter(69_000, 100_000, 0.8).level == "ok"
    assert Meter(70_000, 100_000, 0.8).level == "near"
    assert Meter(79_999, 100_000, 0.8).level == "near"
    assert Meter(80_000, 100_000, 0.8).level == "over"
    assert Meter(10, 0, 0.8).level == "ok"  # an unknown window never divides by zero
