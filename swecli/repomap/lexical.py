"""A BM25 index (the `bm25s` package) over the mapped source files: their paths, definitions and contents.

One document per source file. Terms are identifier pieces, lowercased (`parseHeader`, `parse_header` ->
`parse`, `header`), without English and keyword stop words; the path and the names the file defines count
three times, so `viewcode` finds `sphinx/ext/viewcode.py` before the files that merely mention it.

Cached under `.swecli/repomap/`: the terms of each file (`terms.json`, by mtime and size, so only changed
files are read again) and the scored matrix (`bm25/`, by the map's fingerprint, so a warm start loads it).

Building needs `bm25s` and numpy (~0.4 s to import); querying does not: a warm start reads the saved matrix
into `Postings` (the standard library's `array`), whose scores are bm25s's own (its default "lucene" method
stores each term's final score per document, so a query only adds them up). Retrieval runs before the first
request of every `-p`, so numpy stays out of that path unless the index has to be built.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import sys
from array import array
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swecli.lazy import regex
from swecli.repomap.builds import BuildFailed, Builds, Pending
from swecli.repomap.index import CACHE_DIR, read_json, write_json

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
        import bm25s

        bags = _term_bags(rmap, docs)
        model = bm25s.BM25()
        model.index([bags[rel] or ["\0empty"] for rel in docs], show_progress=False)
        try:
            shutil.rmtree(cache_dir, ignore_errors=True)
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


class Postings:
    """A saved bm25s index, read without numpy: per term, the documents it occurs in and its score in each
    (bm25s's CSC matrix: `indptr`, `indices`, `data`). Only the "lucene" method is read this way (its scores
    need nothing but a sum); any other, or a file it does not expect, is left to bm25s."""

    def __init__(self, vocab: dict[str, int], data: array[float], indices: array[int], indptr: array[int],
                 documents: int) -> None:
        self.vocab_dict = vocab
        self.data, self.indices, self.indptr = data, indices, indptr
        self.documents = documents

    @classmethod
    def load(cls, directory: Path) -> Postings | None:
        try:
            params = json.loads((directory / "params.index.json").read_text(encoding="utf-8"))
            vocab = json.loads((directory / "vocab.index.json").read_text(encoding="utf-8"))
            if params.get("method") != "lucene" or not isinstance(vocab, dict):
                return None
            data, indices, indptr = (read_npy(directory / f"{name}.csc.index.npy") for name in
                                     ("data", "indices", "indptr"))
        except (OSError, ValueError, SyntaxError, TypeError, KeyError):
            return None
        documents = params.get("num_docs")
        columns = len(indptr) - 1  # bm25s adds "" to the vocabulary after the last column
        if (data.typecode not in "fd" or indices.typecode in "fd" or len(data) != len(indices)
                or not isinstance(documents, int) or len(vocab) - ("" in vocab) != columns):
            return None
        return cls({t: i for t, i in vocab.items() if t and isinstance(i, int) and 0 <= i < columns}, data, indices,
                   indptr, documents)

    def get_scores(self, query: list[str]) -> array[float]:
        """bm25s's `get_scores` for known terms: each occurrence of a term adds its column (in float32, as
        bm25s accumulates)."""
        scores = array("f", bytes(4 * self.documents))
        data, indices, indptr = self.data, self.indices, self.indptr
        for term in query:
            column = self.vocab_dict[term]
            for k in range(indptr[column], indptr[column + 1]):
                scores[indices[k]] += data[k]
        return scores


_NPY_TYPES = {"<f4": "f", "<f8": "d", "<i4": "i", "<i8": "q", "<u4": "I", "<u8": "Q"}


def read_npy(path: Path) -> array[Any]:
    """A one-dimensional little-endian array saved by `numpy.save`, as an `array.array`."""
    with open(path, "rb") as handle:
        blob = handle.read()
    if blob[:6] != b"\x93NUMPY":
        raise ValueError(f"{path.name} is not a .npy file")
    width = 2 if blob[6] == 1 else 4
    length = int.from_bytes(blob[8:8 + width], "little")
    header = ast.literal_eval(blob[8 + width:8 + width + length].decode("latin-1"))
    typecode = _NPY_TYPES.get(str(header.get("descr"))) if isinstance(header, dict) else None
    if typecode is None or header.get("fortran_order") or len(header.get("shape", ())) != 1:
        raise ValueError(f"{path.name}: not a one-dimensional array of a plain type")
    values = array(typecode)
    if values.itemsize != int(header["descr"][2:]):
        raise ValueError(f"{path.name}: no array type of that width here")
    values.frombytes(blob[8 + width + length:])
    if sys.byteorder != "little":
        values.byteswap()
    if len(values) != header["shape"][0]:
        raise ValueError(f"{path.name}: shorter than its header says")
    return values


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
