"""Facts for every file of a project, cached under `.swecli/repomap/index.json` by mtime and size.

A warm run lists the files (discover.py), stats them, loads the cache and re-parses only what changed;
a cold run parses in worker processes (one per core, up to four) and reports progress to a callback
once it has taken longer than a second. The cache is plain JSON (never pickle: a cloned repository
could ship a `.swecli/` of its own), versioned, and rewritten atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swecli.repomap.discover import project_files
from swecli.repomap.languages import language_for
from swecli.repomap.parse import Facts, pack_symbols, parse_file, parse_paths

CACHE_VERSION = 3
CACHE_DIR = Path(".swecli") / "repomap"
PARALLEL_FROM = 150
"""Files to parse before worker processes pay for their start-up."""
BATCH = 48

Progress = Callable[[int, int], None]
"""Called with (files parsed, files to parse) while a long parse runs."""


@dataclass(frozen=True)
class Stat:
    mtime_ns: int
    size: int


@dataclass
class Index:
    root: Path
    stats: dict[str, Stat]
    """Every visible regular file (root-relative POSIX path), parsed or not."""
    facts: dict[str, Facts]
    """Files with a grammar: what they define, import and use."""
    parsed: int = 0
    """Files parsed by this run (the rest came from the cache)."""
    seconds: float = 0.0
    cached: dict[str, Any] = field(default_factory=dict)
    """Derived data stored beside the facts (the graph), valid while `fingerprint` is unchanged."""
    links_loaded: bool = True
    """False while cached files' `imports` and `refs` are still in links.json (only a graph rebuild needs them)."""

    def load_links(self) -> None:
        """Fill `imports` and `refs` of the files that came from the cache (a warm run never needs to)."""
        if self.links_loaded:
            return
        stored = _read_json(self.root / CACHE_DIR / "links.json").get("links", {})
        for rel, facts in self.facts.items():
            row = stored.get(rel)
            if not facts.imports and not facts.refs and isinstance(row, list) and len(row) == 2:
                facts.imports, facts.refs = list(row[0]), list(row[1])
        self.links_loaded = True

    @property
    def fingerprint(self) -> str:
        """Changes whenever any file is added, removed or modified."""
        digest = hashlib.blake2b(digest_size=12)
        for rel in sorted(self.stats):
            s = self.stats[rel]
            digest.update(f"{rel}\0{s.mtime_ns}\0{s.size}\n".encode("utf-8", errors="surrogateescape"))
        return digest.hexdigest()


def cache_path(root: Path) -> Path:
    return root / CACHE_DIR / "index.json"


def load_index(root: Path, progress: Progress | None = None, workers: int | None = None) -> Index:
    """Discover, stat, reuse cached facts and parse what changed; the cache is updated when anything did."""
    start = time.monotonic()
    root = root.resolve()
    stats = _stat_all(root, project_files(root))
    old_facts, cached_stats, derived, old_fingerprint = _read_cache(root)
    facts: dict[str, Facts] = {}
    stale: list[str] = []
    for rel, current in stats.items():
        if language_for(rel) is None:
            continue
        if rel in old_facts and cached_stats.get(rel) == current:
            facts[rel] = old_facts[rel]
        else:
            stale.append(rel)
    for rel, parsed in _parse_all(root, stale, progress, workers, start):
        facts[rel] = parsed
    index = Index(root, stats, facts, parsed=len(stale), links_loaded=not old_facts)
    fingerprint = index.fingerprint
    if fingerprint == old_fingerprint:
        index.cached = derived
    else:
        index.load_links()
        save_index(index, fingerprint)
    index.seconds = time.monotonic() - start
    return index


