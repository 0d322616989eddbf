from __future__ import annotations

import os
from pathlib import Path

import pytest

from swecli.context.retrieval import mentions, retrieve


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


HEADERS = '''"""HTTP header parsing."""


def parse_header(value):
    """Split a header value into parts."""
    parts = value.split(";")
    return [p.strip() for p in parts]


class HeaderMap:
    def __init__(self):
        self.items = {}

    def add(self, key, value):
        self.items[key] = value
'''


@pytest.fixture
def repo(project: Path) -> Path:
    write(project, "src/http/headers.py", HEADERS)
    write(project, "src/http/client.ts", "export async function fetchJson(url: string) {\n  return 1;\n}\n"
                                         "const retryLater = (n) => n + 1;\n")
    write(project, "src/util.go", "package util\n\nfunc (r *Reader) ReadAll() error {\n\treturn nil\n}\n")
    write(project, "README.md", "# Demo\n")
    write(project, ".gitignore", "secrets/\n*.log\nbuild/\n")
    write(project, "secrets/token.txt", "hunter2\n")
    write(project, "debug.log", "noise\n")
    write(project, "build/headers.py", "def parse_header(v):\n    return 'generated'\n")
    write(project, "assets/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00binary")
    return project


def test_mentions_finds_paths_ranges_and_symbols() -> None:
    m = mentions("Look at @src/a.py and src/b.py:40-60, then `parse_header` and HeaderMap; "
                 "call run_tests() and see https://example.com/x/y.py or config.toml. See `os.path.join`.")
    assert ("src/a.py", None, None) in m.paths
    assert ("src/b.py", 40, 60) in m.paths
    assert ("config.toml", None, None) in m.paths
    assert not any("example.com" in p for p, _, _ in m.paths)
    assert {"parse_header", "HeaderMap", "run_tests", "join"} <= set(m.symbols)
    assert "config" not in m.symbols and "a" not in m.symbols


def test_dotted_names_look_up_their_parts() -> None:
    m = mentions("ContextManager.prepare should call self.choose_cut()")
    assert {"ContextManager", "prepare", "choose_cut"} <= set(m.symbols)
    assert m.paths == []


def test_a_symbol_inside_a_file_name_is_not_a_symbol() -> None:
    m = mentions("open x_y.py and check some_name.")
    assert "x_y" not in m.symbols and "some_name" in m.symbols


def test_nothing_named_gives_none(repo: Path) -> None:
    assert retrieve("please make it faster", repo) is None
    assert retrieve("look at src/missing.py", repo) is None


def test_path_mention_is_read_with_line_numbers(repo: Path) -> None:
    result = retrieve("The bug is in @src/http/headers.py", repo)
    assert result is not None
    [att] = result.attachments
    assert att.kind == "file" and att.label == "src/http/headers.py" and not att.truncated
    assert "### File src/http/headers.py (lines 1-15 of 15)" in att.text
    assert "    4  def parse_header(value):" in att.text
    assert result.text.startswith("Context attached by swecli")
    assert result.summary().startswith("just-in-time context: 1 file (")


def test_line_range_shows_the_lines_around_it(repo: Path) -> None:
    write(repo, "big.py", "".join(f"line_{i} = {i}\n" for i in range(1, 201)))
    result = retrieve("see big.py:100-105", repo)
    assert result is not None
    text = result.attachments[0].text
    assert "(lines 90-115 of 200)" in text and "  100  line_100 = 100" in text and "line_89 " not in text


def test_bare_file_name_resolves_inside_the_repo_but_not_to_ignored_copies(repo: Path) -> None:
    result = retrieve("what does headers.py do?", repo)
    assert result is not None
    assert [a.label for a in result.attachments] == ["src/http/headers.py"]


