"""Facts for every file of a project, cached under `.swecli/repomap/` by mtime and size.

A warm run reads index.json, checks that the file list still holds (discover.snapshot: a stat per
directory) or else lists the files again (ripgrep runs while the known source files are stat()ed), then
compares: only new or changed files are parsed. A cold run parses in worker processes
(one per core, up to four), many files per task, and reports progress to a callback once it has taken
longer than a second.

The cache is plain JSON (never pickle: a cloned repository could ship a `.swecli/` of its own), versioned,
written atomically, and split by who reads it:

    index.json    each source file's mtime, size, language, lines and error, every file's path with the
                  snapshot that vouches for the list, and derived data (the graph's ranks): all that a
                  warm run reads
    symbols.json  definitions, read the first time a file's `symbols` are used
    links.json    imports, names used and names defined, read only to rebuild the graph

Rows of the side files carry the mtime and size they were read at: a row that does not match index.json
(a crash between writes, another process writing) is read again from the file, never trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
import time
from array import array
from collections.abc import Callable, Iterator, Mapping
from dataclasses import field
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, TypeGuard

from swecli.errors import ControlFlow
from swecli.records import datarecord
from swecli.repomap.discover import snapshot, start_listing, unchanged
from swecli.repomap.languages import language_for
from swecli.repomap.parse import Facts, parse_file, parse_paths
from swecli.session.private import make_private_dir

CACHE_VERSION = 4
CACHE_DIR = Path(".swecli") / "repomap"
PARALLEL_FROM = 150
"""Files to parse before worker processes pay for their start-up."""
TASK_BYTES = 2_000_000
"""Source bytes per worker task: few round trips, yet enough tasks to keep every worker busy to the end."""

Progress = Callable[[int, int], None]
"""Called with (files parsed, files to parse) while a long parse runs."""


class TooMuchToParse(ControlFlow):
    """More files changed than `load_index(max_parse=...)` allows this process to parse (a cold build)."""

    def __init__(self, count: int) -> None:
        super().__init__(f"{count:,} files to parse")
        self.count = count


class Stat(NamedTuple):
    mtime_ns: int
    size: int


@datarecord
class Index:
    """The parsed project: every file, and each parsed file's facts and stat (what says it changed)."""

    root: Path
    files: list[str]
    """Every visible file (root-relative POSIX paths, sorted), mapped or not."""
    stats: dict[str, Stat]
    """The files with a grammar, sorted by path."""
    facts: Mapping[str, Facts]
    """Files with a grammar: what they define, import and use (a `FactsTable` when loaded from the cache)."""
    parsed: int = 0
    """Files parsed by this run (the rest came from the cache)."""
    seconds: float = 0.0
    cached: dict[str, Any] = field(default_factory=dict)
    """Derived data stored beside the facts (the graph), valid while `fingerprint` is unchanged."""
    unlinked: list[str] = field(default_factory=list)
    """Files from the cache whose links (`imports`, `refs`, `names`) are still in links.json (only a graph
    rebuild needs them)."""
    listed: bool = True
    """Whether this run listed the files (False: the cached list, vouched for by its snapshot)."""
    snapshot: dict[str, Any] | None = None
    """What the file list depends on (discover.snapshot), so the next run can skip listing; None: list again."""
    _fingerprint: str = field(default="", repr=False)

    def load_links(self) -> None:
        """Fill the links of the files that came from the cache (a warm run never needs to)."""
        if not self.unlinked:
            return
        rows = SideFile(self.root, "links.json").rows()
        for rel in self.unlinked:
            facts = self.facts[rel]
            row = rows.get(rel)
            if _fresh(row, self.stats[rel], 5) and all(isinstance(column, list) for column in row[2:]):
                facts.imports, facts.refs, facts.names = row[2], row[3], row[4]
            else:
                again = parse_file(self.root, rel)
                facts.imports, facts.refs, facts.names = again.imports, again.refs, again.names
        self.unlinked = []

    @property
    def fingerprint(self) -> str:
        """Changes whenever any file is added, removed or renamed, or a source file is modified."""
        if not self._fingerprint:
            digest = hashlib.blake2b(listing_hash(self.files).encode(), digest_size=12)
            numbers = array("q", (n for rel in sorted(self.stats) for n in self.stats[rel]))
            digest.update(numbers.tobytes())
            self._fingerprint = digest.hexdigest()
        return self._fingerprint


