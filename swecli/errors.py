"""The one exception tree: every error swecli raises on purpose derives from `SwecliError`, whose `str()`
is the sentence the reader sees (a person on the terminal, or the model for a tool's error), naming what
went wrong and what to do. A boundary that must not crash (the CLI, the REPL, a slash command) catches
`SwecliError` and prints it; anything else is a bug and keeps its traceback.

Each class lives beside the code that raises it; this is the map (tests/test_errors.py keeps it complete):

    SwecliError
    ├── ConfigError                 swecli.config             a setting is unknown, invalid or missing
    ├── McpConfigError              swecli.mcp.configfile     `swecli mcp add/remove` cannot change the file
    ├── MissingVariable             swecli.mcp.variables      a server's `${VAR}` is not set
    ├── TrustStoreError             swecli.trust              trusted.json cannot be read or written
    ├── ProviderError               swecli.llm.base           a model call failed (after retries)
    │   ├── AuthError
    │   ├── RateLimitError
    │   ├── TransientError          5xx, timeouts, dropped connections
    │   ├── StreamingToolsUnsupported
    │   └── ContextOverflowError    the request did not fit: compaction retries it
    │       ├── EmptyStream         swecli.llm.openai
    │       └── InputTooLarge       swecli.context.admission  the turn's own input cannot fit: refused
    ├── SessionError                swecli.session.store      nothing to resume, an ambiguous id
    ├── InitError                   swecli.memory.init        /init could not write OPENCLI.md
    ├── PlaybookError               swecli.memory.playbook
    ├── SkillError                  swecli.skills.catalog
    ├── DefinitionError             swecli.delegation.definitions   an agent file that cannot be used
    ├── FrontMatterError            swecli.frontmatter        (a clause: the loaders above finish the sentence)
    ├── ToolError                   swecli.tools.base         what the model reads about a failed call
    ├── McpCallError                swecli.mcp.manager        an MCP call that produced no result
    ├── PlantedCommand              swecli.mcp.manager        a server's program is found only where commands write
    ├── AttachError                 swecli.retrieval.attach   a named file that cannot be attached
    ├── OffloadError                swecli.context.offload
    ├── ArchiveError                swecli.context.archive
    ├── UnknownFile                 swecli.repomap.views      /repomap deps FILE for a file not in the map
    ├── BuildFailed                 swecli.repomap.builds     a background build (map, BM25 index) failed
    ├── RegexError                  swecli.tools.grep         internal: ripgrep refused a pattern, Python tries
    ├── EncodingUnavailable         swecli.context.tokens     internal: counts fall back to estimates
    └── TaskError                   swecli.cli                a word that is neither a command nor a task

Control-flow signals are not errors: they carry an outcome up the stack and are never shown as failures,
so they derive from `ControlFlow`, not from `SwecliError` (an `except SwecliError` never swallows one):

    ControlFlow
    ├── Finished, Interrupted       swecli.agent              the loop's exits
    ├── Cancelled                   swecli.llm.base           the user pressed Esc during a model call
    ├── Retryable                   swecli.llm.retry          an attempt that may be made again
    ├── TooMuchToParse              swecli.repomap.index      a cold build: left to the builder process
    └── _TooLarge                   swecli.memory.changes     too many directories to watch: scan instead
"""

from __future__ import annotations

__all__ = ["ControlFlow", "SwecliError"]


class SwecliError(Exception):
    """An error swecli reports: `str()` is one sentence saying what went wrong and what to do."""


class ControlFlow(Exception):
    """Not an error: an outcome carried up the stack to the code that handles it."""