def save_index(index: Index, fingerprint: str | None = None) -> None:
    """Write stats and symbols (index.json, read by every run), imports and referenced names (links.json, read
    only to rebuild the graph) and derived data."""
    files = {rel: [s.mtime_ns, s.size, *(_facts_row(index.facts[rel]) if rel in index.facts else [])]
             for rel, s in index.stats.items()}
    fingerprint = fingerprint or index.fingerprint
    if index.links_loaded:
        links = {rel: [f.imports, f.refs] for rel, f in index.facts.items() if f.imports or f.refs}
        _write_json(index.root / CACHE_DIR / "links.json", {"version": CACHE_VERSION, "links": links})
    _write_json(cache_path(index.root), {"version": CACHE_VERSION, "fingerprint": fingerprint, "files": files,
                                         "derived": index.cached})


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(payload, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only project simply stays uncached


def _read_json(path: Path) -> dict[str, Any]:
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return payload if isinstance(payload, dict) and payload.get("version") == CACHE_VERSION else {}


def _stat_all(root: Path, rels: list[str]) -> dict[str, Stat]:
    stats: dict[str, Stat] = {}
    base = str(root)
    for rel in rels:
        try:
            st = os.lstat(os.path.join(base, rel))
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            stats[rel] = Stat(st.st_mtime_ns, st.st_size)
    return stats


def _facts_row(f: Facts) -> list[Any]:
    return [f.language, f.lines, f.error, f.packed if f._symbols is None else pack_symbols(f.symbols)]


def _read_cache(root: Path) -> tuple[dict[str, Facts], dict[str, Stat], dict[str, Any], str]:
    """(facts, the stats they were parsed at, derived data, the fingerprint it belongs to)."""
    empty: tuple[dict[str, Facts], dict[str, Stat], dict[str, Any], str] = ({}, {}, {}, "")
    payload = _read_json(cache_path(root))
    if not payload:
        return empty
    facts: dict[str, Facts] = {}
    stats: dict[str, Stat] = {}
    try:
        for rel, row in payload["files"].items():
            stats[rel] = Stat(row[0], row[1])
            if len(row) > 2:
                language, lines, error, packed = row[2:6]
                if not isinstance(packed, str):
                    raise TypeError(rel)
                facts[rel] = Facts(language, lines, [], [], error, packed)
        derived = dict(payload.get("derived") or {})
        fingerprint = str(payload.get("fingerprint") or "")
    except (KeyError, TypeError, ValueError):
        return empty  # a damaged cache is rebuilt, never trusted in part
    return facts, stats, derived, fingerprint


def _parse_all(root: Path, rels: list[str], progress: Progress | None, workers: int | None,
               start: float) -> list[tuple[str, Facts]]:
    count = workers if workers is not None else min(os.cpu_count() or 1, 4)
    reporter = _Reporter(progress, len(rels), start)
    if count <= 1 or len(rels) < PARALLEL_FROM:
        out: list[tuple[str, Facts]] = []
        for rel in rels:
            out.append((rel, parse_file(root, rel)))
            reporter.advance(1)
        return out
    return _parse_parallel(root, rels, count, reporter)


def _parse_parallel(root: Path, rels: list[str], workers: int, reporter: _Reporter) -> list[tuple[str, Facts]]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # Largest files first, so no worker is left with one big file at the end.
    order = sorted(rels, key=lambda rel: -_size(root / rel))
    batches = [order[i:i + BATCH] for i in range(0, len(order), BATCH)]
    out: list[tuple[str, Facts]] = []
    # spawn, not fork: the REPL runs threads, and a forked child of a threaded process can deadlock.
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(parse_paths, str(root), batch) for batch in batches]
        for future in as_completed(futures):
            result = future.result()
            out.extend(result)
            reporter.advance(len(result))
    return out


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class _Reporter:
    """Calls `progress` at most every quarter second, and only once a second has passed."""

    def __init__(self, progress: Progress | None, total: int, start: float) -> None:
        self.progress = progress
        self.total = total
        self.start = start
        self.done = 0
        self.last = 0.0

    def advance(self, n: int) -> None:
        self.done += n
        if self.progress is None:
            return
        now = time.monotonic()
        if now - self.start >= 1.0 and (now - self.last >= 0.25 or self.done == self.total):
            self.last = now
            self.progress(self.done, self.total)
