"""The dependency graph: import specifiers resolved to project files, names used resolved to the files that
define them, files ranked by PageRank over that graph and weighted by their role.

Resolution is per language and only ever points inside the project (standard library and third-party
imports resolve to nothing): Python dotted and relative modules (including `src/` layouts), JS/TS relative
specifiers with their extensions and `index` files, Go import paths to package directories, Rust `mod`
and `use crate::...`, Java imports (wildcards to the package), C/C++ includes (beside the file first),
Ruby `require`/`require_relative`, Elixir `alias`/`import`/`use` to the file that `defmodule`s the name.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping

from swecli.lazy import regex
from swecli.repomap.parse import Facts

IMPORT_WEIGHT = 1.0
REFERENCE_WEIGHT = 0.3
MAX_DEFINERS = 4
"""A name defined in more files than this (`get`, `run`, `__init__`) says nothing about which one is used."""
DAMPING = 0.85
SMALL_PROJECT = 200
"""Files (graph nodes, BM25 documents) up to which the map is ranked and indexed without numpy: plain
Python takes ~10-60 ms for as many files, numpy's import ~150 ms. Bigger projects use numpy and bm25s."""
ROLE_WEIGHT = {"source": 1.0, "entry": 2.0, "config": 1.0, "test": 0.25, "docs": 0.4, "example": 0.4}

_JS_EXTS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_TEST = regex(r"(^|/)(tests?|__tests__|spec|testing)/|(^|/)test_[^/]*$|_test\.\w+$|\.(test|spec)\.\w+$|"
                   r"(^|/)conftest\.py$|Test\.java$|_spec\.rb$")
_DOCS = regex(r"(^|/)(docs?|doc_src|documentation)/")
_EXAMPLE = regex(r"(^|/)(examples?|samples?|demos?|bench|benchmarks?)/")
ENTRY_NAMES = frozenset({"__main__.py", "manage.py", "main.py", "app.py", "wsgi.py", "asgi.py", "cli.py", "main.go",
                         "main.rs", "lib.rs", "index.js", "index.ts", "server.js", "server.ts", "main.ts", "main.js",
                         "main.c", "main.cpp", "Main.java", "Application.java", "mix.exs", "Rakefile", "config.ru"})
CONFIG_NAMES = frozenset({"pyproject.toml", "setup.py", "setup.cfg", "package.json", "tsconfig.json", "Cargo.toml",
                          "go.mod", "Gemfile", "pom.xml", "build.gradle", "build.gradle.kts", "Makefile",
                          "CMakeLists.txt", "Dockerfile", "docker-compose.yml", "compose.yaml", "tox.ini",
                          "noxfile.py", "pytest.ini", "mix.exs", ".gitlab-ci.yml", "meson.build", "BUILD",
                          "BUILD.bazel", "WORKSPACE", "deno.json", "vite.config.ts", "webpack.config.js"})


def role_of(rel: str) -> str:
    """entry, config, test, docs, example or source: what a file is for, from its path."""
    name = rel.rsplit("/", 1)[-1]
    if name in CONFIG_NAMES or rel.startswith(".github/workflows/"):
        return "config" if name not in ENTRY_NAMES or "/" in rel else "entry"
    if _TEST.search(rel):
        return "test"
    if _DOCS.search(rel):
        return "docs"
    if _EXAMPLE.search(rel):
        return "example"
    if name in ENTRY_NAMES and rel.count("/") <= 3:
        return "entry"
    return "source"


class Graph:
    """Files ranked, with their roles and dependencies (read from the cache only when first asked for)."""

    def __init__(self, deps: dict[str, list[str]] | None, ranks: dict[str, float], roles: dict[str, str],
                 load_deps: Callable[[], dict[str, list[str]]] | None = None) -> None:
        self._deps = deps
        self._load_deps = load_deps
        self.ranks = ranks
        """PageRank weighted by role, summing to 1 over the mapped files."""
        self.roles = roles

    @property
    def deps(self) -> dict[str, list[str]]:
        """File -> the project files it imports or uses names from, strongest first."""
        if self._deps is None:
            self._deps = self._load_deps() if self._load_deps is not None else {}
        return self._deps


