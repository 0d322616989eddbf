"""Imports resolved to project files in each language, references to definitions, ranks and roles."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from swecli.repomap import graph
from swecli.repomap.graph import pagerank, role_of
from swecli.repomap.repomap import RepoMap
from tests.repomap.conftest import write


def deps(root: Path) -> dict[str, list[str]]:
    return RepoMap.build(root).graph.deps


def test_python_absolute_relative_and_src_layout(pyproject: Path) -> None:
    graph = deps(pyproject)
    assert graph["src/shop/cart.py"] == ["src/shop/money.py"]
    assert set(graph["src/shop/cli.py"]) == {"src/shop/__init__.py", "src/shop/cart.py"}
    assert graph["src/shop/__init__.py"] == ["src/shop/cart.py"]
    assert graph["tests/test_cart.py"] == ["src/shop/cart.py"]


def test_js_ts_go_rust_java_c_ruby_elixir(project: Path) -> None:
    write(project, "web/app.ts", 'import { h } from "./util";\nimport x from "./ui";\nimport r from "react";\n')
    write(project, "web/util.ts", "export function h() {}\n")
    write(project, "web/ui/index.tsx", "export default 1;\n")
    write(project, "go.mod", "module github.com/o/r\n")
    write(project, "cmd/main.go", 'package main\nimport (\n "fmt"\n "github.com/o/r/pkg/util"\n)\n')
    write(project, "pkg/util/u.go", "package util\nfunc U() {}\n")
    write(project, "pkg/util/u_test.go", "package util\n")
    write(project, "crate/src/lib.rs", "mod parse;\nuse crate::parse::tokens::Token;\n")
    write(project, "crate/src/parse/mod.rs", "pub mod tokens;\n")
    write(project, "crate/src/parse/tokens.rs", "pub struct Token;\n")
    write(project, "java/com/x/App.java", "package com.x;\nimport com.x.util.Helper;\nimport com.x.model.*;\n")
    write(project, "java/com/x/util/Helper.java", "package com.x.util;\npublic class Helper {}\n")
    write(project, "java/com/x/model/User.java", "package com.x.model;\npublic class User {}\n")
    write(project, "c/main.c", '#include "lib/list.h"\n#include <stdio.h>\n')
    write(project, "c/lib/list.h", "struct list { int n; };\n")
    write(project, "rb/lib/shop.rb", 'require "shop/cart"\nrequire_relative "helpers"\n')
    write(project, "rb/lib/shop/cart.rb", "class Cart; end\n")
    write(project, "rb/lib/helpers.rb", "module Helpers; end\n")
    write(project, "ex/lib/a.ex", "defmodule Shop.A do\n  alias Shop.B\nend\n")
    write(project, "ex/lib/b.ex", "defmodule Shop.B do\nend\n")
    graph = deps(project)
    assert set(graph["web/app.ts"]) == {"web/util.ts", "web/ui/index.tsx"}
    assert graph["cmd/main.go"] == ["pkg/util/u.go"]
    assert graph["crate/src/lib.rs"] == ["crate/src/parse/mod.rs", "crate/src/parse/tokens.rs"]
    assert set(graph["java/com/x/App.java"]) == {"java/com/x/util/Helper.java", "java/com/x/model/User.java"}
    assert graph["c/main.c"] == ["c/lib/list.h"]
    assert set(graph["rb/lib/shop.rb"]) == {"rb/lib/shop/cart.rb", "rb/lib/helpers.rb"}
    assert graph["ex/lib/a.ex"] == ["ex/lib/b.ex"]


def test_references_link_files_that_share_no_import(project: Path) -> None:
    write(project, "src/store.c", "int save_record(int x) { return x; }\n")
    write(project, "src/api.c", "int handle(void) { return save_record(1); }\n")
    assert deps(project)["src/api.c"] == ["src/store.c"]


def test_ranks_favour_what_is_used_and_sum_to_one(pyproject: Path) -> None:
    rmap = RepoMap.build(pyproject)
    ranks = rmap.graph.ranks
    assert abs(sum(ranks.values()) - 1) < 1e-9
    assert ranks["src/shop/money.py"] > ranks["src/shop/cli.py"] > 0
    assert ranks["tests/test_cart.py"] < ranks["src/shop/money.py"]
    assert "pyproject.toml" in ranks and "docs/guide.md" not in ranks


def test_pagerank_of_a_chain_and_of_nothing() -> None:
    ranks = pagerank(["a", "b", "c"], {"a": {"b": 1.0}, "b": {"c": 1.0}})
    assert ranks["c"] > ranks["b"] > ranks["a"] and abs(sum(ranks.values()) - 1) < 1e-9
    assert pagerank([], {}) == {}


def random_graph(seed: int) -> tuple[int, list[tuple[int, int, float]]]:
    """Up to 600 files (past numpy's pairwise-summation blocks of 8 and 128), many of them dangling."""
    rng = random.Random(seed)
    n = rng.randrange(1, 600)
    weights: dict[tuple[int, int], float] = {}
    for _ in range(rng.randrange(0, 4 * n)):
        a, b = rng.randrange(n), rng.randrange(n)
        if a != b and a % 4:
            weights[a, b] = weights.get((a, b), 0.0) + rng.choice([1.0, 0.3, 0.15, 0.1, 1.3])
    return n, [(a, b, w) for (a, b), w in weights.items()]


@pytest.mark.parametrize("seed", range(60))
def test_plain_python_pagerank_is_numpys_to_the_bit(seed: int) -> None:
    n, edges = random_graph(seed)
    assert graph._ranks_python(n, edges, 100) == graph._ranks_numpy(n, edges, 100)


def test_small_projects_are_ranked_without_numpy_and_big_ones_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    used = []
    monkeypatch.setattr(graph, "_ranks_numpy", lambda n, edges, iterations: used.append(n) or [1.0 / n] * n)
    nodes = [f"f{i}" for i in range(graph.SMALL_PROJECT + 1)]
    pagerank(nodes[:-1], {"f0": {"f1": 1.0}})
    assert used == []
    pagerank(nodes, {"f0": {"f1": 1.0}})
    assert used == [len(nodes)]


def test_roles() -> None:
    assert [role_of(p) for p in ("tests/test_a.py", "src/x_test.go", "web/a.spec.ts", "docs/conf.py",
                                 "examples/demo.py", "pyproject.toml", "src/pkg/__main__.py", "src/pkg/core.py")] \
        == ["test", "test", "test", "docs", "example", "config", "entry", "source"]