def cache_path(root: Path) -> Path:
    return root / CACHE_DIR / "index.json"


def listing_hash(files: list[str]) -> str:
    return hashlib.blake2b("\0".join(files).encode("utf-8", errors="surrogateescape"), digest_size=12).hexdigest()


def load_index(root: Path, progress: Progress | None = None, workers: int | None = None,
               save: bool = True, max_parse: int | None = None) -> Index:
    """Discover, stat, reuse cached facts and parse what changed; with `save`, the cache is updated when
    anything did (RepoMap.build saves once, after the graph). With `max_parse`, more files to parse than
    that raises TooMuchToParse instead (a session leaves cold builds to `repomap.builder`)."""
    start = time.monotonic()
    root = root.resolve()
    cache = _Cache.read(root)
    listing, taken = None, cache.snapshot
    if not cache.files or not unchanged(root, cache.snapshot):
        taken = snapshot(root)  # before listing: a change made meanwhile shows next time
        listing = start_listing(root)
    known = _stat_all(root, cache.paths)  # while ripgrep lists the files
    files = listing.files() if listing is not None else cache.files
    stats = _current_stats(root, files, cache, known) if listing is not None else known
    stale = {rel: current for rel, current in stats.items() if cache.stats.get(rel) != current}
    if max_parse is not None and len(stale) > max_parse:
        raise TooMuchToParse(len(stale))
    fresh = _parse_all(root, stale, progress, workers, start)
    facts = FactsTable(stats, fresh, cache)
    index = Index(root, files, stats, facts, parsed=len(stale), unlinked=[rel for rel in facts if rel not in fresh],
                  listed=listing is not None, snapshot=taken)
    if index.fingerprint == cache.fingerprint:
        index.cached = cache.derived
        if taken != cache.snapshot:
            write_index_file(index)  # the same files, now known without listing them
    elif save:
        save_index(index)
    index.seconds = time.monotonic() - start
    return index


def _current_stats(root: Path, files: list[str], cache: _Cache, known: dict[str, Stat]) -> dict[str, Stat]:
    """The stats of the source files among `files`: those the cache knew are already stat()ed."""
    if listing_hash(files) == cache.listing:
        return known
    sources = [rel for rel in files if rel in cache.stats or language_for(rel) is not None]
    new = _stat_all(root, [rel for rel in sources if rel not in known])
    return {rel: known[rel] if rel in known else new[rel] for rel in sources if rel in known or rel in new}


def save_index(index: Index) -> None:
    """Write the side files (symbols, and links once loaded), then index.json, which names what is valid."""
    index.load_links()
    stats = index.stats
    SideFile(index.root, "symbols.json").write(
        {rel: [*stats[rel], f.packed()] for rel, f in index.facts.items()})
    SideFile(index.root, "links.json").write(
        {rel: [*stats[rel], f.imports, f.refs, f.names] for rel, f in index.facts.items()})
    write_index_file(index)


def write_index_file(index: Index) -> None:
    """index.json alone: what a warm run reads (the side files must already hold every file's rows)."""
    stats = index.stats
    paths = list(index.facts)
    languages = sorted({f.language for f in index.facts.values()})
    position = {name: i for i, name in enumerate(languages)}
    source = {"paths": paths, "mtime": [stats[rel].mtime_ns for rel in paths],
              "size": [stats[rel].size for rel in paths], "lines": [index.facts[rel].lines for rel in paths],
              "languages": languages, "language": [position[index.facts[rel].language] for rel in paths],
              "errors": {rel: f.error for rel, f in index.facts.items() if f.error}}
    write_json(cache_path(index.root), {"version": CACHE_VERSION, "fingerprint": index.fingerprint,
                                        "listing": listing_hash(index.files), "files": index.files,
                                        "snapshot": index.snapshot, "source": source, "derived": index.cached})


