"""The context engine: what each request to the model holds, counted exactly, kept within the window.

    manager.py       `ContextManager`: what the agent loop asks of the engine (assemble, count, compact, observe)
    wiring.py        what the engine talks to (events, cancel token, summary provider, pin, todo, counter)
    admission.py     a turn whose own input cannot fit the window is refused before sending
    meter.py         what a request carries, counted and calibrated against the window (`Prompt`, `Limits`)
    budget.py        the window, the compaction threshold and where the tokens go (`ContextState`)
    ledger.py        what the engine knows about a history, kept up to date in O(appended)
    tokens.py        token counting: tiktoken encodings loaded offline, a per-message cached counter
    scheduler.py     when the history is compacted: the summary made ahead, room at the hard limit
    runway.py        where the background summary must start to be ready before the hard limit
    compactor.py     the ways to make room: a compaction, a fold, a truncation; the record of each
    compaction.py    rewrite an over-full history into a smaller one that loses nothing for good
    compaction_params.py  what a compaction is asked for, read per request (the stack loads at the first one)
    background.py    the older history summarized while the loop keeps working
    archive.py       where compacted history stays reachable (`.swecli/compactions/`)
    references.py    what a compaction drops, and where to re-open it
    extract.py       deterministic facts compaction keeps next to the model's summary
    hooks.py         the PreCompact hook (a shell command or a Python callback)
    engineering.py   the per-request mechanisms as the loop meets them through the manager
    decay.py         old tool outputs folded into one-line digests, in rare batches
    foldahead.py     the digests a fold at the hard limit would write, made ahead on a worker thread
    offload.py       large tool outputs saved to a file, a preview in the context
    images.py        old images become one-line stand-ins
    recitation.py    the goal, todo progress and next step, restated in the dynamic tail
    failures.py      tool failures classified, repeats spotted, evidence in the dynamic tail
    diagnostics.py   what test runners, compilers and linters print, recognized line by line
    prefix.py        the append-only check and prefix-reuse accounting
    todo.py          the model's own task list (the `todo` tool)

Internal (used only inside the package, may change without notice): `archive`, `background`, `compaction`,
`compaction_params`, `compactor`, `decay`, `diagnostics`, `engineering`, `extract`, `foldahead`, `hooks`, `images`,
`ledger`, `prefix`, `recitation`, `references`, `runway`, `scheduler`.

What other packages may use is re-exported here (`from swecli.context import ...`); each name is imported from
its module the first time it is used, so importing the package costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from swecli.lazy import exports

if TYPE_CHECKING:
    from swecli.context.budget import ContextState as ContextState
    from swecli.context.failures import FailureKind as FailureKind
    from swecli.context.failures import FailureTracker as FailureTracker
    from swecli.context.failures import classify as classify
    from swecli.context.failures import evidence_line as evidence_line
    from swecli.context.manager import ContextManager as ContextManager
    from swecli.context.offload import EXACT_COUNT_BYTES as EXACT_COUNT_BYTES
    from swecli.context.offload import offload_full as offload_full
    from swecli.context.todo import TodoState as TodoState
    from swecli.context.todo import todo_tool as todo_tool
    from swecli.context.tokens import TOOL_SCHEMA_OVERHEAD as TOOL_SCHEMA_OVERHEAD
    from swecli.context.tokens import TokenCounter as TokenCounter
    from swecli.context.tokens import Tokenizer as Tokenizer
    from swecli.context.tokens import encoding_for_model as encoding_for_model
    from swecli.context.tokens import serialize_tool as serialize_tool

_EXPORTS = {
    "ContextManager": "manager",
    "ContextState": "budget",
    "EXACT_COUNT_BYTES": "offload",
    "FailureKind": "failures",
    "FailureTracker": "failures",
    "TOOL_SCHEMA_OVERHEAD": "tokens",
    "TodoState": "todo",
    "TokenCounter": "tokens",
    "Tokenizer": "tokens",
    "classify": "failures",
    "encoding_for_model": "tokens",
    "evidence_line": "failures",
    "offload_full": "offload",
    "serialize_tool": "tokens",
    "todo_tool": "todo",
}
__all__ = sorted(_EXPORTS)
__getattr__ = exports(__name__, _EXPORTS)
