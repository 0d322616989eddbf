"""Tool names the providers accept: `mcp__<server>__<tool>`, at most 64 characters of [a-zA-Z0-9_-].

OpenAI and Anthropic both reject other names, and MCP servers name tools freely (dots, slashes,
spaces, long names). A name is sanitized (every other character becomes `_`); one that is still too
long, or that collides with a name already taken, keeps a readable head and ends in a short hash of
the server and tool, so it stays unique and the same from session to session.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container

PREFIX = "mcp"
MAX_LENGTH = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_HASH_CHARS = 8


def tool_name(server: str, tool: str, taken: Container[str] = ()) -> str:
    """The provider-safe name for `tool` of `server`, distinct from every name in `taken`."""
    name = _UNSAFE.sub("_", f"{PREFIX}__{server}__{tool}")
    if len(name) <= MAX_LENGTH and name not in taken:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()
    for start in range(0, len(digest) - _HASH_CHARS + 1):
        suffix = "_" + digest[start:start + _HASH_CHARS]
        candidate = name[: MAX_LENGTH - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
    raise ValueError(f"cannot name {server}/{tool} uniquely")  # 57 distinct hashes all taken: not in practice