class SideFile:
    """symbols.json or links.json: a row per file, `[mtime_ns, size, ...]`, read once when first needed."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.path = root / CACHE_DIR / name
        self._rows: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def rows(self) -> dict[str, Any]:
        with self._lock:
            if self._rows is None:
                rows = read_json(self.path).get("files")
                self._rows = rows if isinstance(rows, dict) else {}
            return self._rows

    def write(self, rows: dict[str, list[Any]]) -> None:
        write_json(self.path, {"version": CACHE_VERSION, "files": rows})

    def packed_symbols(self, rel: str, current: Stat) -> str:
        """A file's packed symbols as cached at `current`, or read again from the file."""
        row = self.rows().get(rel)
        if _fresh(row, current, 3) and isinstance(row[2], str):
            return row[2]
        return parse_file(self.root, rel).packed()


def _fresh(row: Any, current: Stat, length: int) -> TypeGuard[list[Any]]:
    return isinstance(row, list) and len(row) == length and row[0] == current.mtime_ns and row[1] == current.size


class FactsTable(Mapping[str, "Facts"]):
    """Every source file's facts, in path order: those parsed by this run, and those of the cache made on
    first use (a warm run that only ranks files makes none of its thousands)."""

    def __init__(self, stats: dict[str, Stat], fresh: dict[str, Facts], cache: _Cache) -> None:
        self._stats = stats
        self._made = dict(fresh)
        self._cache = cache

    def __getitem__(self, rel: str) -> Facts:
        facts = self._made.get(rel)
        if facts is None:
            if rel not in self._stats:
                raise KeyError(rel)
            facts = self._made[rel] = self._cache.facts(rel, self._stats[rel])
        return facts

    def __iter__(self) -> Iterator[str]:
        return iter(self._stats)

    def __len__(self) -> int:
        return len(self._stats)

    def __contains__(self, rel: object) -> bool:
        return rel in self._stats


class _Cache:
    """What index.json says: the stats the cached facts were read at, and the data derived from them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.paths: list[str] = []
        self.stats: dict[str, Stat] = {}
        self.rows: dict[str, tuple[str, int]] = {}
        self.errors: dict[str, str] = {}
        self.fingerprint = self.listing = ""
        self.files: list[str] = []
        self.snapshot: dict[str, Any] | None = None
        self.derived: dict[str, Any] = {}
        self.symbols = SideFile(root, "symbols.json")

    @classmethod
    def read(cls, root: Path) -> _Cache:
        cache = cls(root)
        payload = read_json(cache_path(root))
        if payload:
            try:
                cache._load(payload)
            except (KeyError, TypeError, ValueError, IndexError):
                return cls(root)  # a damaged cache is rebuilt, never trusted in part
        return cache

    def _load(self, payload: dict[str, Any]) -> None:
        source = payload["source"]
        paths, languages = source["paths"], source["languages"]
        columns = (source["mtime"], source["size"], source["lines"], source["language"])
        if not all(isinstance(c, list) and len(c) == len(paths) for c in columns):
            raise ValueError("columns of different lengths")
        if not all(isinstance(p, str) for p in paths) or not all(isinstance(n, str) for n in languages):
            raise TypeError("a path or language that is not a string")
        self.stats = dict(zip(paths, map(Stat, source["mtime"], source["size"]), strict=True))
        self.rows = {rel: (languages[k], lines) for rel, k, lines in zip(paths, source["language"],
                                                                          source["lines"], strict=True)}
        self.errors = {str(k): str(v) for k, v in dict(source["errors"]).items()}
        self.paths = paths
        self.fingerprint = str(payload["fingerprint"])
        self.listing = str(payload["listing"])
        self.derived = dict(payload.get("derived") or {})
        files, taken = payload["files"], payload.get("snapshot")
        if not isinstance(files, list) or not all(isinstance(rel, str) for rel in files):
            raise TypeError("a file list that is not a list of paths")
        self.files, self.snapshot = files, taken if isinstance(taken, dict) else None

    def facts(self, rel: str, current: Stat) -> Facts:
        """A cached file's facts: symbols read from symbols.json when first used, links on `load_links`."""
        language, lines = self.rows[rel]
        return Facts(language, lines, error=self.errors.get(rel, ""),
                     _load=partial(self.symbols.packed_symbols, rel, current))


