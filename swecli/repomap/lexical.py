"""A BM25 index (the `bm25s` package) over the mapped source files: their paths, definitions and contents.

One document per source file. Terms are identifier pieces, lowercased (`parseHeader`, `parse_header` ->
`parse`, `header`), without English and keyword stop words; the path and the names the file defines count
three times, so `viewcode` finds `sphinx/ext/viewcode.py` before the files that merely mention it.

Cached under `.swecli/repomap/`: the terms of each file (`terms.json`, by mtime and size, so only changed
files are read again) and the scored matrix (`bm25/`, by the map's fingerprint, so a warm start loads it).

Building needs `bm25s` and numpy (~0.4 s to import) from `graph.SMALL_PROJECT` files up; querying does not:
a warm start reads the saved matrix into `postings.Postings` (the standard library's `array`), whose scores
are bm25s's own (its default "lucene" method stores each term's final score per document, so a query only
adds them up). Retrieval runs before the first request of every `-p`, so numpy stays out of that path
unless the index has to be built; a small project's index is built by `Postings.build` (bm25s's arithmetic,
to the bit) and saved in bm25s's format, so a fresh small project never imports numpy at all.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swecli.lazy import regex
from swecli.repomap.builds import BuildFailed, Builds, Pending
from swecli.repomap.graph import SMALL_PROJECT
from swecli.repomap.index import CACHE_DIR, read_json, write_json
from swecli.repomap.postings import Postings

if TYPE_CHECKING:
    import bm25s

    from swecli.repomap.repomap import RepoMap

CACHE_VERSION = 3
"""Of terms.json and bm25.json (their own: the map's cache format can change without them)."""
MAX_READ = 400_000
MAX_TF = 4
"""Occurrences of a term counted per file: BM25's saturation makes more nearly worthless, and the cap
keeps the corpus (and the index build after an edit) small."""
_WORD = regex(r"[A-Z]+(?![a-z])|[A-Za-z][a-z0-9]*|[0-9]+")
STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "has", "have", "he", "how", "i", "if",
    "in", "into", "is", "it", "its", "itself", "me", "my", "no", "not", "of", "on", "or", "our", "so", "than",
    "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "too", "us", "was",
    "we", "were", "what", "when", "where", "which", "who", "why", "will", "with", "would", "you", "your", "can",
    "could", "should", "do", "does", "did", "done", "been", "being", "get", "got", "just", "also", "only", "very",
    "more", "most", "such", "some", "any", "all", "each", "other", "same", "own", "again", "further", "once",
    "here", "about", "above", "below", "after", "before", "over", "under", "while", "during", "out", "up", "down",
    "off", "both", "few", "nor", "self", "def", "class", "return", "import", "none", "true", "false", "elif",
    "else", "pass", "raise", "try", "except", "finally", "lambda", "yield", "global", "nonlocal", "assert", "del",
    "break", "continue", "async", "await", "var", "let", "const", "function", "new", "null", "undefined", "void",
    "public", "private", "protected", "static", "final", "int", "str", "bool", "float", "dict", "list", "tuple",
    "set", "len", "print", "isinstance", "type", "object", "args", "kwargs", "cls", "py"
})


def terms(text: str) -> list[str]:
    """Identifier pieces of `text`, lowercased, stop words and single letters dropped."""
    lowered = (piece.lower() for piece in _WORD.findall(text))
    return [w for w in lowered if len(w) > 1 and w not in STOP_WORDS]


