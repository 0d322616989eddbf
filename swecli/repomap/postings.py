"""The BM25 matrix as bm25s keeps it, without numpy: read back from its saved files (`Postings.load`), and, for
a small project, built with bm25s's own formula and saved in its format (`Postings.build`, `save`).

bm25s's default "lucene" method stores each term's final score per document in a CSC matrix (`indptr`,
`indices`, `data`: per term, the documents it occurs in and its score in each), so a query only adds scores
up. Reading that matrix needs the standard library's `array` only; so does building it for a few hundred
documents, where importing numpy and bm25s (~265 M instructions, ~0.2 s of CPU) costs far more than the
arithmetic. `build` does bm25s 0.3's arithmetic in the same order and precision (float64 for each score,
rounded to float32 as bm25s stores it; its vocabulary in the same set order), so its matrix is bm25s's to
the bit: `tests/repomap/test_postings.py` builds both and compares them, and bm25s loads what `save` writes.
"""

from __future__ import annotations

import ast
import json
import math
import os
import sys
from array import array
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

K1, B = 1.5, 0.75
"""bm25s's defaults, which `Lexical` uses."""
FILES = {"data": "data.csc.index.npy", "indices": "indices.csc.index.npy", "indptr": "indptr.csc.index.npy"}


class Postings:
    """A BM25 index: per term, the documents it occurs in and its score in each (see the module docstring).
    Only the "lucene" method is read (its scores need nothing but a sum); a saved index of any other, or a
    file it does not expect, is not loaded (and then built again)."""

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
            data, indices, indptr = (read_npy(directory / FILES[name]) for name in ("data", "indices", "indptr"))
        except (OSError, ValueError, SyntaxError, TypeError, KeyError):
            return None
        documents = params.get("num_docs")
        columns = len(indptr) - 1  # bm25s adds "" to the vocabulary after the last column
        if (data.typecode not in "fd" or indices.typecode in "fd" or len(data) != len(indices)
                or not isinstance(documents, int) or len(vocab) - ("" in vocab) != columns
                or not _in_bounds(indices, indptr, documents)):
            return None
        return cls({t: i for t, i in vocab.items() if t and isinstance(i, int) and 0 <= i < columns}, data, indices,
                   indptr, documents)

    @classmethod
    def build(cls, corpus: list[list[str]]) -> Postings:
        """`bm25s.BM25().index(corpus)`'s matrix: each document a non-empty list of terms, repeated as often
        as they count."""
        unique: set[str] = set()
        for doc in corpus:
            unique.update(doc)
        vocab = {term: i for i, term in enumerate(unique)}  # bm25s numbers its set of terms in this order
        frequency = [0] * len(vocab)
        for doc in corpus:
            for term in set(doc):
                frequency[vocab[term]] += 1
        n = len(corpus)
        idf = array("f", (math.log(1 + (n - df + 0.5) / (df + 0.5)) for df in frequency))  # float32, as stored
        average = sum(len(doc) for doc in corpus) / n
        columns: list[list[tuple[int, float]]] = [[] for _ in vocab]
        for row, doc in enumerate(corpus):
            norm = K1 * ((1 - B) + B * len(doc) / average)
            for term, count in Counter(doc).items():
                column = vocab[term]
                columns[column].append((row, idf[column] * (count / (norm + count))))
        indptr = array("q", [0])
        for entries in columns:
            indptr.append(indptr[-1] + len(entries))
        data = array("f", (score for entries in columns for _, score in entries))
        indices = array("i", (row for entries in columns for row, _ in entries))
        return cls(vocab, data, indices, indptr, n)

    def save(self, directory: Path) -> None:
        """Write the index as `bm25s.BM25.save` does (its files, its parameters; `""` last in the vocabulary)."""
        directory.mkdir(parents=True, exist_ok=True)
        for name, values in (("data", self.data), ("indices", self.indices), ("indptr", self.indptr)):
            _write_private(directory / FILES[name], npy_bytes(values))
        vocab = {**self.vocab_dict, "": len(self.vocab_dict)}
        _write_private(directory / "vocab.index.json", json.dumps(vocab, ensure_ascii=False).encode("utf-8"))
        params = {"k1": K1, "b": B, "delta": 0.5, "method": "lucene", "idf_method": "lucene", "dtype": "float32",
                  "int_dtype": "int32", "num_docs": self.documents, "backend": "numpy"}
        _write_private(directory / "params.index.json", json.dumps(params, indent=4).encode("utf-8"))

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


def _in_bounds(indices: array[int], indptr: array[int], documents: int) -> bool:
    """Whether every column's slice lies inside `indices` and every document number below `documents`: a saved
    index cut short or edited (it lives in the project's `.swecli/`) failed each query with an IndexError."""
    if not indptr or indptr[0] != 0 or indptr[-1] != len(indices) or any(a > b for a, b in pairwise(indptr)):
        return False
    return not indices or (min(indices) >= 0 and max(indices) < documents)


_NPY_TYPES = {"<f4": "f", "<f8": "d", "<i4": "i", "<i8": "q", "<u4": "I", "<u8": "Q"}
_NPY_DESCR = {code: descr for descr, code in _NPY_TYPES.items()}


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


def npy_bytes(values: array[Any]) -> bytes:
    """`values` in the .npy format (version 1.0, little-endian, its header padded to 64 bytes as numpy pads)."""
    header = f"{{'descr': '{_NPY_DESCR[values.typecode]}', 'fortran_order': False, 'shape': ({len(values)},), }}"
    header += " " * (-(10 + len(header) + 1) % 64) + "\n"
    if sys.byteorder != "little":
        values = array(values.typecode, values)
        values.byteswap()
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin-1") + values.tobytes()


def _write_private(path: Path, blob: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # swecli's records are the user's alone
    with open(fd, "wb") as handle:
        handle.write(blob)