def write_json(path: Path, payload: dict[str, Any]) -> None:
    try:
        make_private_dir(path.parent)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # swecli's records are the user's alone
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(payload, separators=(",", ":")))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only project simply stays uncached


def read_json(path: Path, version: int = CACHE_VERSION) -> dict[str, Any]:
    """A cache file written with `version`, or {} (missing, unreadable, or from another version)."""
    try:
        payload = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return payload if isinstance(payload, dict) and payload.get("version") == version else {}


def _stat_all(root: Path, rels: list[str]) -> dict[str, Stat]:
    """lstat() of each file (regular files only): a warm run's main cost after the listing."""
    stats: dict[str, Stat] = {}
    base = str(root) + os.sep
    lstat, is_regular = os.lstat, stat.S_ISREG
    for rel in rels:
        try:
            st = lstat(base + rel)
        except OSError:
            continue
        if is_regular(st.st_mode):
            stats[rel] = Stat(st.st_mtime_ns, st.st_size)
    return stats


def _parse_all(root: Path, stale: dict[str, Stat], progress: Progress | None, workers: int | None,
               start: float) -> dict[str, Facts]:
    count = workers if workers is not None else min(os.cpu_count() or 1, 4)
    reporter = _Reporter(progress, len(stale), start)
    out: dict[str, Facts] = {}
    if count > 1 and len(stale) >= PARALLEL_FROM:
        _parse_parallel(root, _batches(stale, count), count, reporter, out)
    for rel in stale:  # a small change, or what a failed worker left
        if rel not in out:
            out[rel] = parse_file(root, rel)
            reporter.advance(1)
    return out


def _parse_parallel(root: Path, batches: list[list[str]], workers: int, reporter: _Reporter,
                    out: dict[str, Facts]) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    from swecli.tools.own_process import python_workers_without_cwd

    # spawn, not fork: the REPL runs threads, and a forked child of a threaded process can deadlock.
    try:
        # The pool's resource tracker starts with the pool, its workers at the submits: neither imports from the
        # project (a multiprocessing.py there ran in them).
        with python_workers_without_cwd():
            pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
        with pool:
            with python_workers_without_cwd():
                futures = [pool.submit(parse_paths, str(root), batch) for batch in batches]
            for future in as_completed(futures):
                result = future.result()
                out.update(result)
                reporter.advance(len(result))
    except (BrokenProcessPool, OSError):
        pass  # a worker died (or none could start): the caller parses what is left in this process


def _batches(stale: dict[str, Stat], workers: int) -> list[list[str]]:
    """Tasks of about TASK_BYTES, largest files first (so no worker is left with one big file at the end),
    and at least four per worker so the last ones are small."""
    order = sorted(stale, key=lambda rel: -stale[rel].size)
    limit = max(1, min(TASK_BYTES, sum(s.size for s in stale.values()) // (workers * 4)))
    batches: list[list[str]] = [[]]
    filled = 0
    for rel in order:
        if batches[-1] and filled >= limit:
            batches.append([])
            filled = 0
        batches[-1].append(rel)
        filled += stale[rel].size
    return batches


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
