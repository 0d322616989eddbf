"""Sub-agent definitions: the built-in `explore` agent and user-defined ones in markdown files.

A definition is a markdown file whose name is the agent's name (Claude Code's format, so its agents
work unchanged):

    ---
    description: Reviews a diff for bugs and style problems   (required: when to use it)
    tools: read_file, grep, bash                               (optional: default, the read-only tools)
    model: inherit                                             (optional: a model name, or inherit)
    ---
    The system prompt of the agent (its instructions).

Folders, earlier ones winning a name: `.swecli/agents/`, `.claude/agents/` (project), then
`~/.config/swecli/agents/` (honours XDG_CONFIG_HOME) and `~/.claude/agents/` (user). A bad file (no
front matter, no description, a name taken earlier) is skipped with one warning naming it.

A project's agent that brings something of its own (a tool beyond the read-only ones, or a model) is
part of what the user trusts with the project (docs/security/trust.md): until then it is left out
(`AgentCatalog.untrusted`), and the start-up line names it. One without them is instructions only,
like OPENCLI.md, and loads regardless.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

from swecli.errors import SwecliError
from swecli.lazy import regex
from swecli.records import datarecord

NAME = regex(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
DEFAULT_AGENT = "explore"

EXPLORE_PROMPT = """You are a sub-agent of swecli, a coding agent. The main agent handed you one \
self-contained job; you have a fresh context and only read-only tools. Do the job, then answer with \
one report for the main agent: it sees only that report, not your tool calls.

- Search broadly first (grep, list_files), then read only what you need (read_file with offset/limit).
- Be thorough but stop as soon as the job is answered.
- Report facts with exact paths and line numbers (`src/app.py:42`), quote short snippets when they \
matter, and say what you could not find or verify. No preamble; keep it short."""


@datarecord(frozen=True)
class AgentDefinition:
    """A sub-agent: its instructions, its tools and its model."""

    name: str
    description: str
    prompt: str
    """The agent's own instructions (the body of its file); the system prompt of the child."""
    tools: tuple[str, ...] | None = None
    """Tool names it may use; None for the default read-only set."""
    model: str = ""
    """A model name, or "" to use the parent's model (`inherit` in the file)."""
    path: Path | None = None
    """The file it came from (None for the built-in)."""
    source: str = "built-in"
    project: bool = False
    """Found in the project's folders (so written by whoever wrote the project, not by the user)."""

    def brings(self) -> list[str]:
        """What this agent adds beyond the read-only default: writing (or unknown) tools, its own model.
        Empty for an agent that only instructs."""
        extra = []
        read_only = read_only_tools()
        tools = [name for name in self.tools or () if TOOL_ALIASES.get(name, name) not in read_only]
        if tools:
            extra.append("tools " + ", ".join(tools))
        if self.model:
            extra.append(f"model {self.model}")
        return extra


BUILTIN = AgentDefinition(
    name=DEFAULT_AGENT,
    description="Read-only codebase exploration; reports files, lines and findings.",
    prompt=EXPLORE_PROMPT,
)


TOOL_ALIASES = {"Read": "read_file", "Grep": "grep", "Glob": "list_files", "LS": "list_files", "Bash": "bash",
                "Edit": "edit_file", "MultiEdit": "edit_file", "Write": "write_file"}
"""Claude Code's tool names in an agent's `tools:` line, so its agent files work unchanged."""


def read_only_tools() -> frozenset[str]:
    """The built-in tools that change nothing (a sub-agent's default set)."""
    from swecli.repomap.tool import REPO_MAP
    from swecli.tools.builtin import default_tools

    return frozenset(tool.name for tool in [*default_tools(), REPO_MAP] if not tool.mutating)


@datarecord
class AgentCatalog:
    """The sub-agents the `task` tool offers, and what was left out and why."""

    agents: list[AgentDefinition] = field(default_factory=lambda: [BUILTIN])
    warnings: list[str] = field(default_factory=list)
    untrusted: list[AgentDefinition] = field(default_factory=list)
    """The project's agents that bring tools or a model, left out because the project is not trusted."""

    def get(self, name: str) -> AgentDefinition | None:
        return next((a for a in self.agents if a.name == name.strip()), None)

    def names(self) -> list[str]:
        return [a.name for a in self.agents]


class DefinitionError(SwecliError):
    pass


PROJECT_FOLDERS = (".swecli/agents", ".claude/agents")


def agent_folders(root: Path, env: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    from swecli.config import user_config_path

    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    return [
        *((label, root / label) for label in PROJECT_FOLDERS),
        ("~/.config/swecli/agents", user_config_path(dict(env)).parent / "agents"),
        ("~/.claude/agents", home / ".claude" / "agents"),
    ]


def load_agents(root: Path, env: Mapping[str, str] | None = None, trusted: bool = False) -> AgentCatalog:
    """The built-in agent, then every valid definition file, in folder precedence order. Unless the
    project is `trusted`, its agents that bring tools or a model go to `untrusted` instead (and take no
    name from an agent of the user's)."""
    from swecli.frontmatter import load_named

    files = [(path, label) for label, folder in agent_folders(root, env)
             for path in (sorted(folder.glob("*.md")) if folder.is_dir() else [])]
    held: list[AgentDefinition] = []
    if not trusted:
        files, held = _hold_untrusted(files)
    agents, warnings = load_named(files, parse_agent, "agent", known=[BUILTIN])
    return AgentCatalog(agents, warnings, held)


def _hold_untrusted(files: list[tuple[Path, str]]) -> tuple[list[tuple[Path, str]], list[AgentDefinition]]:
    """(the files to load, the project's agents held back until trust): one that does not parse stays in,
    so that loading reports it."""
    kept, held = [], []
    for path, label in files:
        try:
            agent = parse_agent(path, label)
        except SwecliError:
            kept.append((path, label))
            continue
        if agent.project and agent.brings():
            held.append(agent)
        else:
            kept.append((path, label))
    return kept, held


def parse_agent(path: Path, source: str) -> AgentDefinition:
    from swecli.frontmatter import read_front_matter

    meta, body = read_front_matter(path)
    for key in ("name", "model"):  # str() of a YAML alias bomb (a list of lists of ...) would never end
        if meta.get(key) is not None and not isinstance(meta[key], str):
            raise DefinitionError(f"`{key}` must be text")
    name = str(meta.get("name") or path.stem).strip()
    if not NAME.match(name):
        raise DefinitionError(f"the name {name!r} must be letters, digits, - or _ (at most 64 characters)")
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        raise DefinitionError("its front matter has no `description` (say when the agent should be used)")
    model = str(meta.get("model") or "").strip()
    return AgentDefinition(name=name, description=" ".join(description.split()), prompt=body.strip(),
                           tools=_tools(meta.get("tools")), model="" if model == "inherit" else model, path=path,
                           source=source, project=source in PROJECT_FOLDERS)


def _tools(raw: Any) -> tuple[str, ...] | None:
    """`tools: read_file, grep` or a YAML list; absent or empty means the default read-only set."""
    if raw is None or raw == "" or raw == []:
        return None
    items = raw.split(",") if isinstance(raw, str) else raw if isinstance(raw, list) else None
    if items is None or not all(isinstance(item, str) for item in items):
        raise DefinitionError("`tools` must be a comma-separated list of tool names")
    return tuple(item.strip() for item in items if item.strip())
