"""The repository map: what a codebase holds and how its files depend on each other, without reading it all.

    languages.py  file suffix -> tree-sitter grammar, and the queries that find definitions, imports, references
    parse.py      one file's facts (symbols with lines, import specifiers, referenced names), by tree-sitter
    discover.py   the files to map: the same .gitignore rules as the tools (ripgrep's `--files`, or walk.py)
    index.py      facts for every file, cached under `.swecli/repomap/` by mtime and size (only changes re-parse;
                  a cold run parses in worker processes and reports progress)
    graph.py      imports resolved to files, references to definitions, PageRank over that graph, file roles
    repomap.py    `RepoMap`: build/load it, rank, symbols index, neighbours, JSON, and text maps within a budget

Used by the `repo_map` tool, just-in-time retrieval, `/init` and the optional ranked map in the memory block.
Nothing here imports the UI, the agent or the app (the import-linter contract says so).
"""
