from __future__ import annotations

import re

from swecli.mcp.names import MAX_LENGTH, tool_name

VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_plain_names_read_as_server_and_tool() -> None:
    assert tool_name("time", "get_current_time") == "mcp__time__get_current_time"


def test_characters_providers_reject_become_underscores() -> None:
    name = tool_name("my server", "files/read.v2 (beta)")
    assert name == "mcp__my_server__files_read_v2__beta_"
    assert VALID.match(name)


def test_long_names_fit_and_stay_distinct_and_stable() -> None:
    a = tool_name("s" * 30, "a_very_long_tool_name_that_goes_on_and_on_one")
    b = tool_name("s" * 30, "a_very_long_tool_name_that_goes_on_and_on_two")
    assert len(a) == len(b) == MAX_LENGTH and VALID.match(a) and VALID.match(b)
    assert a != b
    assert a == tool_name("s" * 30, "a_very_long_tool_name_that_goes_on_and_on_one")  # same in every session


def test_names_that_collide_after_sanitizing_are_disambiguated() -> None:
    first = tool_name("web", "get.page")
    second = tool_name("web", "get/page", taken={first})
    assert first == "mcp__web__get_page" and second != first and second.startswith("mcp__web__get_page_")
    assert VALID.match(second)
