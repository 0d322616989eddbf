"""Workspace trust: which settings a project's `.swecli/config.toml` may set on its own, and which wait
until the user trusts that project (docs/security/trust.md).

A cloned repository, or a model that writes into the project, must not be able to widen what runs or
where the user's credentials go. Every setting has one rule here (`RULES`, looked up by the longest
dotted prefix of its key; a key with no rule needs trust):

- `free`: applies from an untrusted project too (context tuning, UI, timeouts);
- `narrow`: applies when it narrows what the trusted layers allow (plan mode, a read-only sandbox, a
  lower spending limit), is ignored when it widens it;
- `add`: a list an untrusted project may only add to (more hidden paths);
- `trust`: applies only once the project is trusted (provider, base URL, keys, model, hooks, MCP servers,
  writable paths, passed secrets).

A trust decision is remembered per user in `trusted.json` beside the user's config, keyed to the
project's path and a fingerprint of everything trust would let it set (`fingerprint`): a change to
any of it asks again. The user's own layers (the user config, the environment, the flags) are always
trusted. This module knows no other part of swecli: `swecli.config` applies the rules while it loads,
and `swecli.ui.trust` asks the question.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, Literal

from swecli.errors import SwecliError
from swecli.records import datarecord

Rule = Literal["free", "narrow", "add", "trust"]

RULES: dict[str, Rule] = {
    # Where the user's credentials go, and what they pay for.
    "provider": "trust",
    "base_url": "trust",
    "api_key": "trust",
    "model": "trust",
    "thinking": "trust",
    # What runs, and how freely.
    "mode": "narrow",
    "sandbox.mode": "narrow",
    "sandbox.network": "narrow",
    "sandbox.writable_paths": "trust",
    "sandbox.pass_env": "trust",
    "sandbox.inherit_env": "narrow",
    "sandbox.hidden_paths": "add",
    "hooks.pre_compact": "trust",
    "hooks.timeout": "free",
    "mcp.servers": "trust",
    "mcp.schema_budget": "free",
    "mcp.startup_timeout": "free",
    "mcp.repl_wait": "free",
    "mcp.tool_timeout": "free",
    # Spending limits: a project may lower them, not raise them.
    "max_iterations": "narrow",
    "max_tokens": "narrow",
    "subagents.enabled": "narrow",
    "subagents.max_iterations": "narrow",
    "subagents.max_tokens": "narrow",
    "subagents.parallel": "narrow",
    "subagents.report_tokens": "free",
    "memory.reflect_with_llm": "narrow",
    # Tuning that changes neither what runs nor where anything goes.
    "context_limit": "free",
    "request_timeout": "free",
    "request_deadline": "free",
    "max_retries": "free",
    "wait_notice": "free",
    "retry_base_delay": "free",
    "probe_context_window": "free",
    "context": "free",
    "tools": "free",
    "memory": "free",
    "skills": "free",
    "images": "free",
}
"""The one list of what an untrusted project may set; docs/security/trust.md shows it (a test keeps the
two and `Settings` in step)."""

ORDERS: dict[str, tuple[str, ...]] = {
    "mode": ("plan", "default", "auto"),
    "sandbox.mode": ("read-only", "workspace-write", "off"),
    "sandbox.inherit_env": ("none", "core", "all"),
}
"""Narrowest first, for `narrow` keys whose values are words; numbers and booleans compare as such."""

GROUPED = ("mcp.servers",)
"""Tables of named entries: an ignored key is reported as the entry (`mcp.servers.NAME`)."""

WHY: dict[str, str] = {
    "provider": "your requests, and the API key for it, go to this service",
    "base_url": "your requests and your API key would be sent to this address",
    "api_key": "a key from the project's file",
    "model": "the model your key pays for",
    "thinking": "reasoning your key pays for",
    "mode": "how freely changes are made",
    "sandbox.mode": "how commands are confined",
    "sandbox.network": "commands may use the network",
    "sandbox.writable_paths": "commands may write there",
    "sandbox.pass_env": "commands would see these secrets",
    "sandbox.inherit_env": "commands would see more of your environment",
    "hooks.pre_compact": "a shell command swecli runs itself",
    "mcp.servers": "a program swecli starts outside the sandbox, or a server it connects to",
}
"""What a setting that needs trust would do, for the trust question."""

SECRET_KEYS = ("api_key", "env", "headers")
"""Values never shown in full (a key in the file, an MCP server's environment and headers)."""


def rule_for(key: str) -> Rule:
    """The rule of a dotted key: the entry for its longest prefix; keys no entry covers need trust."""
    parts = key.split(".")
    for end in range(len(parts), 0, -1):
        rule = RULES.get(".".join(parts[:end]))
        if rule is not None:
            return rule
    return "trust"


def report_name(key: str) -> str:
    """How an ignored key is named to the user: `mcp.servers.NAME.command` is `mcp.servers.NAME`."""
    for group in GROUPED:
        if key.startswith(group + "."):
            return ".".join(key.split(".")[: group.count(".") + 2])
    return key


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted key -> value for every leaf of a TOML table."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def lookup(data: Mapping[str, Any], key: str) -> Any:
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _set(data: dict[str, Any], key: str, value: Any) -> None:
    *parents, last = key.split(".")
    for part in parents:
        data = data.setdefault(part, {})
    data[last] = value


def narrows(key: str, value: Any, base: Any) -> bool:
    """Whether `value` allows no more than `base` (what the trusted layers set) for a `narrow` key."""
    order = ORDERS.get(key)
    if order is not None:
        return value in order and base in order and order.index(value) <= order.index(base)
    if isinstance(value, bool) or isinstance(base, bool):
        return isinstance(value, bool) and isinstance(base, bool) and (value <= base)
    if isinstance(value, int | float) and isinstance(base, int | float):
        return value <= base
    return False


@datarecord
class Split:
    """An untrusted layer cut in two: what applies anyway, and what waits for trust."""

    applied: dict[str, Any] = field(default_factory=dict)
    ignored: dict[str, Any] = field(default_factory=dict)
    """Dotted leaf key -> the project's value."""

    @property
    def ignored_names(self) -> list[str]:
        return sorted({report_name(key) for key in self.ignored})


def split_untrusted(layer: Mapping[str, Any], base: Mapping[str, Any]) -> Split:
    """Apply the rules to an untrusted layer; `base` holds the values of the trusted layers below it
    (defaults included), against which `narrow` and `add` keys are judged."""
    split = Split()
    for key, value in flatten(layer).items():
        rule = rule_for(key)
        current = lookup(base, key)
        if rule == "free" or (rule == "narrow" and narrows(key, value, current)):
            _set(split.applied, key, copy.deepcopy(value))
        elif rule == "add" and isinstance(value, list) and isinstance(current, list):
            _set(split.applied, key, [*current, *(item for item in value if item not in current)])
        else:
            split.ignored[key] = value
    return split


def guarded(layer: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a project layer trust is about (every key whose rule is not `free`), as dotted keys.
    Its fingerprint does not move when the user's own config changes, nor for an edit of a free key."""
    return {key: value for key, value in flatten(layer).items() if rule_for(key) != "free"}


def fingerprint(settings: Mapping[str, Any], files: Mapping[str, bytes] | None = None) -> str:
    """sha256 over the guarded settings and the files trust also covers (agent definitions)."""
    digest = hashlib.sha256()
    digest.update(json.dumps(settings, sort_keys=True, default=str, ensure_ascii=True).encode())
    for name in sorted(files or {}):
        digest.update(b"\0" + name.encode() + b"\0" + hashlib.sha256((files or {})[name]).digest())
    return digest.hexdigest()


# --- the user's decisions --------------------------------------------------------------------------

STORE_VERSION = 1


class TrustStoreError(SwecliError):
    """trusted.json cannot be read or written; `str()` names the file and the fix."""


@datarecord(frozen=True)
class Decision:
    """The person's answer about one project's configuration, remembered per user."""

    root: str
    fingerprint: str
    trusted: bool
    """False: the user answered no (not asked again until the project's settings change)."""
    at: float
    names: tuple[str, ...] = ()
    """What the decision covered, as shown to the user (for `swecli trust --list`)."""


class TrustStore:
    """`trusted.json`: the user's answer per project path, with the fingerprint it was given for.

    Written whole to a temporary file and renamed (never half-written), 0600, under a lock so two
    sessions answering at once both keep their answer. A file that is not valid JSON trusts nothing and
    is never overwritten: the error names it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def get(self, root: Path) -> Decision | None:
        entry = self._read().get(project_key(root))
        return _decision(project_key(root), entry) if isinstance(entry, dict) else None

    def trusts(self, root: Path, fingerprint: str) -> bool:
        decision = self.get(root)
        return decision is not None and decision.trusted and decision.fingerprint == fingerprint

    def decisions(self) -> list[Decision]:
        return [d for key, entry in sorted(self._read().items())
                if isinstance(entry, dict) and (d := _decision(key, entry)) is not None]

    def record(self, root: Path, fingerprint: str, trusted: bool, names: list[str]) -> None:
        entry = {"fingerprint": fingerprint, "trusted": trusted, "at": round(time.time()), "names": names}
        with self._locked():
            projects = self._read(strict=True)
            projects[project_key(root)] = entry
            self._write(projects)

    def forget(self, root: Path) -> bool:
        with self._locked():
            projects = self._read(strict=True)
            if projects.pop(project_key(root), None) is None:
                return False
            self._write(projects)
            return True

    def _read(self, strict: bool = False) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            if strict:
                raise TrustStoreError(f"{self.path} cannot be read ({exc}); fix or delete it (it lists the "
                                      "projects you trust).") from None
            return {}
        projects = data.get("projects") if isinstance(data, dict) else None
        if not isinstance(projects, dict):
            if strict:
                raise TrustStoreError(f"{self.path} is not a swecli trust file; fix or delete it.")
            return {}
        return projects

    def _write(self, projects: dict[str, Any]) -> None:
        text = json.dumps({"version": STORE_VERSION, "projects": projects}, indent=1, sort_keys=True) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # only when trust is recorded, not on every start

        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".trusted.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock


def project_key(root: Path) -> str:
    """A project is its resolved path (a symlinked checkout is the same project)."""
    return str(root.resolve())


def _decision(key: str, entry: dict[str, Any]) -> Decision | None:
    fp = entry.get("fingerprint")
    if not isinstance(fp, str):
        return None
    names = entry.get("names")
    return Decision(key, fp, entry.get("trusted") is True, float(entry.get("at") or 0),
                    tuple(str(n) for n in names) if isinstance(names, list) else ())
