"""Workspace trust, the person's side: what a project asks for, the question, and the start-up line.

`decide_trust` runs before the settings are loaded (`swecli.cli`): when the project's `.swecli/`
sets something that needs trust (`swecli.trust.RULES`) or holds agents that bring tools or a model,
the answer comes from, in order: `--trust-project` (this run only), the user's remembered answer for
exactly this content (`trusted.json`), the question (REPL on a terminal: one key, remembered), else
no. Whatever is left out is named in one line at start, with how to trust the project.
"""

from __future__ import annotations

import json
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from swecli.config import trust_store_path, untrusted_layers
from swecli.delegation.definitions import AgentDefinition, load_agents
from swecli.records import datarecord
from swecli.trust import SECRET_KEYS, WHY, TrustStore, TrustStoreError, fingerprint, report_name, rule_for

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console
    from rich.text import Text

T = TypeVar("T")

QUESTION = "Trust this project and apply them? [y]es / [n]o "
SHOWN_CHARS = 160
"""A value longer than this is cut in the question (the file has it whole)."""


@datarecord(frozen=True)
class ProjectReview:
    """What trusting a project would change, and the fingerprint a decision is remembered with."""

    root: Path
    settings: dict[str, Any] = field(default_factory=dict)
    """Dotted key -> value: the project's settings an untrusted load leaves out."""
    files: tuple[str, ...] = ()
    """The configuration files they come from."""
    agents: tuple[AgentDefinition, ...] = ()
    """The project's agents that bring tools or a model."""
    fingerprint: str = ""
    replaces: frozenset[str] = frozenset()
    """Settings (as named to the user) that would replace the user's own."""

    @property
    def needs_trust(self) -> bool:
        return bool(self.settings or self.agents)

    def names(self) -> list[str]:
        """The ignored settings and agents, as the start-up line names them."""
        keys = sorted({report_name(key) for key in self.settings})
        return keys + [f"agent {agent.name}" for agent in self.agents]

    def lines(self) -> list[str]:
        """One line per setting (or MCP server, or agent): its value and what it would do."""
        grouped: dict[str, dict[str, Any]] = {}
        for key, value in self.settings.items():  # in the file's order within a group (command before args)
            grouped.setdefault(report_name(key), {})[key] = value
        lines = [_setting_line(name, grouped[name], name in self.replaces) for name in sorted(grouped)]
        for agent in self.agents:
            where = agent.path.relative_to(self.root).as_posix() if agent.path and agent.path.is_relative_to(
                self.root) else str(agent.path)
            lines.append(f"agent {agent.name} ({printable(where)}): {printable('; '.join(agent.brings()))}")
        return lines


def review_project(root: Path, env: dict[str, str]) -> ProjectReview:
    """What the project's `.swecli/` (and `.claude/agents/`) asks for that needs trust."""
    layers = untrusted_layers(root, env)
    settings = {key: value for layer in layers for key, value in layer.ignored.items()}
    guarded = {f"{layer.where}:{key}": value for layer in layers for key, value in layer.guarded.items()}
    agents = tuple(load_agents(root, env, trusted=False).untrusted)
    files = {str(agent.path): _read(agent.path) for agent in agents if agent.path is not None}
    return ProjectReview(root, settings, tuple(layer.where for layer in layers if layer.ignored), agents,
                         fingerprint(guarded, files), frozenset().union(*(layer.replaces for layer in layers)))


def decide_trust(root: Path, env: dict[str, str], console: Console, *, flag: bool, ask: bool,
                 flag_name: str | None = "--trust-project",
                 read_key: Callable[[], str | None] | None = None) -> bool:
    """Whether the project's settings that need trust apply to this run (see the module docstring).
    `ask`: a person is at the terminal (the REPL); `flag_name`: the flag that trusts, for the line that
    says what was ignored (None where the command has none)."""
    from rich.text import Text  # rich only when there is something to say (not on a -p run's path)

    review = review_project(root, env)
    if not review.needs_trust:
        return False
    if flag:
        return True
    store = TrustStore(trust_store_path(env))
    decision = store.get(root)
    if decision is not None and decision.fingerprint == review.fingerprint:
        if not decision.trusted:
            console.print(ignored_line(review, flag_name, declined=True))
        return decision.trusted
    if not ask:
        console.print(ignored_line(review, flag_name))
        return False
    changed = decision is not None and decision.trusted
    answer = ask_trust(review, console, read_key, changed) if read_key else _ask_at_terminal(review, console, changed)
    try:
        store.record(root, review.fingerprint, answer, review.names())
    except (OSError, TrustStoreError) as exc:
        console.print(Text(f"Your answer holds for this session only: {exc}", style="yellow"))
    if not answer:
        console.print(ignored_line(review, flag_name, declined=True))
    return answer


