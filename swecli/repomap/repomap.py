"""`RepoMap`: the ranked files of a project with their symbols and dependencies, and the views of it.

    rmap = RepoMap.build(root)                       # warm: cached facts and graph; cold: parse everything
    rmap.ranked()                                    # paths, most central first
    rmap.render(2_000, count)                        # a text map fitted to a token budget
    rmap.neighbours("pkg/a.py")                      # (imports, imported_by): imports or uses names from
    rmap.import_targets("pkg/a.py")                  # what its import statements name, only
    rmap.definitions("parse_header")                 # [(path, Symbol)], from the symbol index
    rmap.to_json()                                   # {"files": [{"path", "rank", "symbols", ...}]}

`background(root)` starts a build on a thread (sessions do it when they open, so a cold map is ready
by the time the first prompt needs it) and `background(root).wait(seconds)` takes it when it is done;
`latest(root)` takes the newest finished one at once (and refreshes it behind the scenes).
"""

from __future__ import annotations

import math
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import field
from functools import cached_property
from pathlib import Path
from typing import Any

from swecli.records import datarecord
from swecli.repomap.builds import Builds, Pending
from swecli.repomap.graph import Graph, Resolver, build_graph
from swecli.repomap.index import (
    CACHE_DIR,
    CACHE_VERSION,
    PARALLEL_FROM,
    Index,
    Progress,
    TooMuchToParse,
    load_index,
    read_json,
    save_index,
    write_json,
)
from swecli.repomap.parse import Symbol

Counter = Callable[[str], int]
_OUTLINE_KINDS = frozenset({"class", "function", "struct", "interface", "trait", "enum", "type", "module",
                            "namespace", "macro"})
MAX_TOP_SYMBOLS = 14
MAX_MEMBERS = 8
GRAPH_FILE = "graph.json"


def estimate_tokens(text: str) -> int:
    """A cheap stand-in when no tokenizer is at hand (about 3.5 characters a token for code)."""
    return math.ceil(len(text) / 3.5)


