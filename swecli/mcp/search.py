"""Keyword search over tool descriptions for `tool_search`: BM25 (the `bm25s` package).

Tool names are identifiers (`get_current_time`, `listPullRequests`), so text is split on case and
punctuation into lowercase words, with a light plural fold ("timezones" finds "timezone"). The index
is built once per set of documents; a query costs microseconds for hundreds of tools.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it", "of", "on", "or",
    "the", "this", "that", "to", "with",
})


def words(text: str) -> list[str]:
    """Lowercase search words of `text` (identifiers split, stopwords dropped, plurals folded)."""
    out = []
    for word in _WORD.findall(text):
        word = word.lower()
        if word in STOPWORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.append(word)
    return out


class ToolIndex:
    """BM25 over (key, text) documents; `search` returns keys of matching documents, best first."""

    def __init__(self, documents: Sequence[tuple[str, str]]) -> None:
        import bm25s

        self.keys = [key for key, _ in documents]
        self._retriever = bm25s.BM25()
        # Every document gets at least one token: bm25s rejects an empty one.
        self._retriever.index([words(text) or ["_"] for _, text in documents], show_progress=False)

    def search(self, query: str, limit: int) -> list[str]:
        terms = words(query)
        if not terms or not self.keys:
            return []
        found = self._retriever.retrieve([terms], k=min(limit, len(self.keys)), show_progress=False)
        return [self.keys[int(i)] for i, score in zip(found.documents[0], found.scores[0], strict=True) if score > 0]
