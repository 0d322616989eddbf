"""The repository map: what a codebase holds and how its files depend on each other, without reading it all.

    repomap.py     `RepoMap`: build or load it, rank, symbols, neighbours, JSON and text maps within a budget
    builds.py      builds on a daemon thread, one per project, shared by every caller (`background`, `latest`)
    builder.py     cold builds in a detached process of their own, which saves the map for the next run
    languages.py   file suffix -> tree-sitter grammar, and the queries for definitions, imports, references
    parse.py       one file's facts (symbols with lines, imports, referenced names), by tree-sitter
    discover.py    the files to map, with the tools' .gitignore rules
    index.py       facts for every file, cached under `.swecli/repomap/` by mtime and size
    graph.py       imports resolved to files, references to definitions, PageRank, file roles
    lexical.py     a BM25 index over paths, definitions and contents
    postings.py    the BM25 matrix without numpy: read as bm25s saved it, built so for a small project
    views.py       text views shared by `swecli repomap`, `/repomap` and the tool
    tool.py        the `repo_map` tool

Internal (used only inside the package, may change without notice): `builder`, `builds`, `discover`, `graph`, `index`,
`languages`, `parse`, `postings`.

What other packages may use is re-exported here (`from swecli.repomap import ...`); each name is imported from
its module the first time it is used, so importing the package costs nothing. Used by the `repo_map` tool,
just-in-time retrieval, `/init` and the ranked map in the memory block; nothing here imports the UI, the agent
or the session (the layer contract says so).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from swecli.lazy import exports

if TYPE_CHECKING:
    from swecli.repomap.lexical import Lexical as Lexical
    from swecli.repomap.lexical import latest_lexical as latest_lexical
    from swecli.repomap.lexical import lexical_background as lexical_background
    from swecli.repomap.lexical import terms as terms
    from swecli.repomap.repomap import RepoMap as RepoMap
    from swecli.repomap.repomap import background as background
    from swecli.repomap.repomap import latest as latest
    from swecli.repomap.tool import REPO_MAP as REPO_MAP
    from swecli.repomap.views import UnknownFile as UnknownFile
    from swecli.repomap.views import deps_text as deps_text
    from swecli.repomap.views import find_file as find_file
    from swecli.repomap.views import init_section as init_section
    from swecli.repomap.views import memory_section as memory_section
    from swecli.repomap.views import ranked_table as ranked_table

_EXPORTS = {
    "Lexical": "lexical",
    "REPO_MAP": "tool",
    "RepoMap": "repomap",
    "UnknownFile": "views",
    "background": "repomap",
    "deps_text": "views",
    "find_file": "views",
    "init_section": "views",
    "latest": "repomap",
    "latest_lexical": "lexical",
    "lexical_background": "lexical",
    "memory_section": "views",
    "ranked_table": "views",
    "terms": "lexical",
}
__all__ = sorted(_EXPORTS)
__getattr__ = exports(__name__, _EXPORTS)