@datarecord
class RepoMap:
    """The project's map: its index and the graph of which file uses which."""

    root: Path
    index: Index
    graph: Graph
    seconds: float = 0.0
    """How long building (or loading) took."""
    _prepared: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)
    _preparing: bool = field(default=False, repr=False, compare=False)

    @classmethod
    def build(cls, root: Path, progress: Progress | None = None, workers: int | None = None,
              max_parse: int | None = None) -> RepoMap:
        """The map of `root`: cached facts and graph when nothing changed, re-parsing only what did (more
        than `max_parse` files: `index.TooMuchToParse`)."""
        start = time.monotonic()
        index = load_index(root, progress, workers, save=False, max_parse=max_parse)
        graph = _cached_graph(index)
        if graph is None:
            graph = _fresh_graph(index)
            save_index(index)
        return cls(index.root, index, graph, time.monotonic() - start)

    # --- queries --------------------------------------------------------------------------------

    @property
    def files(self) -> list[str]:
        """Every visible file of the project, mapped or not."""
        return self.index.files

    def ranked(self, under: str = "") -> list[str]:
        """Mapped files, highest rank first (ties by path), optionally only those under a directory."""
        prefix = under.strip("/") + "/" if under.strip("/") not in ("", ".") else ""
        chosen = [rel for rel in self.graph.ranks if rel.startswith(prefix)]
        return sorted(chosen, key=lambda rel: (-self.graph.ranks[rel], rel))

    def rank(self, rel: str) -> float:
        return self.graph.ranks.get(rel, 0.0)

    def role(self, rel: str) -> str:
        return self.graph.roles.get(rel, "source")

    def symbols(self, rel: str) -> list[Symbol]:
        facts = self.index.facts.get(rel)
        return facts.symbols if facts is not None else []

    def imports(self, rel: str) -> list[str]:
        return self.graph.deps.get(rel, [])

    @cached_property
    def _imported_by(self) -> dict[str, list[str]]:
        reverse: dict[str, list[str]] = defaultdict(list)
        for source, targets in self.graph.deps.items():
            for target in targets:
                reverse[target].append(source)
        return {rel: sorted(users, key=lambda u: (-self.rank(u), u)) for rel, users in reverse.items()}

    def imported_by(self, rel: str) -> list[str]:
        return self._imported_by.get(rel, [])

    def neighbours(self, rel: str) -> tuple[list[str], list[str]]:
        return self.imports(rel), self.imported_by(rel)

    @cached_property
    def _resolver(self) -> Resolver:
        return Resolver(self.index.facts, self.index.files)

    def import_targets(self, rel: str) -> set[str]:
        """The project files `rel`'s import statements name: its dependencies (`imports`) without those it
        only uses a name from (a name defined in a test can match a library's call by chance)."""
        facts = self.index.facts.get(rel)
        if facts is None:
            return set()
        return {target for spec in facts.imports for target in self._resolver.resolve(rel, facts.language, spec)
                if target != rel}

    @cached_property
    def python_modules(self) -> dict[str, str]:
        """Dotted Python module name -> file (`a.b` -> `a/b.py` or `a/b/__init__.py`; `src/` layouts too)."""
        from swecli.repomap.graph import python_modules

        files = self.index.facts
        return python_modules([rel for rel, f in files.items() if f.language == "python"], set(files))

    @cached_property
    def symbol_index(self) -> dict[str, list[tuple[str, Symbol]]]:
        """Name -> where it is defined (highest-ranked file first)."""
        found: dict[str, list[tuple[str, Symbol]]] = defaultdict(list)
        for rel in self.ranked():
            for symbol in self.symbols(rel):
                found[symbol.name].append((rel, symbol))
        return dict(found)

    def definitions(self, name: str) -> list[tuple[str, Symbol]]:
        return self.symbol_index.get(name, [])

    @cached_property
    def path_suffixes(self) -> dict[str, list[str]]:
        """Every trailing part of every file's path -> the files ending so (`core/mul.py` -> `sympy/core/mul.py`)."""
        found: dict[str, list[str]] = {}
        for rel in self.files:
            parts = rel.split("/")
            for k in range(len(parts)):
                found.setdefault("/".join(parts[k:]), []).append(rel)
        return found

    def prepare(self) -> None:
        """Build the indexes that queries use (names, modules, path suffixes, reverse edges), all at once,
        so a session can do it before the first request needs them."""
        self.symbol_index  # noqa: B018
        self.python_modules  # noqa: B018
        self.path_suffixes  # noqa: B018
        self._imported_by  # noqa: B018
        self._prepared.set()

    def prepared(self, seconds: float) -> bool:
        """Whether `prepare` has finished: started on a thread if nobody has, waited for up to `seconds`."""
        with _LOCK:
            start = not self._preparing
            self._preparing = True
        if start:
            threading.Thread(target=self.prepare, name="swecli-repomap-prepare", daemon=True).start()
        return self._prepared.wait(max(seconds, 0.0))

    # --- views ----------------------------------------------------------------------------------

    def to_json(self, only: list[str] | None = None) -> dict[str, Any]:
        """The `swecli repomap --json` document: files by rank, paths relative to the root."""
        files = []
        for rel in only if only is not None else self.ranked():
            files.append({
                "path": rel,
                "rank": round(self.rank(rel), 6),
                "symbols": [{"name": s.name, "kind": s.kind, "line": s.line, **({"parent": s.parent} if s.parent
                                                                               else {})} for s in self.symbols(rel)],
                "imports": self.imports(rel),
                "imported_by": self.imported_by(rel),
            })
        return {"files": files}

    def outline(self, rel: str) -> list[str]:
        """A file's definitions as short lines: `class Name:12 (method_a, method_b, +3)`, `def name:40`."""
        symbols = self.symbols(rel)
        members: dict[str, list[str]] = defaultdict(list)
        for s in symbols:
            if s.parent and not s.name.startswith("_"):
                members[s.parent].append(s.name)
        top = [s for s in symbols if not s.parent and s.kind in _OUTLINE_KINDS]
        top.sort(key=lambda s: (s.name.startswith("_"), s.line))
        lines = []
        for s in top[:MAX_TOP_SYMBOLS]:
            inside = list(dict.fromkeys(members.get(s.name, [])))
            detail = ""
            if inside:
                more = f", +{len(inside) - MAX_MEMBERS}" if len(inside) > MAX_MEMBERS else ""
                detail = f" ({', '.join(inside[:MAX_MEMBERS])}{more})"
            lines.append(f"{_keyword(s.kind)} {s.name}:{s.line}{detail}")
        if len(top) > MAX_TOP_SYMBOLS:
            lines.append(f"+{len(top) - MAX_TOP_SYMBOLS} more definitions")
        return sorted(lines[:MAX_TOP_SYMBOLS], key=_line_of) + lines[MAX_TOP_SYMBOLS:]

    def render(self, budget: int, count: Counter = estimate_tokens, under: str = "", symbols: bool = True) -> str:
        """The ranked map as text: files by rank, each with its outline, line by line until `budget` tokens
        are used (the last file may show part of its outline)."""
        out: list[str] = []
        used = 0
        for rel in self.ranked(under):
            role = self.role(rel)
            lines = [rel + (f"  [{role}]" if role != "source" else "")]
            if symbols:
                lines += [f"  {line}" for line in self.outline(rel)]
            for i, line in enumerate(lines):
                cost = count(line) + 1
                if used + cost > budget:
                    return "\n".join(out)
                if i == 0 or symbols:
                    out.append(line)
                    used += cost
        return "\n".join(out)

    def summary(self) -> str:
        parsed = self.index.parsed
        where = "from the cache" if parsed == 0 else f"{parsed:,} parsed"
        return (f"{len(self.graph.ranks):,} files mapped of {len(self.index.files):,} "
                f"({where}, {self.seconds:.2f}s)")


