"""Layered, validated configuration.

Precedence, lowest first: defaults < user file (`$XDG_CONFIG_HOME/swecli/config.toml`) < project
file (`.swecli/config.toml`) < the user's private settings for this project (`local.toml` beside the user
file, under `[projects."/path/to/project"]`: what `swecli mcp add` writes by default, tokens included,
kept out of the repository) < environment (`SWECLI_<KEY>`, nested with `__`, plus the conventional
provider variables) < CLI flags. Every setting has one name: the config key, `SWECLI_<KEY>` and
(where it makes sense) `--key`.

The project's file is not the user's: until the user trusts the project, the settings in it that
would widen what runs or where credentials go are ignored (`swecli.trust` has the rules; the caller
decides, and says so, with `trust_project`). The user's file, the environment and the flags always
apply.

No `from __future__ import annotations` here: pydantic would evaluate each field's annotation from its text
(a `compile` per field, ~80 of them), ~5.6 M instructions on every start's path (10% of this module's import).
"""

import difflib
import os
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from swecli.errors import SwecliError
from swecli.lazy import regex
from swecli.models.presets import DEFAULT_CONTEXT_WINDOW, PRESETS, known_context_window
from swecli.records import datarecord
from swecli.trust import Split, guarded, lookup, split_untrusted

Mode = Literal["default", "auto", "plan"]
SERVER_NAME = regex(r"[A-Za-z0-9_-]+")


