"""The BM25 index: built with bm25s (or, for a small project, by `Postings.build`), read back without numpy
(Postings), scores identical."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from swecli.repomap import lexical
from swecli.repomap.index import CACHE_DIR
from swecli.repomap.lexical import Lexical, terms
from swecli.repomap.postings import Postings
from swecli.repomap.repomap import RepoMap
from tests.repomap.conftest import write

QUERIES = ["total of the cart is wrong when money is added", "parse_amount fails on text", "money money add",
           "nothing here matches zzz"]


def shop(root: Path) -> Path:
    write(root, "src/shop/money.py", "class Money:\n    def add(self, other):\n        return self\n\n"
                                     "def parse_amount(text):\n    '''Parse an amount of money.'''\n"
                                     "    return Money()\n")
    write(root, "src/shop/cart.py", "from shop.money import Money, parse_amount\n\nclass Cart:\n"
                                    "    def total(self):\n        return parse_amount('0')\n")
    write(root, "src/shop/report.py", "def render(cart):\n    return f'total: {cart.total()}'\n")
    write(root, "docs/guide.md", "# Guide\nThe cart adds money.\n")
    return root


def test_a_saved_index_is_read_without_numpy_and_scores_as_bm25s_does(project: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    shop(project)
    monkeypatch.setattr(lexical, "SMALL_PROJECT", 0)  # as for a big project
    built = Lexical.build(RepoMap.build(project))  # built with bm25s (and saved)
    assert not isinstance(built.model, Postings)
    warm = Lexical.build(RepoMap.build(project))
    assert isinstance(warm.model, Postings) and warm.docs == built.docs
    for query in QUERIES:
        assert warm.scores(terms(query)) == built.scores(terms(query))
    assert built.scores(terms(QUERIES[0]))  # the comparison is not between two empty results


def test_a_small_project_is_indexed_without_bm25s_and_scores_as_bm25s_does(project: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    shop(project)
    small = Lexical.build(RepoMap.build(project))
    assert isinstance(small.model, Postings)
    monkeypatch.setattr(lexical, "SMALL_PROJECT", 0)
    (project / CACHE_DIR / "bm25.json").unlink()
    built = Lexical.build(RepoMap.build(project))
    assert not isinstance(built.model, Postings) and built.docs == small.docs
    for query in [*QUERIES, "money money money cart", "guide"]:
        assert small.scores(terms(query)) == built.scores(terms(query))
    assert small.scores(terms(QUERIES[0]))


def test_a_warm_start_imports_no_numpy(project: Path) -> None:
    shop(project)
    Lexical.build(RepoMap.build(project))
    script = ("import sys, json\nfrom pathlib import Path\nfrom swecli.repomap.lexical import Lexical, terms\n"
              "from swecli.repomap.repomap import RepoMap\n"
              "lexical = Lexical.build(RepoMap.build(Path(sys.argv[1])))\n"
              "print(json.dumps([sorted(lexical.scores(terms('cart total'))), 'numpy' in sys.modules]))\n")
    out = subprocess.run([sys.executable, "-c", script, str(project)], capture_output=True, text=True, check=True,
                         timeout=120)
    found, numpy_loaded = json.loads(out.stdout)
    assert "src/shop/cart.py" in found and not numpy_loaded


def test_a_damaged_saved_index_is_built_again(project: Path) -> None:
    shop(project)
    built = Lexical.build(RepoMap.build(project))
    (project / CACHE_DIR / "bm25" / "indices.csc.index.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")
    assert Postings.load(project / CACHE_DIR / "bm25") is None
    again = Lexical.build(RepoMap.build(project))
    assert again.model is not None and again.model is not built.model  # built again
    assert again.scores(terms(QUERIES[0])) == built.scores(terms(QUERIES[0]))
    assert isinstance(Lexical.build(RepoMap.build(project)).model, Postings)  # and saved again