def keep_trust(root: Path, env: dict[str, str], edit: Callable[[], T]) -> tuple[T, bool]:
    """Run `edit`, a change the user makes to the project's configuration by command (`swecli mcp add`),
    and keep the project trusted through it when everything else trust covers was already trusted (or
    there was nothing): what is new is then only what the user just asked for. Returns (edit's result,
    whether the project is trusted now)."""
    store = TrustStore(trust_store_path(env))
    before = review_project(root, env)
    result = edit()
    after = review_project(root, env)
    if not after.needs_trust:
        return result, True
    if before.needs_trust and not store.trusts(root, before.fingerprint):
        return result, store.trusts(root, after.fingerprint)
    store.record(root, after.fingerprint, True, after.names())
    return result, True


def ask_trust(review: ProjectReview, console: Console, read_key: Callable[[], str | None],
              changed: bool = False) -> bool:
    """The trust question (Claude Code's trust dialog, Gemini CLI's trusted folders): what would apply,
    then one key. y trusts; n, Enter, Esc or Ctrl-C do not."""
    from rich.text import Text

    head = ("This project's settings changed since you trusted it" if changed
            else "This project's configuration asks for settings that need your trust") + \
        f" ({printable(str(review.root))}):"
    console.print(Text(head, style="bold"))
    for line in review.lines():
        console.print(Text(f"  {line}"))
    console.print(Text("They can run programs outside the sandbox, loosen it, or send your API key and code "
                       "elsewhere. Trust the project only if you trust where it came from.", style="dim"))
    console.print(Text(QUESTION, style="bold"), end="")
    answer = _answer(read_key)
    console.print(Text("yes" if answer else "no", style="green" if answer else "yellow"))
    return answer


def ignored_line(review: ProjectReview, flag_name: str | None, declined: bool = False) -> Text:
    """The one line at start naming what the untrusted project's configuration did not get to do."""
    from rich.text import Text

    why = "you did not trust this project" if declined else "this project is not trusted"
    how = f"pass {flag_name} to apply them for this run, or run `swecli trust`" if flag_name else \
        "run `swecli trust`"
    return Text(f"Ignored project settings ({why}): {', '.join(review.names())}; {how} to trust it.",
                style="yellow")


def printable(text: str) -> str:
    """`text` with control and format characters escaped: a value from a project file must not move the
    cursor, recolour or hide a line of the question (an ESC sequence, a bidi override)."""
    return "".join(ch if ch.isprintable() else f"\\u{ord(ch):04x}" for ch in text)


def _setting_line(name: str, values: dict[str, Any], replaces: bool) -> str:
    key = next(iter(values))
    why = WHY.get(name) or WHY.get(".".join(name.split(".")[:2])) or _why_by_rule(key)
    if replaces:
        why += "; it changes your own"
    if len(values) == 1 and key == name:
        return f"{name} = {_masked(key, values[key])}  ({why})"
    parts = [f"{k[len(name) + 1:]} = {_masked(k, v)}" for k, v in values.items()]
    return f"{name}: {', '.join(parts)}  ({why})"


def _masked(key: str, value: Any) -> str:
    """A secret (a key, an MCP server's environment or headers) is named, never shown."""
    return "(hidden)" if any(part in SECRET_KEYS for part in key.split(".")) else _value(value)


def _value(value: Any) -> str:
    text = printable(json.dumps(value, ensure_ascii=False, default=str))
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def _why_by_rule(key: str) -> str:
    return "a wider limit than yours" if rule_for(key) == "narrow" else "needs trust"


def _read(path: Path) -> bytes:
    from swecli.frontmatter import MAX_BYTES, read_regular

    try:
        return read_regular(path, MAX_BYTES) or b""
    except OSError:
        return b""


def _answer(read_key: Callable[[], str | None]) -> bool:
    from swecli.ui.keys import CTRL_C, ENTER, ESC

    silent = 0
    while True:
        key = read_key()
        if key is None:
            continue
        if key in (ESC, CTRL_C, ENTER):
            return False
        if not key:  # an escape sequence, or the terminal closed: the latter ends in no
            silent += 1
            if silent > 50:
                return False
            continue
        first = key.strip().lower()[:1]
        if first in ("y", "n"):
            return first == "y"


def _ask_at_terminal(review: ProjectReview, console: Console, changed: bool) -> bool:
    """The question, answered by one key from the terminal (cbreak, no echo), as `Allow?` is."""
    from swecli.ui.keys import KeyWatcher

    keys = KeyWatcher.for_stream()
    if keys is None:
        return ask_trust(review, console, _line_key, changed)
    with keys:
        return ask_trust(review, console, lambda: keys.read_key(1.0), changed)


def _line_key() -> str | None:
    from swecli.ui.keys import ENTER

    try:
        return input() or ENTER
    except EOFError:
        return ENTER
