"""Just-in-time retrieval over a real project: the real repository map, BM25 index and reader."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from swecli.repomap.lexical import Lexical
from swecli.repomap.repomap import RepoMap
from swecli.retrieval.retrieval import ATTACH_SCORE, retrieve


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


MONEY = '''"""Money amounts."""


class Money:
    def __init__(self, cents):
        self.cents = cents

    def add(self, other):
        return Money(self.cents + other.cents)


def parse_amount(text):
    """Parse "12.50" into Money."""
    if "," in text:
        raise ValueError(f"bad amount {text!r}: expected a decimal number")
    return Money(round(float(text) * 100))
''' + "".join(f"\n\ndef helper_{i}(x):\n    return x + {i}\n" for i in range(60))


@pytest.fixture
def shop(project: Path) -> Path:
    write(project, ".gitignore", "build/\n")
    write(project, "shop/__init__.py", "")
    write(project, "shop/money.py", MONEY)
    write(project, "shop/cart.py", "from shop.money import Money, parse_amount\n\n\nclass Cart:\n"
                                   "    def total(self, text):\n        return parse_amount(text)\n")
    write(project, "shop/report.py", "def render(rows):\n    return '\\n'.join(rows)\n")
    write(project, "shop/export.py", "def render(rows):\n    return ','.join(rows)\n")
    write(project, "tests/test_money.py", "from shop.money import parse_amount\n\n\ndef test_parse_amount():\n"
                                          "    assert parse_amount('1') \n\ndef format_total():\n    pass\n")
    write(project, "build/shop/money.py", "def parse_amount(text):\n    return 'generated'\n")
    write(project, "notes.txt", "hello\n")
    return project


def run(root: Path, prompt: str, **kwargs: object) -> tuple[list[str], list[str], str]:
    rmap = RepoMap.build(root)
    found = retrieve(prompt, root, repo_map=rmap, lexical=Lexical.build(rmap), **kwargs)  # type: ignore[arg-type]
    message = found.message()
    return ([a.path for a in found.attachments], [p for p, _ in found.listed],
            (message.content if message else "") + "\n" + found.summary())


def test_a_name_defined_in_one_file_attaches_its_definition(shop: Path) -> None:
    attached, _, text = run(shop, "`parse_amount` rounds wrong\nIt loses a cent on 0.29.")
    assert attached == ["shop/money.py"]
    assert "defines `parse_amount`" in text
    assert "   12  def parse_amount(text):" in text and "generated" not in text  # build/ is gitignored
    assert "helper_59" not in text  # an excerpt, not the whole file


def test_a_traceback_attaches_the_frames_with_the_raising_lines(shop: Path, ripgrep: bool) -> None:
    """With ripgrep and without it (the grep tool's Python engine): the error message is found either way."""
    report = ('Cart total crashes on commas\n```\nTraceback (most recent call last):\n'
              '  File "/venv/site-packages/shop/cart.py", line 6, in total\n    return parse_amount(text)\n'
              '  File "/venv/site-packages/shop/money.py", line 15, in parse_amount\n'
              '    raise ValueError(f"bad amount {text!r}: expected a decimal number")\n'
              "ValueError: bad amount '1,5': expected a decimal number\n```\n")
    attached, _, text = run(shop, report)
    assert attached[0] == "shop/money.py" and "shop/cart.py" in attached
    assert "named in the traceback (line 15, in parse_amount)" in text
    assert "contains the error message 'expected a decimal number'" in text
    assert "   15          raise ValueError" in text


def test_a_written_path_is_attached_at_its_lines(shop: Path) -> None:
    attached, _, text = run(shop, "look at shop/money.py:8-9 please")
    assert attached == ["shop/money.py"] and "named in the task" in text
    assert '"shop/money.py" lines="256" shown="1-19"' in text


def test_ambiguous_names_are_listed_not_attached(shop: Path) -> None:
    attached, listed, text = run(shop, "the render output has a trailing separator")
    assert attached == []
    assert set(listed) >= {"shop/report.py", "shop/export.py"}
    assert "Other files that may be relevant" in text and "nothing clear enough to attach" in text


def test_tests_count_less_than_the_code_they_test(shop: Path) -> None:
    attached, _, text = run(shop, "`format_total` should use two decimals")
    assert attached == [] and "format_total" not in text  # only a test defines it
    attached, _, _ = run(shop, "tests/test_money.py fails")
    assert attached == ["tests/test_money.py"]  # named outright, it is attached all the same


def test_nothing_named_attaches_nothing(shop: Path) -> None:
    attached, listed, _ = run(shop, "please make it faster")
    assert attached == [] and listed == []


def test_attachments_fit_the_budget(shop: Path) -> None:
    rmap = RepoMap.build(shop)
    found = retrieve("`parse_amount` and `Money.add` and `Cart` are wrong", shop, budget_tokens=120,
                     count_tokens=lambda t: len(t) // 4, repo_map=rmap, lexical=Lexical.build(rmap))
    assert found.tokens <= 120 and found.attachments


def test_mentions_are_attached_whole_even_when_retrieval_is_off(shop: Path) -> None:
    found = retrieve("what does @shop/cart.py do? and @nope.py", shop, just_in_time=False)
    assert [(a.kind, a.path, a.lines) for a in found.attachments] == [("file", "shop/cart.py", 6)]
    assert found.problems == ["nope.py: no such file in the project."]
    message = found.message()
    assert message is not None and '<file path="shop/cart.py" lines="6">' in message.content


def test_without_the_index_in_time_it_uses_what_was_named_and_says_so(shop: Path) -> None:
    found = retrieve("`parse_amount` breaks in shop/cart.py", shop, time_limit=0.0)
    assert found.attached_paths == ["shop/cart.py"]  # a written path needs no index
    assert found.timed_out and "repository map unavailable" in found.summary()


def test_the_bar_is_what_a_named_path_clears() -> None:
    assert ATTACH_SCORE <= 4.0


@pytest.fixture
def big_shop(shop: Path) -> Path:
    """The shop with 400 more modules, each defining and calling names the task mentions too."""
    for i in range(400):
        write(shop, f"shop/gen/m{i:03}.py", f"from shop.money import parse_amount\n\n\nclass Ledger{i}:\n"
                                           f"    def settle_{i}(self, text):\n        return parse_amount(text)\n")
    return shop


TASK = ("@shop/cart.py totals are wrong: `parse_amount` rounds 0.29 down, see shop/report.py:1.\n"
        "ValueError: bad amount '1,5': expected a decimal number\n"
        + " ".join(f"`Ledger{i}.settle_{i}`" for i in range(0, 400, 7)))


def test_a_tiny_time_limit_cuts_the_search_short_but_keeps_mentions_and_written_paths(big_shop: Path) -> None:
    rmap = RepoMap.build(big_shop)
    rmap.prepare()
    lexical = Lexical.build(rmap)
    found = retrieve(TASK, big_shop, time_limit=0.001, repo_map=rmap, lexical=lexical)
    assert found.timed_out and "stopped at the time limit; the search was cut short" in found.summary()
    assert found.attachments[0].kind == "file" and found.attachments[0].path == "shop/cart.py"
    assert "shop/report.py" in found.attached_paths + [p for p, _ in found.listed]  # named: no search needed
    assert "shop/money.py" not in found.attached_paths  # finding the definition is the search it cut short
    # The same task with time to spare finds the definition: the limit is what made the difference.
    full = retrieve(TASK, big_shop, time_limit=60.0, repo_map=rmap, lexical=lexical)
    assert not full.timed_out and "shop/money.py" in full.attached_paths


COUNT_IN_A_FRESH_PROCESS = """
import json, sys
from pathlib import Path
from swecli.context import tokens
from swecli.retrieval.retrieval import retrieve

counter = tokens.Tokenizer("o200k_base")
found = retrieve("@shop/cart.py: `parse_amount` rounds 0.29 down", Path(sys.argv[1]), count_tokens=counter,
                 time_limit=60.0)
print(json.dumps({"loaded": sorted(tokens._loaded), "attached": found.attached_paths,
                  "tokens": [a.tokens for a in found.attachments]}))
"""


def test_a_vocabulary_not_yet_loaded_is_not_loaded_on_the_requests_clock(shop: Path) -> None:
    # A fresh process, as at a session's first request: loading o200k takes a second or more and holds the
    # interpreter, so retrieval estimates its attachments' tokens instead of loading it.
    done = subprocess.run([sys.executable, "-c", COUNT_IN_A_FRESH_PROCESS, str(shop)], capture_output=True,
                          text=True, timeout=120, check=True)
    report = json.loads(done.stdout)
    assert report["loaded"] == []
    assert report["attached"][:2] == ["shop/cart.py", "shop/money.py"] and all(report["tokens"])


def test_neighbour_reasons_give_each_edge_its_direction(project: Path) -> None:
    """A test imports the library; the library happens to call a name the test defines. The listed reasons
    say the test imports the library, and never that the library imports (or uses) its test."""
    write(project, "lib/__init__.py", "")
    write(project, "lib/segment.py", "class Segment:\n    def split_cells(self):\n        return []\n")
    write(project, "lib/console.py", "from lib.segment import Segment\n\n\nclass Console:\n"
                                     "    def render_lines(self):\n        return make_arena(Segment())\n")
    write(project, "tests/test_arena.py", "from lib.console import Console\n\n\ndef make_arena(segment):\n"
                                          "    return [segment]\n\n\ndef test_console_renders():\n"
                                          "    assert Console().render_lines()\n")
    rmap = RepoMap.build(project)
    assert "tests/test_arena.py" in rmap.imports("lib/console.py")  # the name edge the bug read as an import
    found = retrieve("tests/test_arena.py fails: the arena has no segment", project, repo_map=rmap,
                     lexical=Lexical.build(rmap))
    reasons = {path: why for path, _, why in found.ranking}
    assert reasons["lib/console.py"].startswith("imported by test_arena.py; imports segment.py")
    assert "test_arena.py" not in reasons["lib/console.py"].replace("imported by test_arena.py", "")
    assert rmap.import_targets("lib/console.py") == {"lib/segment.py"}
    assert rmap.import_targets("tests/test_arena.py") == {"lib/console.py"}