def build_graph(facts: Mapping[str, Facts], files: Iterable[str]) -> Graph:
    resolver = Resolver(facts, files)
    weights: dict[str, dict[str, float]] = {rel: {} for rel in facts}
    for rel, f in facts.items():
        for spec in f.imports:
            for target in resolver.resolve(rel, f.language, spec):
                if target != rel:
                    weights[rel][target] = weights[rel].get(target, 0.0) + IMPORT_WEIGHT
    _add_references(facts, weights)
    config = {rel for rel in resolver.files if rel.rsplit("/", 1)[-1] in CONFIG_NAMES or
              rel.startswith(".github/workflows/")}
    mapped = sorted(set(facts) | {rel for rel in config if role_of(rel) == "config"})
    roles = {rel: role_of(rel) for rel in mapped}
    ranks = _weighted(pagerank(mapped, weights), roles)
    deps = {rel: [t for t, _ in sorted(w.items(), key=lambda kv: (-kv[1], kv[0]))] for rel, w in weights.items() if w}
    return Graph(deps, ranks, roles)


def _add_references(facts: Mapping[str, Facts], weights: dict[str, dict[str, float]]) -> None:
    definers: dict[str, list[str]] = defaultdict(list)
    for rel, f in facts.items():
        for name in f.names:
            definers[name].append(rel)
    telling = {name: where for name, where in definers.items() if len(where) <= MAX_DEFINERS}
    for rel, f in facts.items():
        # Set intersection in C: most used names are defined nowhere in the project, or everywhere.
        for name in telling.keys() & f.refs:
            where = telling[name]
            if rel in where:
                continue
            for target in where:
                weights[rel][target] = weights[rel].get(target, 0.0) + REFERENCE_WEIGHT / len(where)


def pagerank(nodes: list[str], weights: dict[str, dict[str, float]], iterations: int = 100) -> dict[str, float]:
    """Power iteration over the weighted graph; dangling files spread their rank evenly.

    A small project's graph (`SMALL_PROJECT`) is ranked in plain Python: numpy's import (~200 M
    instructions, ~0.15 s of CPU, on the map's thread of every fresh small project: each of the test
    suite's, and a user's first run in a new one) costs more than the iteration itself there. Both do the
    same arithmetic in the same order, to the last bit (tests/repomap/test_graph.py holds them together
    on random graphs)."""
    n = len(nodes)
    if n == 0:
        return {}
    position = {rel: i for i, rel in enumerate(nodes)}
    edges = [(position[a], position[b], w) for a, targets in weights.items() if a in position
             for b, w in targets.items() if b in position]
    rank = _ranks_python(n, edges, iterations) if n <= SMALL_PROJECT else _ranks_numpy(n, edges, iterations)
    return {rel: float(rank[i]) for rel, i in position.items()}


def _ranks_python(n: int, edges: list[tuple[int, int, float]], iterations: int) -> list[float]:
    out = [0.0] * n
    for src, _, weight in edges:
        out[src] += weight
    flows = [(src, dst, weight / out[src]) for src, dst, weight in edges]
    dangling = [i for i in range(n) if out[i] == 0]
    rank = [1.0 / n] * n
    for _ in range(iterations):
        flow = [0.0] * n
        for src, dst, share in flows:
            flow[dst] += rank[src] * share
        spread = _numpy_sum([rank[i] for i in dangling]) / n
        new = [DAMPING * (f + spread) + (1.0 - DAMPING) / n for f in flow]
        change = _numpy_sum([abs(a - b) for a, b in zip(new, rank, strict=True)])
        rank = new
        if change < 1e-10:
            break
    return rank


def _numpy_sum(values: list[float]) -> float:
    """`numpy.sum` of a float64 array, in its order: pairwise over blocks, eight running sums in a block, so
    that the plain-Python ranks are numpy's to the last bit."""
    n = len(values)
    if n < 8:
        total = -0.0
        for value in values:
            total += value
        return total
    if n <= 128:
        sums = values[:8]
        i = 8
        while i < n - n % 8:
            for j in range(8):
                sums[j] += values[i + j]
            i += 8
        total = ((sums[0] + sums[1]) + (sums[2] + sums[3])) + ((sums[4] + sums[5]) + (sums[6] + sums[7]))
        for value in values[i:]:
            total += value
        return total
    half = n // 2
    half -= half % 8
    return _numpy_sum(values[:half]) + _numpy_sum(values[half:])


