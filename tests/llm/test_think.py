from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from swecli.llm.think import ThinkSplitter


def split(parts: list[str]) -> tuple[str, str]:
    splitter = ThinkSplitter()
    pieces = [p for part in parts for p in splitter.feed(part)] + splitter.flush()
    text = "".join(t for kind, t in pieces if kind == "text")
    reasoning = "".join(t for kind, t in pieces if kind == "reasoning")
    return text, reasoning


SAMPLE = "<think>I should read\nthe file</think>\n\nThe answer is 4. Use `<think>` tags.\n<thought>again</thought> done"


def test_reasoning_moves_out_of_the_answer() -> None:
    assert split([SAMPLE]) == ("The answer is 4. Use `<think>` tags.\ndone", "I should read\nthe file\nagain")


def test_every_pair_of_split_points_gives_the_same_result() -> None:
    expected = split([SAMPLE])
    for i in range(len(SAMPLE) + 1):
        for j in range(i, len(SAMPLE) + 1):
            assert split([SAMPLE[:i], SAMPLE[i:j], SAMPLE[j:]]) == expected, (i, j)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="<>/thinkougA \n", max_size=40), st.lists(st.integers(0, 40), max_size=6))
def test_splitting_never_changes_the_result(text: str, cuts: list[int]) -> None:
    points = [0, *sorted(c for c in cuts if c <= len(text)), len(text)]
    assert split([text[a:b] for a, b in itertools.pairwise(points)]) == split([text])


def test_text_without_tags_is_untouched() -> None:
    for text in ["  indented code", "a < b and c > d", "<th", "x\n<thinking is fun>", "\n\n"]:
        assert split([text]) == (text, "")


def test_inline_tag_is_part_of_the_answer() -> None:
    assert split(["say <think> here</think> ok"]) == ("say <think> here</think> ok", "")


def test_tag_split_across_deltas() -> None:
    assert split(["<th", "ink>a", "b</thi", "nk>", "c"]) == ("c", "ab")


def test_unclosed_block_stays_reasoning() -> None:
    text = "still thinking when the tokens ran out <"
    assert split(["<think>" + text]) == ("", text)


def test_whitespace_before_first_block_is_dropped() -> None:
    assert split(["\n  ", "<think>r</think>", "\n", "\nanswer"]) == ("answer", "r")


def test_text_streams_before_the_block_closes() -> None:
    splitter = ThinkSplitter()
    assert splitter.feed("Hello wor") == [("text", "Hello wor")]
    assert splitter.feed("ld\n<think>abc") == [("text", "ld\n"), ("reasoning", "abc")]


def test_bare_closing_tag() -> None:
    from swecli.llm.think import split_bare_close

    assert split_bare_close("I should greet.\n</think>\n\nHello!") == ("I should greet.", "Hello!")
    assert split_bare_close("<think>a</think>b") is None
    assert split_bare_close("no tags") is None
