"""`${VAR}` in an MCP server's settings, and secrets written out where they would be committed.

A project's `.swecli/config.toml` is meant to be shared, so a server that needs a token names it instead
of holding it: `headers = { Authorization = "Bearer ${GITHUB_TOKEN}" }`. `expand` substitutes
`${VAR}` (and `${VAR:-default}`, as Claude Code's `.mcp.json` does) in the command, its arguments and
environment, the URL and the headers when the server starts, from swecli's own environment; a variable
that is not set and has no default fails that server with a sentence naming it, rather than sending an
empty token. The settings as written (with `${VAR}`) are what `/mcp` and `swecli mcp list` show.

`literal_secrets` finds values that look like secrets written out in full, for the warning `swecli mcp
add --scope project` gives.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import parse_qsl, urlsplit

from swecli.config import McpServerConfig
from swecli.errors import SwecliError

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_SECRET_WORDS = re.compile(r"token|secret|passw|api[-_]?key|apikey|auth|credential|cookie|private[-_]?key",
                           re.IGNORECASE)
_SECRET_SHAPES = re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|glpat-[\w-]{20,}|"
                            r"sk-[A-Za-z0-9_-]{16,}|xox[abprs]-[\w-]{10,}|AKIA[0-9A-Z]{16}|AIza[\w-]{30,})")
_SCHEMES = re.compile(r"^\s*(?:bearer|basic|token|bot)\s+", re.IGNORECASE)
MIN_SECRET_CHARS = 8
"""A value shorter than this (`1`, `true`, `json`) is a setting, not a secret."""


class MissingVariable(SwecliError):
    """A `${VAR}` with no value and no default; `str()` says which and where."""


def expand(server: McpServerConfig, env: Mapping[str, str] | None = None) -> McpServerConfig:
    """The server's settings with every `${VAR}` replaced by its value (see the module docstring)."""
    env = os.environ if env is None else env

    def sub(text: str, where: str) -> str:
        def value(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            found = env.get(name)
            if found is not None:
                return found
            if default is not None:
                return default
            raise MissingVariable(f"the environment variable {name} is not set (it is used in {where}); set it, "
                                  f"or write ${{{name}:-default}} for a default")

        return _REFERENCE.sub(value, text)

    return server.model_copy(update={
        "command": sub(server.command, "command"),
        "args": [sub(arg, "args") for arg in server.args],
        "env": {key: sub(value, f"env.{key}") for key, value in server.env.items()},
        "url": sub(server.url, "url"),
        "headers": {key: sub(value, f"headers.{key}") for key, value in server.headers.items()},
    })


def literal_secrets(server: McpServerConfig) -> list[str]:
    """The settings (`headers.Authorization`, `env.API_KEY`, `url`, `args`) holding what looks like a
    secret written out in full rather than as a `${VAR}` reference."""
    found = [f"headers.{key}" for key, value in server.headers.items() if _literal(key, value)]
    found += [f"env.{key}" for key, value in server.env.items() if _literal(key, value)]
    if server.url and _url_holds_secret(server.url):
        found.append("url")
    if _args_hold_secret(server.args):
        found.append("args")
    return found


def _literal(name: str, value: str) -> bool:
    """A value written out in full that its name (or its shape) says is a secret."""
    written = _SCHEMES.sub("", _REFERENCE.sub("", value)).strip()
    if _SECRET_SHAPES.search(written):
        return True
    return bool(_SECRET_WORDS.search(name)) and len(written) >= MIN_SECRET_CHARS


def _url_holds_secret(url: str) -> bool:
    parts = urlsplit(_REFERENCE.sub("", url))
    if parts.password:
        return True
    return any(_literal(key, value) for key, value in parse_qsl(parts.query)) or bool(_SECRET_SHAPES.search(url))


def _args_hold_secret(args: list[str]) -> bool:
    for i, arg in enumerate(args):
        flag, equals, value = arg.partition("=")
        if equals and flag.startswith("-") and _literal(flag, value):
            return True
        following = args[i + 1] if i + 1 < len(args) else ""
        if arg.startswith("-") and not equals and _literal(arg, following):
            return True
        if _SECRET_SHAPES.search(_REFERENCE.sub("", arg)):
            return True
    return False
