"""`swecli mcp add` / `swecli mcp remove`: edit `[mcp.servers.NAME]` in the file of a scope.

Scopes, as in Claude Code (`--scope`):
- `local` (the default): private to the user, for this project only: `local.toml` in the user's config
  directory, under `[projects."/path/to/project"]` (`swecli.config.local_layer`). A token given with
  `-H "Authorization=Bearer ..."` stays out of the repository.
- `project`: `.swecli/config.toml`, shared with everyone who clones the project (tokens belong in
  `${VAR}` references there: `swecli.mcp.variables`).
- `user`: the user's `config.toml`, for every project.

The file is edited with tomlkit, so its comments, key order and formatting survive; the new text is
validated as a whole (the same checks as at startup) before it replaces the old one, atomically. A new
file in the user's config directory is private to the user (0600); the project's follows the umask.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from swecli.config import (
    SERVER_NAME,
    McpServerConfig,
    local_config_path,
    project_config_path,
    project_key,
    user_config_path,
)
from swecli.errors import SwecliError
from swecli.records import datarecord

Scope = Literal["local", "project", "user"]
SCOPES: tuple[Scope, ...] = ("local", "project", "user")
"""Highest precedence first: a server defined in two scopes runs with the settings of the first."""


class McpConfigError(SwecliError):
    """One sentence saying what is wrong and what to do."""


@datarecord(frozen=True)
class ScopeFile:
    """Where one scope's servers are written: a file, and the table in it that holds the settings."""

    scope: Scope
    path: Path
    table: tuple[str, ...] = ()
    """`()`: the file is a settings file; local: `("projects", "/path/to/project")`."""

    @property
    def private(self) -> bool:
        return self.scope != "project"

    def __str__(self) -> str:
        return f'{self.path} [projects."{self.table[1]}"]' if self.table else str(self.path)


def scope_file(root: Path, scope: Scope) -> ScopeFile:
    if scope == "local":
        return ScopeFile(scope, local_config_path(), ("projects", project_key(root)))
    if scope == "project":
        return ScopeFile(scope, project_config_path(root))
    return ScopeFile(scope, user_config_path())


def server_scopes(root: Path) -> dict[str, Scope]:
    """Each configured server's scope (the first in precedence order that defines it)."""
    found: dict[str, Scope] = {}
    for scope in SCOPES:
        for name in _servers_in(scope_file(root, scope)):
            found.setdefault(name, scope)
    return found


def add_server(root: Path, name: str, server: McpServerConfig, validate: Callable[[], object],
               scope: Scope = "local") -> ScopeFile:
    """Add `[mcp.servers.NAME]` to the scope's file; `validate` loads the settings (raising a
    ConfigError-like exception with a clear message) and the old text is restored if it fails."""
    import tomlkit

    if not SERVER_NAME.fullmatch(name):
        raise McpConfigError(f"server name {name!r} may use only letters, digits, '_' and '-'.")
    for other in SCOPES:
        if name in _servers_in(scope_file(root, other)):
            raise McpConfigError(f"an MCP server named {name!r} is already configured in {scope_file(root, other)} "
                                 f"({other} scope); remove it first (swecli mcp remove {name} --scope {other}).")
    target = scope_file(root, scope)
    doc = _read(target.path)
    servers = _table(_table(_settings_table(doc, target), "mcp"), "servers")
    table = tomlkit.table()
    for key, value in _fields(server).items():
        table[key] = value
    servers[name] = table
    _write_validated(target, tomlkit.dumps(doc), validate)
    return target


def remove_server(root: Path, name: str, validate: Callable[[], object], scope: Scope | None = None) -> ScopeFile:
    """Remove `[mcp.servers.NAME]` from the scope that has it (`scope` must say which when several do)."""
    holding = [s for s in SCOPES if name in _servers_in(scope_file(root, s))]
    if scope is None and len(holding) > 1:
        raise McpConfigError(f"an MCP server named {name!r} is configured in several scopes ({', '.join(holding)}); "
                             f"say which with --scope.")
    chosen = scope or (holding[0] if holding else None)
    if chosen is None or chosen not in holding:
        where = f" in {scope_file(root, chosen)} ({chosen} scope)" if chosen else ""
        elsewhere = f"; it is in the {' and '.join(holding)} scope" if holding else ""
        raise McpConfigError(f"there is no MCP server named {name!r}{where}{elsewhere}.")
    target = scope_file(root, chosen)
    doc = _read(target.path)
    parents = [doc]
    for key in (*target.table, "mcp", "servers"):
        parents.append(parents[-1][key])
    del parents[-1][name]
    keys = (*target.table, "mcp", "servers")
    for parent, key in zip(reversed(parents[:-1]), reversed(keys), strict=True):  # drop the tables left empty
        if parent[key]:
            break
        del parent[key]
    _write_validated(target, doc.as_string(), validate)
    return target


def _servers_in(target: ScopeFile) -> dict[str, Any]:
    """The servers the scope's file defines (nothing when it is missing or unreadable: loading the
    settings reports those problems)."""
    import tomllib

    try:
        data: Any = tomllib.loads(target.path.read_text(encoding="utf-8")) if target.path.is_file() else {}
    except (OSError, ValueError):
        return {}
    for key in (*target.table, "mcp", "servers"):
        data = data.get(key, {}) if isinstance(data, dict) else {}
    return data if isinstance(data, dict) else {}


def _settings_table(doc: Any, target: ScopeFile) -> Any:
    table = doc
    for key in target.table:
        table = _table(table, key)
    return table


def _fields(server: McpServerConfig) -> dict[str, Any]:
    """The keys worth writing: what differs from the defaults, in the documented order."""
    out: dict[str, Any] = {}
    if server.command:
        out["command"] = server.command
        out["args"] = list(server.args)
        if server.env:
            out["env"] = _inline(server.env)
    else:
        out["url"] = server.url
        if server.headers:
            out["headers"] = _inline(server.headers)
    if not server.enabled:
        out["enabled"] = False
    if server.always_load:
        out["always_load"] = True
    return out


def _inline(values: dict[str, str]) -> Any:
    import tomlkit

    table = tomlkit.inline_table()
    table.update(values)
    return table


def _read(path: Path) -> Any:
    import tomlkit
    from tomlkit.exceptions import ParseError

    if not path.is_file():
        return tomlkit.document()
    try:
        return tomlkit.parse(path.read_text(encoding="utf-8"))
    except ParseError as exc:
        raise McpConfigError(f"{path} is not valid TOML ({exc}); fix it first.") from None
    except OSError as exc:
        raise McpConfigError(f"cannot read {path} ({exc.strerror}).") from None


def _table(parent: Any, key: str) -> Any:
    """The table `key` of `parent`, created as a super-table (no bare `[mcp]` header) when missing."""
    import tomlkit

    if key not in parent:
        parent[key] = tomlkit.table(is_super_table=True)
    table = parent[key]
    if not isinstance(table, dict):
        raise McpConfigError(f"'{key}' in the config file is not a table; fix the file first.")
    return table


def _write_validated(target: ScopeFile, text: str, validate: Callable[[], object]) -> None:
    path = target.path
    old = path.read_text(encoding="utf-8") if path.is_file() else None
    _write(target, text)
    try:
        validate()
    except Exception:
        if old is None:
            path.unlink()
        else:
            _write(target, old)
        raise


def _write(target: ScopeFile, text: str) -> None:
    from swecli.tools.text import replace_file

    try:
        replace_file(target.path, text.encode("utf-8"), new_mode=0o600 if target.private else None)
    except OSError as exc:
        raise McpConfigError(f"cannot write {target.path} ({exc.strerror}).") from None
