"""`Postings`: bm25s's matrix read without numpy, and built for small projects to the bit as bm25s builds it."""

from __future__ import annotations

import random
from array import array
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import pytest

from swecli.repomap.postings import Postings, npy_bytes, read_npy

WORDS = [f"w{i}" for i in range(60)] + ["money", "cart", "\0empty"]


def corpus(seed: int) -> list[list[str]]:
    """Documents of 1-80 terms, some repeated (as `lexical` repeats a term up to its count)."""
    rng = random.Random(seed)
    docs = []
    for _ in range(rng.randrange(1, 40)):
        vocabulary = rng.sample(WORDS, rng.randrange(1, 12))
        docs.append([rng.choice(vocabulary) for _ in range(rng.randrange(1, 80))])
    return docs


def bm25s_index(docs: list[list[str]]) -> bm25s.BM25:
    model = bm25s.BM25()
    model.index(docs, show_progress=False)
    return model


@pytest.mark.parametrize("seed", range(40))
def test_the_matrix_is_bm25s_own_to_the_bit(seed: int) -> None:
    docs = corpus(seed)
    ours, theirs = Postings.build(docs), bm25s_index(docs)
    assert {**ours.vocab_dict, "": len(ours.vocab_dict)} == theirs.vocab_dict
    assert ours.data.tobytes() == theirs.scores["data"].astype(np.float32).tobytes()
    assert list(ours.indices) == theirs.scores["indices"].tolist()
    assert list(ours.indptr) == theirs.scores["indptr"].tolist()
    assert ours.documents == theirs.scores["num_docs"]
    for query in (["money"], ["cart", "w3", "w3"], WORDS[:20]):
        known = [t for t in query if t in ours.vocab_dict]
        if known:
            assert ours.get_scores(known).tobytes() == theirs.get_scores(known).astype(np.float32).tobytes()


def test_bm25s_loads_what_save_writes_and_so_does_load(tmp_path: Path) -> None:
    docs = corpus(7)
    ours = Postings.build(docs)
    ours.save(tmp_path / "bm25")
    loaded = bm25s.BM25.load(str(tmp_path / "bm25"))
    read = Postings.load(tmp_path / "bm25")
    assert read is not None and read.vocab_dict == ours.vocab_dict and read.documents == len(docs)
    query = ["money", "w1", "w2"]
    known = [t for t in query if t in ours.vocab_dict]
    assert known
    assert read.get_scores(known).tobytes() == loaded.get_scores(known).astype(np.float32).tobytes() \
        == ours.get_scores(known).tobytes()


def _corrupt_indices_past_the_documents(index: Postings) -> None:
    index.indices[-1] = index.documents


def _corrupt_a_negative_document(index: Postings) -> None:
    index.indices[0] = -1


def _corrupt_indptr_past_the_end(index: Postings) -> None:
    index.indptr[-1] += 5


def _corrupt_indptr_backwards(index: Postings) -> None:
    index.indptr[1], index.indptr[2] = index.indptr[2], index.indptr[1] - 1


def _corrupt_indptr_start(index: Postings) -> None:
    index.indptr[0] = 1


@pytest.mark.parametrize("corrupt", [_corrupt_indices_past_the_documents, _corrupt_a_negative_document,
                                     _corrupt_indptr_past_the_end, _corrupt_indptr_backwards, _corrupt_indptr_start])
def test_a_saved_index_out_of_bounds_is_not_loaded(tmp_path: Path, corrupt: Any) -> None:
    # the index lives in the project's .swecli/: one cut short or edited failed every query with an IndexError
    index = Postings.build([["money", "cart"], ["cart"], ["w1", "money", "w1"]])
    index.save(tmp_path / "good")
    assert Postings.load(tmp_path / "good") is not None
    corrupt(index)
    index.save(tmp_path / "bad")
    assert Postings.load(tmp_path / "bad") is None


@pytest.mark.parametrize("values", [array("f", [0.5, -1.25, 3.0]), array("i", [0, 7, -3]), array("q", []),
                                    array("q", range(1000))])
def test_npy_files_read_back_and_numpy_reads_them(tmp_path: Path, values: array[float]) -> None:
    path = tmp_path / "a.npy"
    path.write_bytes(npy_bytes(values))
    assert read_npy(path) == values
    assert np.load(path).tolist() == values.tolist()
    assert path.stat().st_size % 64 == len(values) * values.itemsize % 64  # the header is padded to 64 bytes