class Section(BaseModel):
    """A settings table. Its defaults are made by lambdas (`default_factory=lambda: []`), not by a class or
    `list` itself: pydantic reads each default factory's signature to see whether it takes the data, and
    for a class or a builtin that is `inspect`'s parser of text signatures (tokenize's patterns compiled
    on the way): ~17 M instructions on every start's path, 1.4% of `-p`'s way to its first request."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class HookConfig(Section):
    pre_compact: str = ""
    """Shell command run before each compaction; gets JSON on stdin, may answer JSON."""
    timeout: float = 30.0


WARNING_MARGIN = 0.1
"""The background summary starts this far (as a fraction of the window) below the compaction threshold, at
the latest (`swecli.context.runway` may start it earlier)."""


class ContextConfig(Section):
    threshold: float = Field(0.8, gt=0.1, le=1.0)
    """Fraction of the window at which auto-compaction fires (a ready background summary is applied then)."""
    warning_threshold: float | None = Field(None, gt=0.0, le=1.0)
    """Fraction of the window at which the older history starts being summarized in the background, at the
    latest (earlier when the growth per step and the summary's latency call for it). Unset: 0.1 below
    `threshold` (0.7 by default)."""
    background_compaction: bool = True
    """Summarize ahead while the loop works, and at the hard limit make room without a model call rather than
    wait for the summary: compaction then does not stop the loop."""
    strategy: Literal["summarize", "truncate", "importance"] = "summarize"
    keep_recent_tokens: int | None = Field(None, ge=0)
    """Recent history kept verbatim by compaction (a token budget, not a message count). Unset: a quarter
    of the window, at least 2,000 and at most 40,000 tokens (decay then keeps at most 12,000 verbatim)."""
    auto_compact: bool = True
    offload: bool = True
    offload_threshold_tokens: int = Field(8_000, ge=200)
    offload_preview_lines: int = Field(40, ge=4)
    decay: bool = True
    decay_min_savings_tokens: int = Field(20_000, ge=0)
    recitation: bool = True
    failure_evidence: bool = True
    playbook: bool = True
    just_in_time: bool = True
    just_in_time_tokens: int = Field(4_000, ge=0)
    """Budget for files and symbols a prompt names, attached before the first model call."""
    just_in_time_seconds: float = Field(2.0, gt=0)
    """Longest the first request waits for just-in-time retrieval (it says so when it stops early)."""
    repo_map_tokens: int = Field(0, ge=0)
    """Budget for a ranked repository map in the memory block (0: off); fixed for the session."""

    @model_validator(mode="after")
    def _levels_in_order(self) -> Self:
        warning = self.warning_threshold
        if self.background_compaction and warning is not None and warning >= self.threshold:
            raise ValueError(f"warning_threshold ({warning:g}) must be below threshold ({self.threshold:g}); "
                             "lower it, or set background_compaction = false")
        return self

    @property
    def warning_level(self) -> float:
        """`warning_threshold`, or its default relative to `threshold`."""
        if self.warning_threshold is not None:
            return self.warning_threshold
        return max(0.05, round(self.threshold - WARNING_MARGIN, 4))


class ToolsConfig(Section):
    bash_timeout: float = Field(120.0, gt=0)
    max_output_chars: int = Field(30_000, ge=1_000)


class SandboxConfig(Section):
    mode: Literal["workspace-write", "read-only", "off"] = "workspace-write"
    """How bash commands are confined (bubblewrap, Linux): `workspace-write` lets them write only to the
    project, the writable paths and a private /tmp; `read-only` writes nowhere; `off` runs them
    unconfined. Plan mode always uses read-only. Applies in default and auto mode alike."""
    writable_paths: list[str] = Field(default_factory=lambda: [])
    """More directories commands may write to (`~/.cache`, `../shared-build`); `~` is the home
    directory, relative paths are under the project."""
    network: bool = False
    """Let sandboxed commands use the network (package installs, `git push`, API calls)."""
    hidden_paths: list[str] = Field(default_factory=lambda: [])
    """More files or directories sandboxed commands must not see, beyond the built-in credentials list
    (`~/.ssh`, `~/.aws`, `~/.config/gcloud`, `~/.gnupg`, `~/.docker`, `~/.kube`, `~/.netrc`, ...)."""
    pass_env: list[str] = Field(default_factory=lambda: [])
    """Environment variables commands get whatever they hold, by name or shell pattern (`GITHUB_TOKEN`
    for `gh`, `NPM_*`, `MYAPP_*`), beyond the allowlist `inherit_env` gives them."""
    inherit_env: Literal["core", "all", "none"] = "core"
    """Which environment variables commands get, sandboxed or not (as Codex's shell_environment_policy.inherit):
    `core` an allowlist (HOME, PATH, USER, SHELL, LANG/LC_*, TERM, TMPDIR, and the toolchain variables:
    VIRTUAL_ENV, CONDA_*, PYTHON*, JAVA_HOME, GOPATH, CARGO_HOME, ...); `all` everything; `none` nothing
    but `pass_env`. Under `core` and `all`, names that say secret (KEY, TOKEN, SECRET, PASSWORD, AUTH, ...)
    and values that look like one (a URL with a password, a JWT, a private key) are left out."""


class MemoryConfig(Section):
    memory_budget_tokens: int = Field(4_000, ge=0)
    """OPENCLI.md / AGENTS.md / CLAUDE.md in the system prompt."""
    notes_budget_tokens: int = Field(1_500, ge=0)
    playbook_budget_tokens: int = Field(1_000, ge=0)
    session_notes: bool = True
    reflect_with_llm: bool = False


class SkillsConfig(Section):
    enabled: bool = True
    """Discover skills (folders with a SKILL.md), list them in the system prompt, offer the `skill` tool
    and a `/skill-name` command for each."""
    catalog_tokens: int = Field(2_000, ge=0)
    """Budget for the skills' `name: description` lines in the system prompt; skills past it are left out
    of the list (a note says how many; the `skill` tool still loads them)."""


class SubagentsConfig(Section):
    enabled: bool = True
    """Offer the `task` tool: the model hands a self-contained job to a sub-agent with a fresh context."""
    max_iterations: int = Field(30, ge=1)
    """Model calls one sub-agent may make before it must report."""
    max_tokens: int = Field(400_000, ge=1_000)
    """Tokens (input + output, all its calls) one sub-agent may spend before it must report."""
    report_tokens: int = Field(2_000, ge=100)
    """The report a sub-agent hands back is cut to this (its whole transcript is in the session folder)."""
    parallel: int = Field(3, ge=1, le=16)
    """How many `task` calls of one reply may run at the same time."""


class ImagesConfig(Section):
    accept: Literal["auto", "yes", "no"] = "auto"
    """Whether the model takes images: auto decides from the model's name (a model known not to gets a
    sentence instead of the image); yes or no overrides that."""
    max_edge: int = Field(1568, ge=64, le=8192)
    """Images are scaled down to this many pixels on their long edge before they are sent."""
    keep_turns: int = Field(2, ge=1)
    """Images older than this many user turns are replaced by a one-line stand-in (with their path) at the
    next compaction or decay batch, or on their own once they add up to `batch_min_tokens`."""
    batch_min_tokens: int = Field(3_000, ge=0)
    """Old images are replaced on their own (a prefix rewrite) only when they cost at least this much."""


class McpServerConfig(Section):
    """One MCP server (`[mcp.servers.NAME]`): a command to run (stdio) or a URL (streamable HTTP)."""

    command: str = ""
    """The executable that runs a stdio server (looked up on PATH)."""
    args: list[str] = Field(default_factory=lambda: [])
    """Its arguments."""
    env: dict[str, str] = Field(default_factory=lambda: {})
    """Extra environment variables for the command (merged over PATH, HOME, USER, SHELL, TERM, LOGNAME)."""
    url: str = ""
    """The endpoint of a streamable-HTTP server (instead of `command`)."""
    headers: dict[str, str] = Field(default_factory=lambda: {})
    """HTTP headers sent to `url` (an Authorization token, for instance)."""
    enabled: bool = True
    """false: configured but not started (`/mcp enable NAME` starts it for one session)."""
    always_load: bool = False
    """true: the server's tools are always in the tools list, never deferred behind tool_search."""

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        if bool(self.command) == bool(self.url):
            raise ValueError("set either command (a stdio server) or url (an HTTP server), not both or neither")
        if self.url and not self.url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        return self


class McpConfig(Section):
    servers: dict[str, McpServerConfig] = Field(default_factory=lambda: {})
    """The MCP servers, one `[mcp.servers.NAME]` table each."""
    schema_budget: float = Field(0.1, ge=0)
    """When the MCP tool schemas together exceed this, they are deferred behind one `tool_search` tool:
    a fraction of the context window (0.1 = 10%), or a number of tokens when above 1."""
    startup_timeout: float = Field(30.0, gt=0)
    """Seconds a server may take to start and list its tools before it counts as failed; `-p` waits this long
    for servers still starting (Claude Code's `MCP_TIMEOUT`), the REPL only a few seconds."""
    tool_timeout: float = Field(300.0, gt=0)
    """Seconds one MCP tool call may take before it is abandoned (the model gets an error)."""
    repl_wait: float = Field(5.0, ge=0)
    """Seconds a task typed in the REPL waits for servers still starting before it begins without their
    tools (they join between requests once ready); raise it when a slow server's tools must be there from
    the first request. `-p` waits up to `startup_timeout` instead."""

    @field_validator("servers")
    @classmethod
    def _names(cls, servers: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in servers:
            if not SERVER_NAME.fullmatch(name):
                raise ValueError(f"server name {name!r} may use only letters, digits, '_' and '-'")
        return servers

    def budget_tokens(self, window: int) -> int:
        return int(self.schema_budget) if self.schema_budget > 1 else int(self.schema_budget * window)


@datarecord(frozen=True)
class ServerWindow:
    """The context window a server reported for one model at one base URL (see `swecli.llm.window`)."""

    tokens: int
    source: str
    """Where it came from, for /context and the log: "llama.cpp /props", "vLLM /v1/models max_model_len"."""
    base_url: str
    model: str
    tools: bool | None = None
    """Whether the server's chat template renders tool schemas into the prompt (llama.cpp `/props`
    `chat_template_caps.supports_tools`); None when the server does not say."""
    learnt: bool = False
    """Learnt from the server's context-length error (cached for the next start), not reported."""


class Settings(Section):
    provider: str = ""
    model: str = ""
    base_url: str = ""
    api_key: str = Field("", repr=False)
    context_limit: int | None = Field(None, ge=1024)
    mode: Mode = "default"
    max_iterations: int = Field(200, ge=1)
    max_tokens: int = Field(8_192, ge=16)
    """Output tokens requested per response, and the room every request leaves for the reply (at most a
    quarter of the window; shrunk for a request whose prompt would otherwise not fit with it)."""
    request_timeout: float = Field(600.0, gt=0)
    """Longest silence accepted from the server, in seconds. Long, because a local server says nothing
    while it processes a large prompt; swecli shows the wait meanwhile."""
    request_deadline: float = Field(1200.0, gt=0)
    """Give up on a model call whose answer has not begun after this many seconds, retries included."""
    max_retries: int = Field(5, ge=0)
    wait_notice: float = Field(2.0, ge=0)
    """Seconds swecli waits in silence before it says what it is waiting for: a local server slow to list the
    models it serves, or input piped to `-p` that has not ended. 0 says it at once."""
    retry_base_delay: float = Field(1.0, ge=0)
    """Seconds before the first retry of a failed model call; each further retry waits twice as long (at
    most 30 s), half of it random. A server's own `Retry-After` wins. Lower it for a local server that
    recovers at once (the tests set it small: they run every fault through a real process)."""
    thinking: str = "off"
    """Extended thinking / reasoning effort: off, on, low, medium, high, or a token budget (>= 1024).
    Anthropic gets a thinking budget, OpenAI reasoning models a `reasoning_effort` (`/thinking` in
    the REPL changes it for the session)."""
    probe_context_window: bool = True
    """When `context_limit` is not set, ask the server for the window it runs (llama.cpp, vLLM, Ollama,
    LM Studio, OpenRouter); cached per base URL and model under the user's cache directory."""
    context: ContextConfig = Field(default_factory=lambda: ContextConfig())
    tools: ToolsConfig = Field(default_factory=lambda: ToolsConfig())
    memory: MemoryConfig = Field(default_factory=lambda: MemoryConfig())
    hooks: HookConfig = Field(default_factory=lambda: HookConfig())
    mcp: McpConfig = Field(default_factory=lambda: McpConfig())
    skills: SkillsConfig = Field(default_factory=lambda: SkillsConfig())
    subagents: SubagentsConfig = Field(default_factory=lambda: SubagentsConfig())
    images: ImagesConfig = Field(default_factory=lambda: ImagesConfig())
    sandbox: SandboxConfig = Field(default_factory=lambda: SandboxConfig())

    _server_window: ServerWindow | None = PrivateAttr(None)
    _project_trusted: bool = PrivateAttr(False)
    _ignored_project_settings: tuple[str, ...] = PrivateAttr(())

    def with_project_trust(self, trusted: bool, ignored: tuple[str, ...] = ()) -> Self:
        """A copy that records whether the project is trusted (its agents that bring tools load only
        then) and which of its settings were ignored for want of trust."""
        copy = self.model_copy()
        copy._project_trusted = trusted
        copy._ignored_project_settings = ignored
        return copy

    @property
    def project_trusted(self) -> bool:
        """Whether the user trusts the project (`swecli.trust`); not a setting any file can make true."""
        return self._project_trusted

    @property
    def ignored_project_settings(self) -> tuple[str, ...]:
        """The project's settings left out because the project is not trusted (dotted keys)."""
        return self._ignored_project_settings

    def with_server_window(self, window: ServerWindow | None) -> Self:
        """A copy that plans with the window the server reported (used while model and base URL match)."""
        copy = self.model_copy()
        copy._server_window = window
        return copy

    @property
    def server_window(self) -> ServerWindow | None:
        window = self._server_window
        if window is None or window.model != self.model or window.base_url != self.base_url:
            return None  # reported for another model (after /model) or server
        return window

    @field_validator("thinking", mode="before")
    @classmethod
    def _known_thinking(cls, value: object) -> str:
        from swecli.models.thinking import Thinking

        Thinking.parse(value if isinstance(value, (str, int)) else str(value))  # one sentence if invalid
        return str(value).strip().lower()

    @property
    def context_window(self) -> int:
        """The window to plan for: the user's setting, else the server's, else the known-models table."""
        if self.context_limit:
            return self.context_limit
        server = self.server_window
        if server is not None:
            return server.tokens
        return known_context_window(self.model) or DEFAULT_CONTEXT_WINDOW

    @property
    def window_source(self) -> str:
        """Where `context_window` came from, in words (for /context and the log)."""
        if self.context_limit:
            return "user setting (context_limit)"
        server = self.server_window
        if server is not None:
            return f"server ({server.source})"
        if known_context_window(self.model) is not None:
            return "known-models table"
        return "default for unknown models"

    @property
    def accepts_images(self) -> bool | None:
        """True/False when known (from `images.accept`, else the model's name), None when unknown."""
        if self.images.accept != "auto":
            return self.images.accept == "yes"
        from swecli.models.vision import accepts_images

        return accepts_images(self.model)


class ConfigError(SwecliError):
    """One clear sentence naming the file, the key and the fix."""


def user_config_path(env: dict[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/swecli/config.toml` (default `~/.config/...`). A relative `$XDG_CONFIG_HOME` or `$HOME` is
    not used (the XDG spec says to ignore a relative one): it would name a place in the project, read as the user's
    own, trusted settings (and its trust store); the account's home directory stands in for a relative `$HOME`."""
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(base):
        home = env.get("HOME", "")
        if not os.path.isabs(home):
            import pwd

            home = pwd.getpwuid(os.getuid()).pw_dir
        base = os.path.join(home, ".config")
    return Path(base) / "swecli" / "config.toml"


def project_config_path(root: Path) -> Path:
    return root / ".swecli" / "config.toml"


def local_config_path(env: dict[str, str] | None = None) -> Path:
    """The user's private settings per project (`swecli mcp add --scope local`, the default), beside the
    user's config: never in the project, so a token in them is never committed."""
    return user_config_path(env).parent / "local.toml"


def project_key(root: Path) -> str:
    """How `local.toml` names a project: its absolute path, symlinks resolved."""
    return str(Path(root).resolve())


def local_layer(root: Path, env: dict[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    """(where, settings) of the user's private settings for the project at `root`. The user wrote them
    (in their own config directory), so they are trusted like the user's file; they apply after the
    project's file, as Claude Code's local scope does."""
    path = local_config_path(env)
    data = _read_toml(path)
    key = project_key(root)
    where = f'{path} [projects."{key}"]'
    extra = [k for k in data if k != "projects"]
    if extra:
        raise ConfigError(f"{path}: unknown key '{extra[0]}'; this file holds only [projects.\"/path/to/project\"] "
                          "tables (swecli mcp add --scope local writes them); move it to "
                          f"{user_config_path(env)}.")
    projects = data.get("projects", {})
    layer = projects.get(key, {}) if isinstance(projects, dict) else None
    if not isinstance(layer, dict):
        raise ConfigError(f"{where if isinstance(projects, dict) else path}: expected a table of settings.")
    _check_keys(layer, Settings, where)
    return where, layer


def trust_store_path(env: dict[str, str] | None = None) -> Path:
    """The user's trust decisions (`swecli.trust.TrustStore`), beside the user's config."""
    return user_config_path(env).parent / "trusted.json"


@datarecord(frozen=True)
class ConfigLayer:
    """One configuration file, read and checked for unknown keys."""

    where: str
    """The file, as messages name it."""
    data: dict[str, Any]
    trusted: bool
    """The user's own (applies whole) or the project's (what needs trust waits for it)."""


def config_layers(root: Path, env: dict[str, str]) -> list[ConfigLayer]:
    """The configuration files, lowest precedence first. A per-user layer for one project (kept in the
    user's config directory, e.g. `swecli mcp add --scope local`) belongs after the project's file,
    with `trusted=True`: the user wrote it."""
    layers = []
    for path, trusted in ((user_config_path(env), True), (project_config_path(root), False)):
        data = _read_toml(path)
        _check_keys(data, Settings, str(path))
        layers.append(ConfigLayer(str(path), data, trusted))
    where, local = local_layer(root, env)
    layers.append(ConfigLayer(where, local, True))
    return layers


@datarecord(frozen=True)
class UntrustedLayer:
    """What trust would change in one untrusted layer."""

    where: str
    ignored: dict[str, Any]
    """Dotted key -> value: what an untrusted load leaves out."""
    guarded: dict[str, Any]
    """Dotted key -> value of every key trust is about (`swecli.trust.guarded`): the fingerprint's input."""
    replaces: frozenset[str] = frozenset()
    """Ignored keys (as `swecli.trust.report_name` names them) the user's own files set too: trusting the
    project replaces the user's value (an MCP server of the same name keeps the user's headers, say)."""


def untrusted_layers(root: Path, env: dict[str, str] | None = None) -> list[UntrustedLayer]:
    """The untrusted layers that set anything, with what would be ignored without trust."""
    env = dict(os.environ) if env is None else env
    layers = config_layers(root, env)
    _, _, splits = _merge_layers(layers, trust_project=False)
    users: dict[str, Any] = {}
    for layer in layers:
        if layer.trusted:
            users = _overlay(users, layer.data)
    return [UntrustedLayer(layer.where, split.ignored, guarded(layer.data),
                           frozenset(name for name in split.ignored_names if lookup(users, name) is not None))
            for layer, split in zip((la for la in layers if not la.trusted), splits, strict=True)
            if layer.data]


def load_settings(
    root: Path, flags: dict[str, Any] | None = None, env: dict[str, str] | None = None,
    resolve_provider: bool = True, trust_project: bool = False,
) -> Settings:
    """The layered settings. `resolve_provider=False` skips the provider's URL and key checks (for
    commands that never call a model, like `swecli mcp list`). `trust_project`: the caller's decision
    (`swecli.ui.trust`) to apply what the project's file sets that needs trust; without it, those
    settings are left out and named by `Settings.ignored_project_settings`."""
    env = dict(os.environ) if env is None else env
    layers = config_layers(root, env)
    merged, sources, splits = _merge_layers(layers, trust_project)
    ignored = tuple(sorted({name for split in splits for name in split.ignored_names}))
    user_layers = _user_layers(env, flags)
    if ignored:  # a mistake in an ignored setting is still reported, not silently kept for later
        whole, whole_sources, _ = _merge_layers(layers, trust_project=True)
        _validate(*_with_user_layers(whole, whole_sources, user_layers))
    settings = _validate(*_with_user_layers(merged, sources, user_layers))
    settings = settings.with_project_trust(trust_project, ignored)
    return _resolve_provider(settings, env, sources) if resolve_provider else settings


def _merge_layers(layers: list[ConfigLayer], trust_project: bool,
                  ) -> tuple[dict[str, Any], dict[str, str], list[Split]]:
    """The files merged in order; an untrusted layer (unless `trust_project`) only with what it may set
    on its own, judged against the defaults and the layers below it. Returns one Split per untrusted layer."""
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    splits = []
    for layer in layers:
        data = layer.data
        if not layer.trusted:
            split = Split(applied=data) if trust_project else split_untrusted(data, _over_defaults(merged))
            splits.append(split)
            data = split.applied
        _merge(merged, data, sources, layer.where)
    return merged, sources, splits


def _over_defaults(merged: dict[str, Any]) -> dict[str, Any]:
    """The defaults with the layers merged so far on top (the values an untrusted layer is judged by)."""
    return _overlay(Settings().model_dump(), merged)


def _overlay(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        below = out.get(key)
        out[key] = _overlay(below, value) if isinstance(value, dict) and isinstance(below, dict) else value
    return out


def _user_layers(env: dict[str, str], flags: dict[str, Any] | None) -> list[tuple[dict[str, Any], str]]:
    """The environment and the flags: the user's, always applied, over every file."""
    return [(_env_layer(env), "environment"), ({k: v for k, v in (flags or {}).items() if v is not None},
                                               "command line")]


def _with_user_layers(merged: dict[str, Any], sources: dict[str, str],
                      layers: list[tuple[dict[str, Any], str]]) -> tuple[dict[str, Any], dict[str, str]]:
    for layer, where in layers:
        _merge(merged, layer, sources, where)
    return merged, sources


MAX_CONFIG_BYTES = 4 << 20


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    import tomllib  # only for a file to read (~8 M instructions: a start without any config file skips it)

    from swecli.frontmatter import read_regular

    try:
        # Without blocking and bounded: a project's `.swecli/config.toml` is the repository's, and was read
        # whole, whatever it led to (a link to a sparse file of terabytes: a MemoryError traceback at start).
        data = read_regular(path, MAX_CONFIG_BYTES) or b""
    except OSError as exc:
        raise ConfigError(f"cannot read {path} ({exc.strerror or exc}).") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path} is over {MAX_CONFIG_BYTES >> 20} MB; a settings file is a few lines. Check "
                          "what it is (a link to something else?).")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text; save it as UTF-8.") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix the syntax at that position.") from None


REMOVED_KEYS = {
    "context.reserve_output_tokens": "it was merged into max_tokens (the reply reserve is the max_tokens every "
                                     "request sends); remove it and set max_tokens instead",
}
"""Keys older versions accepted, with what to do instead."""


def _check_keys(data: dict[str, Any], model: type[BaseModel], where: str, prefix: str = "") -> None:
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None and f"{prefix}{key}" in REMOVED_KEYS:
            raise ConfigError(f"{where}: '{prefix}{key}' is no longer a setting: {REMOVED_KEYS[prefix + key]}.")
        if field is None:
            known = ", ".join(sorted(model.model_fields))
            raise ConfigError(f"{where}: unknown key '{prefix}{key}'{_did_you_mean(key, model.model_fields, prefix)}; "
                              f"remove it or use one of: {known}.")
        sub = field.annotation
        if isinstance(value, dict) and isinstance(sub, type) and issubclass(sub, BaseModel):
            _check_keys(value, sub, where, f"{prefix}{key}.")
        elif isinstance(value, dict) and (item := _dict_of_sections(sub)) is not None:
            for name, entry in value.items():  # [mcp.servers.NAME] tables
                if isinstance(entry, dict):
                    _check_keys(entry, item, where, f"{prefix}{key}.{name}.")


def _dict_of_sections(annotation: Any) -> type[BaseModel] | None:
    """The value model of a `dict[str, Section]` field, else None."""
    from typing import get_args, get_origin

    args = get_args(annotation)
    if get_origin(annotation) is dict and len(args) == 2 and isinstance(args[1], type) \
            and issubclass(args[1], BaseModel):
        return args[1]
    return None


def _did_you_mean(word: str, choices: Any, prefix: str = "") -> str:
    close = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.6)
    # Two swapped letters (`modle`) are the commonest typo; difflib alone would rank `mode` first.
    close.sort(key=lambda c: sorted(c) != sorted(word))
    return f" (did you mean '{prefix}{close[0]}'?)" if close else ""


def _source_of(key: str, sources: dict[str, str]) -> str:
    """Where a setting came from, for a message: the file, the variable or the flag."""
    where = sources.get(key, "")
    if where == "environment":
        return f"SWECLI_{key.upper().replace('.', '__')}"
    if where == "command line":
        return f"--{key.replace('_', '-')}"
    return where


def _merge(into: dict[str, Any], layer: dict[str, Any], sources: dict[str, str], where: str, prefix: str = "") -> None:
    for key, value in layer.items():
        if isinstance(value, dict):
            _merge(into.setdefault(key, {}), value, sources, where, f"{prefix}{key}.")
        else:
            into[key] = value
            sources[f"{prefix}{key}"] = where


def _env_layer(env: dict[str, str]) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    for name, value in env.items():
        if not name.startswith("SWECLI_") or not value:
            continue
        path = name[len("SWECLI_"):].lower().split("__")
        node: Any = Settings
        target = layer
        for i, part in enumerate(path):
            field = node.model_fields.get(part) if isinstance(node, type) and issubclass(node, BaseModel) else None
            if field is None:
                break  # unknown SWECLI_* variables belong to someone else (SWECLI_HOME...): ignore
            if i == len(path) - 1:
                target[part] = value
            else:
                node = field.annotation
                target = target.setdefault(part, {})
    return layer


def _validate(merged: dict[str, Any], sources: dict[str, str]) -> Settings:
    try:
        return Settings.model_validate(merged)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        # A whole-table error (an MCP server with neither command nor url) names the file of one of its keys.
        where = sources.get(key) or next((v for k, v in sources.items() if k.startswith(key + ".")), "configuration")
        if err["type"] == "value_error" and key in Settings.model_fields and isinstance(merged.get(key), dict):
            # A section's own check across its keys: its message already names them and the fix.
            raise ConfigError(f"{where}: in [{key}], {err['ctx']['error']}.") from None
        env_name = "SWECLI_" + key.upper().replace(".", "__")
        section = Settings.model_fields.get(key)
        if err["type"] == "model_type" and section is not None and isinstance(section.annotation, type):
            keys = ", ".join(section.annotation.model_fields)
            raise ConfigError(f"{where}: '{key}' is a section, not a value; write its settings under a [{key}] "
                              f"table (keys: {keys}).") from None
        msg = err["msg"].removeprefix("Value error, ")
        no_env = (key + ".").startswith("mcp.servers.")  # servers are tables: no variable sets one
        hint = f"config key '{key}'" + ("" if no_env else f", environment variable {env_name}")
        raise ConfigError(f"{where}: '{key}' is invalid ({msg[:1].lower() + msg[1:]}); set it to a valid value "
                          f"({hint}).") from None


def _resolve_provider(settings: Settings, env: dict[str, str], sources: dict[str, str]) -> Settings:
    """Fill base_url and api_key from the preset and the conventional environment variables."""
    if not settings.provider:
        return settings  # auto-detected later (llm.discovery), which may probe local ports
    preset = PRESETS.get(settings.provider)
    if preset is None:
        where = _source_of("provider", sources) or "configuration"
        raise ConfigError(
            f"{where}: unknown provider '{settings.provider}'{_did_you_mean(settings.provider, PRESETS)}; use one "
            f"of: {', '.join(PRESETS)} (or 'openai-compatible' with base_url)."
        )
    updates: dict[str, Any] = {}
    if not settings.base_url:
        conventional = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}.get(preset.name)
        updates["base_url"] = (conventional and env.get(conventional)) or preset.base_url
    if not settings.api_key and preset.key_env:
        updates["api_key"] = env.get(preset.key_env, "")
    if not settings.model and updates.get("base_url", settings.base_url).rstrip("/") == preset.base_url:
        # At another URL (a local server behind OPENAI_BASE_URL) the server names the model: llm.discovery.
        updates["model"] = preset.default_model
    settings = settings.model_copy(update=updates)
    if not settings.base_url:
        raise ConfigError(
            f"provider '{preset.name}' needs a base URL; set base_url in .swecli/config.toml, "
            f"SWECLI_BASE_URL, or pass --base-url."
        )
    if preset.key_env and not settings.api_key:
        chosen = _source_of("provider", sources)
        raise ConfigError(
            f"provider '{preset.name}'{f' (chosen by {chosen})' if chosen else ''} needs an API key; set "
            f"{preset.key_env} (or SWECLI_API_KEY, or api_key in ~/.config/swecli/config.toml)."
        )
    return settings