def _keyword(kind: str) -> str:
    return {"function": "def", "method": "def", "variable": "var", "constant": "const"}.get(kind, kind)


def _line_of(text: str) -> int:
    head = text.split(" (", 1)[0]
    number = head.rsplit(":", 1)[-1]
    return int(number) if number.isdigit() else 0


def _fresh_graph(index: Index) -> Graph:
    """Build the graph from every file's links, and keep it with the index (ranks in index.json, read by
    every run; edges in graph.json, read only by the queries that need them)."""
    index.load_links()
    graph = build_graph(index.facts, index.files)
    nodes = sorted(set(graph.ranks) | set(graph.deps) | {t for ts in graph.deps.values() for t in ts})
    position = {rel: i for i, rel in enumerate(nodes)}
    roles = sorted(set(graph.roles.values()))
    role_number = {role: i for i, role in enumerate(roles)}
    index.cached = {"graph": {"nodes": nodes, "roles": roles,
                              "rank": [round(graph.ranks.get(rel, -1.0), 8) for rel in nodes],
                              "role": [role_number[graph.roles[rel]] if rel in graph.roles else -1
                                       for rel in nodes]}}
    deps = [[position[t] for t in graph.deps.get(rel, [])] for rel in nodes]
    write_json(index.root / CACHE_DIR / GRAPH_FILE, {"version": CACHE_VERSION, "fingerprint": index.fingerprint,
                                                      "deps": deps})
    return graph


def _cached_graph(index: Index) -> Graph | None:
    """The graph stored with an unchanged index: ranks and roles now, edges when first asked for."""
    stored = index.cached.get("graph")
    if not isinstance(stored, dict):
        return None
    try:
        nodes, roles = stored["nodes"], stored["roles"]
        ranks = {rel: r for rel, r in zip(nodes, stored["rank"], strict=True) if r >= 0}
        role = {rel: roles[k] for rel, k in zip(nodes, stored["role"], strict=True) if k >= 0}
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    return Graph(None, ranks, role, load_deps=lambda: _cached_deps(index, nodes))


def _cached_deps(index: Index, nodes: list[str]) -> dict[str, list[str]]:
    stored = read_json(index.root / CACHE_DIR / GRAPH_FILE)
    try:
        if stored.get("fingerprint") == index.fingerprint:
            return {rel: [nodes[i] for i in targets]
                    for rel, targets in zip(nodes, stored["deps"], strict=True) if targets}
    except (KeyError, TypeError, ValueError, IndexError):
        pass
    return _fresh_graph(index).deps  # graph.json lost or from another run: build the edges again


# --- building in the background ------------------------------------------------------------------


def _build_map(root: Path, previous: RepoMap | None) -> RepoMap:
    """A session's build: small changes are parsed here; a cold build (or a big change, such as another
    branch checked out) is left to a builder process (`repomap.builder`), which holds no lock this process
    needs, and finishes and saves its work even if this process exits first."""
    try:
        built = RepoMap.build(root, max_parse=PARALLEL_FROM - 1)
    except TooMuchToParse:
        from swecli.repomap.builder import build_elsewhere

        build_elsewhere(root)
        built = RepoMap.build(root)  # from the builder's cache (anything it could not do is done here)
    if previous is not None and previous.index.fingerprint == built.index.fingerprint:
        return previous  # nothing changed: keep the one whose indexes are already built
    return built


_MAPS: Builds[RepoMap] = Builds(_build_map, "swecli-repomap")
_LOCK = threading.Lock()
"""Guards `RepoMap.prepared`: one thread starts the indexes."""


def latest(root: Path) -> RepoMap | None:
    """The newest map built in this process, at once (None when none has finished): a map a few seconds
    stale beats holding up a request. Call `background(root)` afterwards to refresh it for next time."""
    return _MAPS.latest(root)


def background(root: Path, max_age: float = 5.0) -> Pending[RepoMap]:
    """A build of `root`'s map on a daemon thread, shared by every caller in the process. A build that
    finished more than `max_age` seconds ago starts again (cheap when warm; files may have changed)."""
    return _MAPS.background(root, max_age)