def test_symbols_are_found_by_definition(repo: Path) -> None:
    result = retrieve("Why does `HeaderMap` drop keys? Also fetchJson, retryLater and ReadAll", repo)
    assert result is not None
    by_label = {a.label: a.text for a in result.attachments}
    assert set(by_label) == {"HeaderMap", "fetchJson", "retryLater", "ReadAll"}
    assert "### Symbol HeaderMap: defined at src/http/headers.py:10" in by_label["HeaderMap"]
    assert "self.items[key] = value" in by_label["HeaderMap"]  # the whole class body
    assert "defined at src/http/client.ts:1" in by_label["fetchJson"]
    assert "defined at src/http/client.ts:4" in by_label["retryLater"]
    assert "defined at src/util.go:3" in by_label["ReadAll"]
    assert "generated" not in result.text  # build/ is gitignored


def test_symbol_already_visible_in_an_attached_file_is_not_repeated(repo: Path) -> None:
    result = retrieve("In src/http/headers.py, `parse_header` splits wrong", repo)
    assert result is not None
    assert [a.kind for a in result.attachments] == ["file"]


def test_gitignored_binary_and_outside_paths_are_skipped(repo: Path, tmp_path: Path) -> None:
    outside = write(tmp_path, "elsewhere/secret.py", "SECRET = 1\n")
    os.symlink(outside, repo / "link.py")
    result = retrieve("read secrets/token.txt, debug.log, assets/logo.png, link.py and ../elsewhere/secret.py "
                      "and README.md", repo)
    assert result is not None
    assert [a.label for a in result.attachments] == ["README.md"]
    assert "hunter2" not in result.text and "SECRET" not in result.text
    skipped = "\n".join(result.skipped)
    assert "secrets/token.txt: ignored by .gitignore" in skipped
    assert "debug.log: ignored by .gitignore" in skipped
    assert "assets/logo.png: binary" in skipped
    assert "link.py: outside the project" in skipped
    assert "../elsewhere/secret.py: outside the project" in skipped


def test_swecli_internals_are_never_attached(repo: Path) -> None:
    write(repo, ".swecli/tool_results/x.txt", "internal\n")
    assert retrieve("see .swecli/tool_results/x.txt", repo) is None


def test_directory_mention_lists_it(repo: Path) -> None:
    result = retrieve("what is in src/http/ ?", repo)
    assert result is not None
    [att] = result.attachments
    assert att.kind == "directory" and att.text == "### Directory src/http/\nclient.ts\nheaders.py"


def test_budget_truncates_big_files_and_skips_what_does_not_fit(repo: Path) -> None:
    write(repo, "huge.py", "".join(f"value_{i} = {i}  # some padding text here\n" for i in range(3000)))

    def words(text: str) -> int:
        return len(text.split())

    result = retrieve("look at huge.py and src/http/headers.py", repo, budget_tokens=400, count_tokens=words)
    assert result is not None
    assert result.tokens <= 400
    first = result.attachments[0]
    assert first.label == "huge.py" and first.truncated and "of 3000)" in first.text
    assert words(first.text) <= 240  # at most 60% of the budget with two mentions
    tiny = retrieve("look at huge.py", repo, budget_tokens=10, count_tokens=words)
    assert tiny is None


def test_time_limit_stops_the_search(repo: Path) -> None:
    for i in range(50):
        write(repo, f"pkg/m{i}.py", f"def f{i}():\n    pass\n")
    assert retrieve("where is `HeaderMap`?", repo, time_limit=0.0) is None
    assert retrieve("where is `HeaderMap`?", repo) is not None


def test_code_fences_inside_files_do_not_break_the_block(repo: Path) -> None:
    write(repo, "doc.md", "```python\nx = 1\n```\n")
    result = retrieve("see doc.md", repo)
    assert result is not None
    assert "\n````\n" in result.attachments[0].text


def test_files_already_attached_by_the_repl_are_not_repeated(repo: Path) -> None:
    assert retrieve("fix @src/http/headers.py", repo, already_attached=["src/http/headers.py"]) is None
    result = retrieve("fix `HeaderMap` and `fetchJson`", repo, already_attached=["./src/http/headers.py"])
    assert result is not None and [a.label for a in result.attachments] == ["fetchJson"]
