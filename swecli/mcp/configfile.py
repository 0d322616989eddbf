"""`swecli mcp add` / `swecli mcp remove`: edit `[mcp.servers.NAME]` in the project's `.swecli/config.toml`.

The file is edited with tomlkit, so its comments, key order and formatting survive; the new text is
validated as a whole (the same checks as at startup) before it replaces the old one, atomically.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swecli.config import SERVER_NAME, McpServerConfig, project_config_path
from swecli.errors import SwecliError


class McpConfigError(SwecliError):
    """One sentence saying what is wrong and what to do."""


def add_server(root: Path, name: str, server: McpServerConfig, validate: Callable[[], object]) -> Path:
    """Add `[mcp.servers.NAME]` to the project config; `validate` loads the settings (raising a
    ConfigError-like exception with a clear message) and the old text is restored if it fails."""
    import tomlkit

    if not SERVER_NAME.fullmatch(name):
        raise McpConfigError(f"server name {name!r} may use only letters, digits, '_' and '-'.")
    path = project_config_path(root)
    doc = _read(path)
    servers = _table(_table(doc, "mcp"), "servers")
    if name in servers:
        raise McpConfigError(f"an MCP server named {name!r} is already in {path}; remove it first "
                             f"(swecli mcp remove {name}).")
    table = tomlkit.table()
    for key, value in _fields(server).items():
        table[key] = value
    servers[name] = table
    _write_validated(path, tomlkit.dumps(doc), validate)
    return path


def remove_server(root: Path, name: str, validate: Callable[[], object]) -> Path:
    path = project_config_path(root)
    doc = _read(path)
    mcp = doc.get("mcp")
    servers = mcp.get("servers") if isinstance(mcp, dict) else None
    if not isinstance(servers, dict) or name not in servers:
        raise McpConfigError(f"there is no MCP server named {name!r} in {path}" + _elsewhere(name) + ".")
    del servers[name]
    if not servers:
        del mcp["servers"]
    if not mcp:
        del doc["mcp"]
    _write_validated(path, doc.as_string(), validate)
    return path


def _elsewhere(name: str) -> str:
    from swecli.config import user_config_path

    user = user_config_path()
    try:
        import tomllib

        data = tomllib.loads(user.read_text(encoding="utf-8")) if user.is_file() else {}
    except (OSError, ValueError):
        return ""
    if name in data.get("mcp", {}).get("servers", {}):
        return f" (it is configured in {user}: edit that file, or disable it here with enabled = false)"
    return ""


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
        raise McpConfigError(f"'{key}' in the project config is not a table; fix the file first.")
    return table


def _write_validated(path: Path, text: str, validate: Callable[[], object]) -> None:
    old = path.read_text(encoding="utf-8") if path.is_file() else None
    _write(path, text)
    try:
        validate()
    except Exception:
        if old is None:
            path.unlink()
        else:
            _write(path, old)
        raise


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".config.", suffix=".toml")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        raise McpConfigError(f"cannot write {path} ({exc.strerror}).") from None
