from __future__ import annotations

from swecli.mcp.search import ToolIndex, words


def test_identifiers_split_into_words() -> None:
    assert words("getCurrentTime") == ["get", "current", "time"]
    assert words("list_pull_requests") == ["list", "pull", "request"]
    assert words("Convert the time between timezones") == ["convert", "time", "between", "timezone"]
    assert words("HTTPServer v2") == ["http", "server", "v", "2"]


def test_the_best_matching_tools_come_first_and_nothing_matches_nothing() -> None:
    index = ToolIndex([
        ("time.now", "time get_current_time Get the current time in a timezone"),
        ("time.convert", "time convert_time Convert a time between timezones source target"),
        ("gh.issue", "github create_issue Create an issue in a repository"),
        ("gh.prs", "github list_pull_requests List the pull requests of a repository"),
    ])
    assert index.search("convert timezones", 5)[0] == "time.convert"
    assert index.search("open pull requests", 5)[0] == "gh.prs"
    assert set(index.search("repository", 5)) == {"gh.issue", "gh.prs"}
    assert index.search("kubernetes pods", 5) == []
    assert index.search("the", 5) == []  # stopwords alone are no query