def _ranks_numpy(n: int, edges: list[tuple[int, int, float]], iterations: int) -> list[float]:
    import numpy as np

    src = np.array([e[0] for e in edges], dtype=np.int64)
    dst = np.array([e[1] for e in edges], dtype=np.int64)
    weight = np.array([e[2] for e in edges], dtype=np.float64)
    out = np.bincount(src, weights=weight, minlength=n) if edges else np.zeros(n)
    share = weight / out[src] if edges else weight
    dangling = out == 0
    rank = np.full(n, 1.0 / n)
    for _ in range(iterations):
        flow = np.bincount(dst, weights=rank[src] * share, minlength=n) if edges else np.zeros(n)
        new = DAMPING * (flow + rank[dangling].sum() / n) + (1.0 - DAMPING) / n
        if float(np.abs(new - rank).sum()) < 1e-10:
            rank = new
            break
        rank = new
    return [float(r) for r in rank]


def _weighted(ranks: dict[str, float], roles: dict[str, str]) -> dict[str, float]:
    scaled = {rel: r * ROLE_WEIGHT.get(roles.get(rel, "source"), 1.0) for rel, r in ranks.items()}
    total = sum(scaled.values()) or 1.0
    return {rel: r / total for rel, r in scaled.items()}


class Resolver:
    """Import specifiers -> project files, per language (see the module docstring)."""

    def __init__(self, facts: Mapping[str, Facts], files: Iterable[str]) -> None:
        self.files = set(files)
        self.facts = facts
        self.suffixes: dict[str, list[str]] = defaultdict(list)
        self.dirs: dict[str, list[str]] = defaultdict(list)
        for rel in sorted(facts):
            parts = rel.split("/")
            for k in range(len(parts)):
                self.suffixes["/".join(parts[k:])].append(rel)
            self.dirs[posixpath.dirname(rel)].append(rel)
        self.python = python_modules([rel for rel in facts if facts[rel].language == "python"], self.files)
        self.modules = {s.name: rel for rel, f in facts.items() if f.language == "elixir"
                        for s in f.symbols if s.kind == "module"}
        self._resolved: dict[str, list[str]] = {}
        """Python imports resolved so far (relative ones with their directory): files import the same few."""

    def resolve(self, rel: str, language: str, spec: str) -> list[str]:
        if not spec:
            return []
        if language == "python":
            return self._python(rel, spec)
        if language in ("javascript", "typescript", "tsx"):
            return self._js(rel, spec)
        if language == "go":
            return self._go(spec)
        if language == "rust":
            return self._rust(rel, spec)
        if language == "java":
            return self._java(spec)
        if language in ("c", "cpp"):
            return self._beside_or_suffix(rel, spec)
        if language == "ruby":
            return self._beside_or_suffix(rel, spec + ("" if spec.endswith(".rb") else ".rb"))
        if language == "elixir":
            return [self.modules[spec]] if spec in self.modules else []
        return []

    def _python(self, rel: str, spec: str) -> list[str]:
        if spec.startswith("."):
            key = posixpath.dirname(rel) + "\0" + spec
            found = self._resolved.get(key)
            if found is None:
                found = self._resolved[key] = self._python_relative(rel, spec)
            return found
        found = self._resolved.get(spec)
        if found is None:
            target = self.python.get(spec)
            if target is None and "." in spec:  # `import a.b.name`: the module is a.b
                target = self.python.get(spec.rsplit(".", 1)[0])
            found = self._resolved[spec] = [target] if target else []
        return found

    def _python_relative(self, rel: str, spec: str) -> list[str]:
        level = len(spec) - len(spec.lstrip("."))
        base = posixpath.dirname(rel).split("/") if "/" in rel else []
        base = base[: len(base) - (level - 1)] if level > 1 else base
        rest = spec[level:].split(".") if spec[level:] else []
        return self._existing([("/".join(base + rest)).strip("/")])

    def _existing(self, stems: list[str]) -> list[str]:
        for stem in stems:
            for candidate in (f"{stem}.py", f"{stem}/__init__.py", f"{stem}.pyi", f"{stem}/__init__.pyi"):
                if candidate.lstrip("/") in self.facts:
                    return [candidate.lstrip("/")]
        return []

    def _js(self, rel: str, spec: str) -> list[str]:
        if not spec.startswith("."):
            return []
        base = posixpath.normpath(posixpath.join(posixpath.dirname(rel), spec))
        candidates = [base, *(base + ext for ext in _JS_EXTS), *(f"{base}/index{ext}" for ext in _JS_EXTS)]
        if base.endswith(".js"):  # TypeScript's ESM convention: `./x.js` names `x.ts`
            candidates += [base[:-3] + ext for ext in (".ts", ".tsx")]
        return next(([c] for c in candidates if c in self.facts), [])

    def _go(self, spec: str) -> list[str]:
        parts = spec.split("/")
        if "." not in parts[0]:
            return []  # the standard library
        for k in range(len(parts)):
            directory = "/".join(parts[k:])
            files = [f for f in self.dirs.get(directory, []) if f.endswith(".go") and not f.endswith("_test.go")]
            if files:
                return files
        return []

    def _rust(self, rel: str, spec: str) -> list[str]:
        here = posixpath.dirname(rel)
        if spec.startswith("mod "):
            name = spec[4:]
            stem = posixpath.basename(rel)[:-3]
            inner = here if stem in ("mod", "lib", "main") else posixpath.join(here, stem)
            candidates = [posixpath.join(inner, f"{name}.rs"), posixpath.join(inner, name, "mod.rs")]
            return next(([c] for c in candidates if c in self.facts), [])
        parts = [p for p in spec.split("::") if p not in ("crate", "self", "super", "")]
        for k in range(len(parts), 0, -1):
            path = "/".join(parts[:k])
            for candidate in (f"{path}.rs", f"{path}/mod.rs"):
                found = self._nearest(rel, self.suffixes.get(candidate, []))
                if found:
                    return [found]
        return []

    def _java(self, spec: str) -> list[str]:
        parts = spec.split(".")
        if parts[-1] == "*":
            package = "/".join(parts[:-1])
            return [f for d in self.dirs if d == package or d.endswith("/" + package)
                    for f in self.dirs[d] if f.endswith(".java")]
        for k in range(len(parts), 1, -1):
            hits = self.suffixes.get("/".join(parts[:k]) + ".java")
            if hits:
                return hits[:1]
        return []

    def _beside_or_suffix(self, rel: str, spec: str) -> list[str]:
        beside = posixpath.normpath(posixpath.join(posixpath.dirname(rel), spec))
        if beside in self.facts:
            return [beside]
        found = self._nearest(rel, self.suffixes.get(spec.lstrip("./"), []))
        return [found] if found else []

    @staticmethod
    def _nearest(rel: str, candidates: list[str]) -> str | None:
        """Of several files with the same suffix, the one sharing the longest directory prefix with `rel`."""
        if not candidates:
            return None
        return max(candidates, key=lambda c: (len(posixpath.commonprefix([c, rel])), -len(c)))


def python_modules(py_files: list[str], files: set[str]) -> dict[str, str]:
    """Dotted module name -> file, both from the project root and from each file's top package
    (`src/_pytest/nodes.py` is `_pytest.nodes` too). `.py` wins over `.pyi`."""
    modules: dict[str, str] = {}
    for rel in sorted(py_files, key=lambda r: (r.endswith(".pyi"), r)):
        parts = rel.rsplit(".", 1)[0].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        directories = rel.split("/")[:-1]
        top = len(directories)
        while top > 0 and "/".join(directories[:top]) + "/__init__.py" in files:
            top -= 1  # climb while the directory is a package
        for name in (".".join(parts), ".".join(parts[top:])):
            if name:
                modules.setdefault(name, rel)
    return modules
