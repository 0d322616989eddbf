"""Tools: plain functions with a pydantic argument model, each declaring its facts, run confined to the project.

    base.py        `Tool`, `ToolContext`, `ToolResult`, `ToolRegistry` (may change between requests)
    facts.py       what a tool is (a shell? how a call is shown, folded), asked by name everywhere else
    builtin.py     the tools every session starts with
    files.py       list_files, read_file, write_file, edit_file
    grep.py        regex search with ripgrep, or a pure-Python engine
    own_process.py helper programs swecli runs itself (ripgrep): found off the project, run with a clean environment
    bash.py        a shell command, bounded in time and output, killable at any moment
    sandbox.py     bubblewrap confinement for bash (`sandbox.from_settings`)
    spare.py       a sandbox started while the model thinks, handed the next command if it still fits
    syscalls.py    the seccomp filter of a sandboxed command without network (no unix sockets out)
    environment.py the environment a command gets: an allowlist, secrets left out by name and by value
    guard.py       the dangerous-command guard
    gitguard.py    the guard's git rules (what loses work git cannot give back)
    targets.py     what a command's words stand for as paths, for the guard
    readonly.py    which commands are read-only (run without asking in default mode)
    shell.py       shell command lines as data, for the guard and the read-only rule
    bashtree.py    a command line read with tree-sitter-bash, for shell.py
    inline.py      inline code handed to an interpreter (`python3 -c`, heredocs)
    protected.py   paths a command must not destroy or see
    gitlinks.py    what git runs later from inside the project (submodules, a named hooks directory, includes)
    paths.py       confinement: every path a file tool touches resolves inside the root
    walk.py        walking the project as git sees it (.gitignore honoured)
    ignorecheck.py the ignore files ripgrep would open, checked first (a FIFO or /dev/zero link must not hang it)
    text.py        encodings, line endings, binary detection and diffs
    visible.py     control characters made visible (what a tool read must not drive the terminal)
    images.py      image files as message parts, capped in size
    spool.py       a tool's whole output, kept when the model sees a cut of it

Internal (used only inside the package, may change without notice): `bashtree`, `files`, `gitguard`, `grep`,
`inline`, `shell`, `spare`, `syscalls`, `targets`.

What other packages may use is re-exported here (`from swecli.tools import ...`); each name is imported from
its module the first time it is used, so importing the package costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from swecli.lazy import exports

if TYPE_CHECKING:
    from swecli.tools.base import Tool as Tool
    from swecli.tools.base import ToolChanges as ToolChanges
    from swecli.tools.base import ToolContext as ToolContext
    from swecli.tools.base import ToolError as ToolError
    from swecli.tools.base import ToolRegistry as ToolRegistry
    from swecli.tools.base import ToolResult as ToolResult
    from swecli.tools.base import ToolSource as ToolSource
    from swecli.tools.bash import BASH as BASH
    from swecli.tools.builtin import default_registry as default_registry
    from swecli.tools.builtin import default_tools as default_tools
    from swecli.tools.facts import ToolFacts as ToolFacts
    from swecli.tools.facts import declare as declare
    from swecli.tools.facts import facts_for as facts_for
    from swecli.tools.facts import key_argument as key_argument
    from swecli.tools.facts import one_line as one_line
    from swecli.tools.guard import dangerous_reason as dangerous_reason
    from swecli.tools.images import image_refs as image_refs
    from swecli.tools.images import is_image_path as is_image_path
    from swecli.tools.images import load_image as load_image
    from swecli.tools.images import resolve_image as resolve_image
    from swecli.tools.paths import display_path as display_path
    from swecli.tools.paths import resolve_in_root as resolve_in_root
    from swecli.tools.readonly import is_read_only as is_read_only
    from swecli.tools.sandbox import Sandbox as Sandbox
    from swecli.tools.spool import FullOutput as FullOutput
    from swecli.tools.spool import Spool as Spool
    from swecli.tools.text import looks_binary as looks_binary
    from swecli.tools.text import write_atomically as write_atomically
    from swecli.tools.walk import ALWAYS_SKIP as ALWAYS_SKIP
    from swecli.tools.walk import IgnoreRules as IgnoreRules

_EXPORTS = {
    "ALWAYS_SKIP": "walk",
    "BASH": "bash",
    "FullOutput": "spool",
    "IgnoreRules": "walk",
    "Sandbox": "sandbox",
    "Spool": "spool",
    "Tool": "base",
    "ToolChanges": "base",
    "ToolContext": "base",
    "ToolError": "base",
    "ToolFacts": "facts",
    "ToolRegistry": "base",
    "ToolResult": "base",
    "ToolSource": "base",
    "dangerous_reason": "guard",
    "declare": "facts",
    "default_registry": "builtin",
    "default_tools": "builtin",
    "display_path": "paths",
    "facts_for": "facts",
    "image_refs": "images",
    "is_image_path": "images",
    "is_read_only": "readonly",
    "key_argument": "facts",
    "load_image": "images",
    "looks_binary": "text",
    "one_line": "facts",
    "resolve_image": "images",
    "resolve_in_root": "paths",
    "write_atomically": "text",
}
__all__ = sorted(_EXPORTS)
__getattr__ = exports(__name__, _EXPORTS)