class Lexical:
    """The BM25 index of one map: `scores(query)` -> {path: score} for files sharing a term with it."""

    def __init__(self, docs: list[str], model: bm25s.BM25 | Postings | None, fingerprint: str = "") -> None:
        self.docs = docs
        self.model = model
        self.fingerprint = fingerprint
        """The map's fingerprint the index was built for."""

    @classmethod
    def build(cls, rmap: RepoMap) -> Lexical:
        root = rmap.root
        cache_dir = root / CACHE_DIR / "bm25"
        fingerprint = rmap.index.fingerprint
        stored = read_json(root / CACHE_DIR / "bm25.json", CACHE_VERSION)
        if stored.get("fingerprint") == fingerprint and cache_dir.is_dir():
            docs = stored.get("docs")
            postings = Postings.load(cache_dir)
            if postings is not None and isinstance(docs, list) and postings.documents == len(docs):
                return cls([str(d) for d in docs], postings, fingerprint)
        docs = sorted(rmap.index.facts)
        if not docs:
            return cls([], None, fingerprint)  # nothing to index (a project without source files)
        bags = _term_bags(rmap, docs)
        corpus = [bags[rel] or ["\0empty"] for rel in docs]
        model = Postings.build(corpus) if len(docs) <= SMALL_PROJECT else _bm25s_index(corpus)
        try:
            shutil.rmtree(cache_dir, ignore_errors=True)
            if isinstance(model, Postings):
                model.save(cache_dir)
            else:
                model.save(str(cache_dir), show_progress=False)
            write_json(root / CACHE_DIR / "bm25.json", {"version": CACHE_VERSION, "fingerprint": fingerprint,
                                                    "docs": docs})
        except OSError:
            pass
        return cls(docs, model, fingerprint)

    def scores(self, query: list[str]) -> dict[str, float]:
        if self.model is None:
            return {}
        vocab = self.model.vocab_dict
        known = [t for t in query if t in vocab]
        if not known or not self.docs:
            return {}
        values = self.model.get_scores(known)
        return {self.docs[i]: float(v) for i, v in enumerate(values) if v > 0}


def _bm25s_index(corpus: list[list[str]]) -> bm25s.BM25:
    import bm25s

    model = bm25s.BM25()
    model.index(corpus, show_progress=False)
    return model


def _term_bags(rmap: RepoMap, docs: list[str]) -> dict[str, list[str]]:
    """Each file's terms (repeated as often as they occur), from the cache where the file is unchanged."""
    path = rmap.root / CACHE_DIR / "terms.json"
    cached = read_json(path, CACHE_VERSION).get("files", {})
    bags: dict[str, list[str]] = {}
    rows: dict[str, list[Any]] = {}
    for rel in docs:
        stat = rmap.index.stats[rel]
        row = cached.get(rel)
        if isinstance(row, list) and len(row) == 3 and row[0] == stat.mtime_ns and row[1] == stat.size:
            counts = row[2]
        else:
            counts = _count_terms(rmap, rel)
        rows[rel] = [stat.mtime_ns, stat.size, counts]
        bags[rel] = [term for term, n in counts.items() for _ in range(min(n, MAX_TF))]
    write_json(path, {"version": CACHE_VERSION, "files": rows})
    return bags


def _count_terms(rmap: RepoMap, rel: str) -> dict[str, int]:
    try:
        with open(os.path.join(rmap.root, rel), "rb") as handle:
            data = handle.read(MAX_READ)
    except OSError:
        data = b""
    return with_names(content_terms(data), rel, [s.name for s in rmap.symbols(rel)])


def content_terms(data: bytes) -> dict[str, int]:
    """Term counts of a file's bytes."""
    return dict(Counter(terms(data.decode("utf-8", errors="replace"))))


def with_names(counts: dict[str, int], rel: str, names: list[str]) -> dict[str, int]:
    """Add the path's and the definitions' terms, three times each: what a file is called and defines
    says more about it than what it mentions."""
    out = dict(counts)
    for term in terms(rel.replace("/", " ")) + terms(" ".join(names)):
        out[term] = out.get(term, 0) + 3
    return out


def _build_lexical(root: Path, previous: Lexical | None) -> Lexical:
    """The map first, then its index (both off the first request's clock)."""
    from swecli.repomap.repomap import background

    pending = background(root)
    rmap = pending.wait()
    if rmap is None:
        raise BuildFailed(pending.error)
    rmap.prepare()
    if previous is not None and previous.fingerprint == rmap.index.fingerprint:
        return previous
    return Lexical.build(rmap)


_INDEXES: Builds[Lexical] = Builds(_build_lexical, "swecli-lexical")


def latest_lexical(root: Path) -> Lexical | None:
    """Like `repomap.latest`: the newest index at once, or None."""
    return _INDEXES.latest(root)


def lexical_background(root: Path, max_age: float = 5.0) -> Pending[Lexical]:
    """Shared like `repomap.background`: a finished build older than `max_age` seconds starts again."""
    return _INDEXES.background(root, max_age)
