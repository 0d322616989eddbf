"""The `swecli` command: its arguments (typer) and what each subcommand does once they are parsed.

Read as: `entry` (answers --version) -> `cli` (settings, then one of:) -> `ui.headless` (-p) or
`ui.repl` (interactive) -> `assembly` (settings + root -> an agent session) -> `agent` (the loop).
Errors a user can fix are one sentence on stderr and exit status 2, never a traceback. Everything
heavy is imported inside the functions, so `--version` and `--help` never load the provider or UI
stacks."""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import typer
from typer.core import TyperArgument, TyperCommand

from swecli import __version__
from swecli.errors import SwecliError
from swecli.records import datarecord

if TYPE_CHECKING:
    from swecli.config import Settings
    from swecli.mcp.configfile import Scope
    from swecli.tools.spool import FullOutput
    from swecli.trust import TrustStore
    from swecli.ui.headless import OutputFormat

TASK_OPTION = "--positional-task"
"""Where `split_task` puts the positional TASK for typer (click's group would read it as a command name)."""

HELP = """swecli: a terminal coding agent that manages its context window.

Run `swecli` in a project directory for the interactive REPL (`swecli "TASK"` starts it on a task), or
`swecli -p "TASK"` to run one task unattended (`echo TASK | swecli -p` reads it from stdin, and
`cat log | swecli -p "explain this"` attaches the piped text to the task). Configure with
.swecli/config.toml, ~/.config/swecli/config.toml, SWECLI_* variables or the flags below."""

app = typer.Typer(add_completion=False, help=HELP, context_settings={"help_option_names": ["-h", "--help"]},
                  rich_markup_mode=None, pretty_exceptions_enable=False)


class _PlainArgument(TyperArgument):
    """An argument shown as click and every man page show one (`NAME`, `[ID]`), without typer's `{name}`
    in the usage line and `<str>` in the list."""

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        return (name if self.required else f"[{name}]") + ("..." if self.nargs != 1 else "")

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


class PlainHelp(TyperCommand):
    """A subcommand whose --help shows its arguments plainly (`_PlainArgument`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if type(param) is TyperArgument:
                param.__class__ = _PlainArgument


def _version(value: bool) -> None:
    if value:
        typer.echo(f"swecli {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def main_command(  # noqa: PLR0913 (a typer command: one parameter per flag)
    ctx: typer.Context,
    prompt: str = typer.Option(None, "-p", "--print", metavar="[TASK]",
                               help="Run TASK headless and print the result (no TASK or '-': read it from stdin)."),
    output_format: str = typer.Option("text", "--output-format", metavar="FORMAT",
                                      help="text | json | stream-json (with -p)."),
    provider: str = typer.Option(None, "--provider", metavar="NAME",
                                 help="openai, anthropic, fireworks, openrouter, ollama, lmstudio, llamacpp, vllm, "
                                      "openai-compatible."),
    model: str = typer.Option(None, "--model", "-m", metavar="NAME", help="Model name."),
    base_url: str = typer.Option(None, "--base-url", metavar="URL",
                                 help="API base URL (OpenAI-compatible: ending in /v1)."),
    mode: str = typer.Option(None, "--mode", metavar="MODE",
                             help="default (ask before changes) | auto | plan (read-only)."),
    sandbox: str = typer.Option(None, "--sandbox", metavar="MODE",
                                help="How bash is confined: workspace-write | read-only | off."),
    max_iterations: int = typer.Option(None, "--max-iterations", metavar="N", help="Model calls allowed per task."),
    context_limit: int = typer.Option(None, "--context-limit", metavar="TOKENS",
                                      help="Context window to plan for, in tokens."),
    thinking: str = typer.Option(None, "--thinking", metavar="LEVEL",
                                 help="off | on | low | medium | high | BUDGET (tokens): extended thinking / reasoning "
                                      "effort."),
    continue_: bool = typer.Option(False, "--continue", "-c", help="Resume this project's latest session."),
    resume: str = typer.Option(None, "--resume", metavar="[ID]",
                               help="Resume session ID (without one: pick from a list)."),
    trust_project: bool = typer.Option(False, "--trust-project",
                                       help="Apply this project's settings that need trust (provider, base URL, "
                                            "MCP servers, hooks, sandbox...) for this run, without asking."),
    task: str = typer.Option(None, TASK_OPTION, hidden=True),  # the positional TASK, set by split_task
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                 help="Show the version and exit."),
) -> None:
    if ctx.invoked_subcommand:
        gc.enable()  # off since `entry` (start-up): only -p keeps it off, until its first request
        return
    if output_format not in ("text", "json", "stream-json"):
        _fail(f"--output-format must be text, json or stream-json, not {output_format!r}.")
    flags = {"provider": provider, "model": model, "base_url": base_url, "mode": mode,
             "max_iterations": max_iterations, "context_limit": context_limit, "thinking": thinking,
             "sandbox": {"mode": sandbox} if sandbox is not None else None}
    asked = Invocation(prompt, cast("OutputFormat", output_format), resume, continue_, task, trust_project)
    code = run(Path.cwd(), flags, asked)
    raise typer.Exit(code)


@app.command(short_help="Scan the project and write (or update) OPENCLI.md.")
def init(
    provider: str = typer.Option(None, "--provider", metavar="NAME"),
    model: str = typer.Option(None, "--model", "-m", metavar="NAME"),
    base_url: str = typer.Option(None, "--base-url", metavar="URL"),
    yes: bool = typer.Option(False, "--yes", "-y", help="Apply an update to an existing OPENCLI.md without asking."),
) -> None:
    """Scan the project and write (or update) OPENCLI.md with the model's help."""
    raise typer.Exit(run_init(Path.cwd(), {"provider": provider, "model": model, "base_url": base_url}, yes))


@app.command(cls=PlainHelp)
def logs(session: str = typer.Argument(None, metavar="ID", help="Session ID (default: the latest).")) -> None:
    """Pretty-print a session's JSON log."""
    raise typer.Exit(show_log(Path.cwd(), session))


@app.command()
def sessions(
    delete: list[str] = typer.Option(None, "--delete", metavar="ID", help="Delete this session (repeatable)."),
    older_than: int = typer.Option(None, "--older-than", metavar="DAYS", help="With --delete-old: age in days."),
    delete_old: bool = typer.Option(False, "--delete-old", help="Delete sessions older than --older-than days."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """List this project's sessions (or delete some)."""
    if delete_old and older_than is None:
        _fail("--delete-old needs --older-than DAYS, e.g. swecli sessions --delete-old --older-than 30.")
    if older_than is not None and not delete_old:
        _fail("--older-than goes with --delete-old, e.g. swecli sessions --delete-old --older-than 30.")
    raise typer.Exit(manage_sessions(Path.cwd(), delete or [], older_than if delete_old else None, yes))


@app.command()
def repomap(
    as_json: bool = typer.Option(False, "--json", help="Every mapped file by rank, as JSON."),
    symbols: bool = typer.Option(False, "--symbols", help="The map with each file's definitions."),
    deps: str = typer.Option(None, "--deps", metavar="FILE", help="What FILE defines, imports and is imported by."),
    tokens: int = typer.Option(2_000, "--tokens", min=100, metavar="N", help="Budget for --symbols, in tokens."),
) -> None:
    """The repository map: central files and their dependencies."""
    raise typer.Exit(show_repomap(Path.cwd(), as_json=as_json, symbols=symbols, deps=deps, tokens=tokens))


skills_app = typer.Typer(help="Agent Skills (folders with a SKILL.md) this project can use.", no_args_is_help=True)
app.add_typer(skills_app, name="skills")


@skills_app.command("list", short_help="List the skills found and where each came from.")
def skills_list() -> None:
    """List the skills found for this project (and the user), where each came from, and any skipped."""
    raise typer.Exit(list_skills(Path.cwd()))


mcp_app = typer.Typer(help="List, add and remove MCP servers ([mcp.servers.NAME] in the file of a scope: local, the "
                           "default, is private to you and this project; project is .swecli/config.toml, shared; "
                           "user is your config.toml, for every project).",
                      short_help="List, add and remove MCP servers.",
                      no_args_is_help=True)
app.add_typer(mcp_app, name="mcp")


@mcp_app.command("list", short_help="Start the servers and list their tools.")
def mcp_list() -> None:
    """Start each configured server and list its tools with their schema sizes in tokens."""
    raise typer.Exit(list_mcp(Path.cwd()))


@mcp_app.command("add", cls=PlainHelp, short_help="Add a server (private to you and this project by default).",
                 context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def mcp_add(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="NAME", help="Server name: its tools are called mcp__NAME__TOOL."),
    url: str = typer.Option(None, "--url", metavar="URL", help="A streamable-HTTP server's URL (instead of -- "
                                                               "COMMAND)."),
    env: list[str] = typer.Option(None, "--env", "-e", metavar="KEY=VALUE",
                                  help="An environment variable for the command (repeatable)."),
    header: list[str] = typer.Option(None, "--header", "-H", metavar="KEY=VALUE",
                                     help="An HTTP header for --url (repeatable)."),
    always_load: bool = typer.Option(False, "--always-load", help="Never defer this server's tools."),
    scope: str = typer.Option("local", "--scope", "-s", metavar="SCOPE",
                              help="local (private to you, this project), project (.swecli/config.toml, shared) "
                                   "or user (all your projects)."),
) -> None:
    """Add a server: swecli mcp add NAME -- COMMAND ARGS...  (or --url URL). Write a token as ${VAR}."""
    flags = ServerFlags(list(ctx.args), url, env or [], header or [], always_load)
    raise typer.Exit(add_mcp(Path.cwd(), name, flags, scope))


@mcp_app.command("remove", cls=PlainHelp, short_help="Remove a server.")
def mcp_remove(
    name: str = typer.Argument(..., metavar="NAME", help="The server to remove."),
    scope: str = typer.Option(None, "--scope", "-s", metavar="SCOPE",
                              help="local, project or user (needed only when several scopes define NAME)."),
) -> None:
    """Remove a server from the scope that defines it."""
    raise typer.Exit(remove_mcp(Path.cwd(), name, scope))


@app.command(short_help="Trust this project's settings, or revoke that, or list your decisions.")
def trust(
    revoke: bool = typer.Option(False, "--revoke", help="Forget your decision for this project: its settings "
                                                        "that need trust are ignored (and asked about) again."),
    list_all: bool = typer.Option(False, "--list", help="List the projects you trusted or declined."),
) -> None:
    """Trust this project's .swecli/ settings as they are now (provider, base URL, MCP servers, hooks,
    sandbox, agents that bring tools); a later change to them asks again."""
    if revoke and list_all:
        _fail("--revoke and --list go separately.")
    raise typer.Exit(manage_trust(Path.cwd(), revoke=revoke, list_all=list_all))


# -- what the commands do -----------------------------------------------------------------------

def _error(message: str) -> int:
    sys.stderr.write(f"swecli: {message}\n")
    return 2


def _settings(root: Path, flags: dict[str, Any], trust_project: bool) -> Settings:
    """Settings with the provider resolved (auto-detected when none is configured) and the context
    window the server reports (when the user set none)."""
    from swecli.config import load_settings
    from swecli.llm.window import resolve_window

    settings = load_settings(root, flags, trust_project=trust_project)
    if not (settings.provider and settings.model):
        from swecli.llm.discovery import discover  # finds the provider, or asks the server for its model

        settings = discover(settings)
    return resolve_window(settings)


@datarecord(frozen=True)
class Invocation:
    """What the command line asks of a session, besides the settings."""

    prompt: str | None = None
    """-p's value (None without -p; "" or "-": read the task from stdin)."""
    output_format: OutputFormat = "text"
    resume: str | None = None
    continue_latest: bool = False
    task: str | None = None
    """The positional TASK (the REPL's first request, or -p's task when -p has no value)."""
    trust_project: bool = False


def run(root: Path, flags: dict[str, Any], asked: Invocation) -> int:
    """A REPL session, or a -p run, as `asked`."""
    try:
        if asked.prompt is None:
            gc.enable()  # off since `entry`; -p keeps it off until its first request is out (`ui.headless`)
        interactive = asked.prompt is None and sys.stdin.isatty()
        trusted = _project_trust(root, flag=asked.trust_project, ask=interactive, to_stderr=not interactive)
        headless = asked.prompt is not None  # -p probes the sandbox once its first request is out (LaterProbe)
        settings_ready = _settings_beside(root, flags, trusted, http_beside=headless, probe_beside=not headless)
        resume = pick_session(root) if asked.resume == "" else asked.resume
        if asked.prompt is not None:
            import swecli.assembly
            import swecli.ui.headless  # noqa: F401  (imported while the window is asked for)

            try:
                return _run_print(root, settings_ready(), asked.prompt, asked.task, asked.output_format, resume,
                                  asked.continue_latest)
            finally:
                gc.enable()  # if no request went out (headless switches it on when the first one does)
        from swecli.ui.repl import run_repl

        return run_repl(root, settings_ready(), resume=resume, continue_latest=asked.continue_latest, task=asked.task)
    except SwecliError as exc:  # a setting, nothing to resume, a provider that cannot be reached
        return _error(str(exc))


def _settings_beside(root: Path, flags: dict[str, Any], trusted: bool, *, http_beside: bool = False,
                     probe_beside: bool = True) -> Callable[[], Settings]:
    """`_settings`, with the server's window asked for on a thread while the caller imports the session's
    modules: the answer waits on the network, the imports on the interpreter (and, with `probe_beside`, the
    sandbox probed: `_sandbox_probes_beside`). Call the result to get the settings (it raises what
    `_settings` would)."""
    from swecli.config import load_settings
    from swecli.llm.transport import prepare_http
    from swecli.llm.window import resolve_window

    known, base_url = threading.Event(), [""]  # not concurrent.futures: it imports logging on this thread

    def provider_url() -> str:
        known.wait()
        return base_url[0]

    if http_beside:  # -p: httpx and the certificate store, for the window probe and the provider's client
        prepare_http(provider_url)  # (not the REPL: from Enter it measured 0.1 s slower with it, loaded)
    try:
        settings = load_settings(root, flags, trust_project=trusted)
        base_url[0] = settings.base_url
    finally:
        known.set()  # on an error "" is read: the thread builds the store, as before it could know
    probes = _sandbox_probes_beside(settings, root) if probe_beside else None
    if not (settings.provider and settings.model):
        def discovered() -> Settings:  # discovery first: nothing to overlap but the probes
            if probes is not None:
                probes.join()
            return _settings(root, flags, trusted)

        return discovered
    outcome: list[Settings | BaseException] = []

    def ask() -> None:
        try:
            outcome.append(resolve_window(settings))
        except BaseException as exc:  # handed to the caller below
            outcome.append(exc)

    thread = threading.Thread(target=ask, name="swecli-window", daemon=True)
    thread.start()

    def ready() -> Settings:
        thread.join()
        if probes is not None:  # done by now: the session's imports took longer; the session finds them cached
            probes.join()
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]

    return ready


def _sandbox_probes_beside(settings: Settings, root: Path) -> threading.Thread:
    """Start, on a thread, what opening a REPL session asks of the sandbox (`tools.sandbox.from_settings`): a
    trivial command in bwrap (does it work here, with which isolation flags) and the seccomp filter's build
    (one `ldconfig -p` to find libseccomp, the pyseccomp binding). Two subprocesses and a library load,
    waited for beside the session's imports instead of on the way to the first request; both are cached
    per process, so the session's own calls find them done. Errors are left for those calls to report.
    (-p runs them once its first request is out: `assembly.LaterProbe`.)"""

    def probe() -> None:
        if settings.sandbox.mode == "off":
            return
        from swecli.tools import sandbox, syscalls

        with contextlib.suppress(Exception):
            if not sandbox.unavailable_reason(root) and not settings.sandbox.network:
                syscalls.unavailable()

    thread = threading.Thread(target=probe, name="swecli-sandbox-probe", daemon=True)
    thread.start()
    return thread


def _project_trust(root: Path, *, flag: bool, ask: bool, to_stderr: bool,
                   flag_name: str | None = "--trust-project") -> bool:
    """The project's trust for this run (`swecli.ui.trust`): asked on a terminal, else the remembered
    answer or the flag; what stays ignored is named in one line. rich is imported only for a project
    whose configuration needs trust (~0.06 s, on every start's path before)."""
    import os

    from swecli.ui.trust import decide_trust, review_project

    env = dict(os.environ)
    if not review_project(root, env).needs_trust:  # the common case: nothing to ask or to say
        return False
    from rich.console import Console

    console = Console(stderr=to_stderr, highlight=False, soft_wrap=True)
    return decide_trust(root, env, console, flag=flag, ask=ask, flag_name=flag_name)


MAX_PIPED_TASK_BYTES = 100_000
"""A task read from stdin is kept verbatim in the history; data belongs in an attachment instead."""
NEEDS_TASK = ('-p needs a task: swecli -p "fix the failing test in tests/test_api.py", or pipe it: '
              'echo "fix the failing test" | swecli -p.')


def _run_print(root: Path, settings: Settings, prompt: str, task: str | None, output_format: OutputFormat,
               resume: str | None, continue_latest: bool) -> int:
    """`-p`: the task is -p's value and/or the positional words; without either it is read from stdin,
    and with one, piped stdin is attached to it (codex exec's and Claude Code's forms)."""
    from swecli.ui.headless import run_headless

    given = " ".join(part.strip() for part in (prompt if prompt != "-" else "", task or "") if part.strip())
    piped = read_piped_input(required=not given, notice=settings.wait_notice)
    if not given:
        text = piped.text(MAX_PIPED_TASK_BYTES) if piped is not None else ""
        if text is None:
            assert piped is not None
            return _error(f"the task read from stdin is {piped.size:,} bytes, over the {MAX_PIPED_TASK_BYTES:,}-byte "
                          "limit for a task; give the instructions with -p and pipe the data, e.g. "
                          'cat build.log | swecli -p "explain this failure".')
        if not text.strip():
            return _error(NEEDS_TASK)
        given, piped = text.strip(), None
    return run_headless(root, settings, given, output_format, resume=resume, continue_latest=continue_latest,
                        piped=piped)


def read_piped_input(required: bool, notice: float) -> FullOutput | None:
    """What is piped into stdin (None for a terminal, or when nothing is). Unless `required`, only a pipe
    or a file counts: /dev/null or a socket left open by the caller (an IDE, another agent) is not
    input meant for swecli, and waiting for it to end would hang. After `notice` seconds without input
    (`wait_notice`), it says what it waits for (an open pipe nobody closes)."""
    import os
    import select
    import stat

    from swecli.tools.spool import Spool

    try:
        if sys.stdin is None or sys.stdin.isatty():
            return None
        fd = sys.stdin.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError):
        return None
    if not required and not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        return None
    if stat.S_ISFIFO(mode) and not select.select([fd], [], [], notice)[0]:
        sys.stderr.write("swecli: waiting for the input piped to stdin to end (run with < /dev/null to skip it)\n")
    spool = Spool()
    while chunk := os.read(fd, 1 << 16):
        spool.write(chunk)
    if not spool.total:
        spool.discard()
        return None
    return spool.finish()


def pick_session(root: Path) -> str:
    """`--resume` without an ID: list the sessions and let the person pick one by number."""
    from swecli.session.store import SessionError, format_session_line, list_sessions

    sessions = list_sessions(root)[:20]
    if not sessions:
        raise SessionError("there is no session to resume in this project yet.")
    for n, info in enumerate(sessions, start=1):
        print(f"{n:>3}. {format_session_line(info)}")
    if not sys.stdin.isatty():
        raise SessionError("--resume needs a session ID when there is no terminal to pick one (see the list above).")
    answer = input("Resume which session? [1] ").strip() or "1"
    if not answer.isdigit() or not 1 <= int(answer) <= len(sessions):
        raise SessionError(f"{answer!r} is not a number from the list.")
    return sessions[int(answer) - 1].session_id


def run_init(root: Path, flags: dict[str, Any], assume_yes: bool = False) -> int:
    """`swecli init`: scan, ask the model to fill OPENCLI.md.template, create or (after approval) update."""
    from swecli.llm.base import complete
    from swecli.llm.factory import make_provider
    from swecli.memory.init import prepare_init_request, prepare_init_result

    try:
        trusted = _project_trust(root, flag=False, ask=sys.stdin.isatty(), to_stderr=True, flag_name=None)
        settings = _settings(root, flags, trusted)
        provider = make_provider(settings)
        sys.stderr.write("Scanning the project and asking the model to write OPENCLI.md ...\n")
        try:
            answer = complete(provider, prepare_init_request(root)).message.content
        finally:
            provider.close()
        result = prepare_init_result(root, answer)
    except SwecliError as exc:
        return _error(str(exc))
    if result.existing is None:
        result.write()
        lines = len(result.text.splitlines())
        print(f"Created {result.path} ({lines} line{'s' if lines != 1 else ''}).")
        return 0
    if not result.changed:
        print(f"{result.path} is already up to date.")
        return 0
    print(result.diff)
    if not assume_yes and not _confirm(f"Update {result.path.name} with these changes?"):
        print("Left OPENCLI.md unchanged." + ("" if sys.stdin.isatty() else " (Pass --yes to apply without asking.)"))
        return 1
    result.write()
    print(f"Updated {result.path}.")
    return 0


def list_skills(root: Path) -> int:
    """`swecli skills list`: the same listing as `/skills` (skipped SKILL.md files are listed with why)."""
    from swecli.skills.catalog import discover
    from swecli.ui.commands.skills import describe_catalog

    catalog = discover(root)
    for line in describe_catalog(catalog):
        print(line)
    return 0


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    return input(f"{question} [y/N] ").strip().lower().startswith("y")


def show_log(root: Path, session: str | None) -> int:
    from swecli.session.log import find_log, format_log
    from swecli.session.store import SessionError

    try:
        path = find_log(root, session)
    except SessionError as exc:
        return _error(str(exc))
    for line in format_log(path):
        print(line)
    return 0


def manage_sessions(root: Path, delete: list[str], older_than_days: int | None, assume_yes: bool) -> int:
    from swecli.session.store import (
        SessionError,
        delete_session,
        format_session_line,
        list_sessions,
        resolve_session_id,
        sessions_older_than,
    )

    try:
        doomed = [resolve_session_id(root, wanted) for wanted in delete]
    except SessionError as exc:
        return _error(str(exc))
    if older_than_days is not None:
        doomed += [info.session_id for info in sessions_older_than(root, older_than_days)]
    if not doomed:
        sessions = list_sessions(root)
        if not sessions:
            print("No sessions yet in this project.")
        for info in sessions:
            print(format_session_line(info))
        return 0
    print("Will delete:\n" + "\n".join(f"  {sid}" for sid in doomed))
    if not assume_yes and not _confirm(f"Delete {len(doomed)} session(s)?"):
        print("Nothing deleted." + ("" if sys.stdin.isatty() else " (Pass --yes to delete without asking.)"))
        return 1
    for sid in doomed:
        for path in delete_session(root, sid):
            print(f"deleted {path}")
    return 0


def _state_dir_problem(root: Path) -> str | None:
    """`ensure_state_dir` for a command without a session: its warnings on stderr; why it cannot be used, if so."""
    from swecli.session.store import SessionError, ensure_state_dir

    try:
        warnings = ensure_state_dir(root)
    except SessionError as exc:
        return str(exc)
    for warning in warnings:
        sys.stderr.write(f"warning: {warning}\n")
    return None


def show_repomap(root: Path, *, as_json: bool, symbols: bool, deps: str | None, tokens: int) -> int:
    """`swecli repomap`: build (or load) the map, with progress on stderr when it takes over a second."""
    import json

    from swecli.repomap.repomap import RepoMap
    from swecli.repomap.views import UnknownFile, deps_text, find_file, ranked_table

    def progress(done: int, total: int) -> None:
        end = "\r" if sys.stderr.isatty() and done < total else "\n"
        sys.stderr.write(f"mapping: parsed {done:,} of {total:,} files{end}")
        sys.stderr.flush()

    if (problem := _state_dir_problem(root)) is not None:  # its cache goes under .swecli/, kept out of git
        return _error(problem)
    rmap = RepoMap.build(root, progress=progress)
    try:
        only = [find_file(rmap, deps, Path.cwd())] if deps else None
    except UnknownFile as exc:
        return _error(str(exc))
    if as_json:
        print(json.dumps(rmap.to_json(only), indent=1))
    elif only:
        print(deps_text(rmap, only[0]))
    elif symbols:
        print(rmap.render(tokens))
    else:
        print(ranked_table(rmap))
    sys.stderr.write(rmap.summary() + "\n")
    return 0


def list_mcp(root: Path) -> int:
    """`swecli mcp list`: start the servers (as a session would), list them, stop them."""
    from swecli.config import ConfigError, load_settings
    from swecli.context.tokens import TOOL_SCHEMA_OVERHEAD, TokenCounter, encoding_for_model, serialize_tool
    from swecli.mcp.catalog import McpCatalog
    from swecli.mcp.configfile import server_scopes
    from swecli.mcp.manager import McpManager
    from swecli.mcp.report import listing

    try:
        trusted = _project_trust(root, flag=False, ask=sys.stdin.isatty(), to_stderr=True, flag_name=None)
        settings = load_settings(root, resolve_provider=False, trust_project=trusted)
    except ConfigError as exc:
        return _error(str(exc))
    if settings.mcp.servers:
        settings = _settings_for_budget(root, settings)
    cfg = settings.mcp
    if not cfg.servers:
        print("No MCP servers configured. Add one with: swecli mcp add NAME -- COMMAND ARGS...")
        return 0
    if (problem := _state_dir_problem(root)) is not None:  # the servers' logs go under .swecli/logs/
        return _error(problem)
    counter = TokenCounter(encoding_for_model(settings.model))
    manager = McpManager(cfg.servers, root, cfg.startup_timeout, cfg.tool_timeout)
    try:
        manager.start().wait_started(cfg.startup_timeout + 1)
        catalog = McpCatalog(manager, lambda: cfg.budget_tokens(settings.context_window),
                             lambda schema: TOOL_SCHEMA_OVERHEAD + counter.text(serialize_tool(schema)))
        catalog.poll()
        for text, _style in listing(catalog, server_scopes(root)):
            print(text)
    finally:
        manager.close()
    return 1 if any(s.status == "failed" for s in manager.states()) else 0


def _settings_for_budget(root: Path, settings: Settings) -> Settings:
    """The settings a session would use, for the window `mcp.schema_budget` is a fraction of (the server's
    own, as `/mcp` counts it); as they are when no provider can be resolved (the known-models table)."""
    from swecli.config import ConfigError

    try:
        return _settings(root, {}, settings.project_trusted)
    except ConfigError:
        return settings


@datarecord(frozen=True)
class ServerFlags:
    """A server as `swecli mcp add` was told of it: a command with its arguments, or a URL."""

    command: list[str]
    url: str | None
    env: list[str]
    headers: list[str]
    always_load: bool


def add_mcp(root: Path, name: str, flags: ServerFlags, scope: str = "local") -> int:
    import os

    from pydantic import ValidationError

    from swecli.config import McpServerConfig, load_settings
    from swecli.mcp.configfile import add_server
    from swecli.mcp.variables import literal_secrets
    from swecli.ui.trust import keep_trust

    command = flags.command
    if bool(command) == bool(flags.url):
        return _error("give the server either a command (swecli mcp add NAME -- COMMAND ARGS...) or --url URL.")
    try:
        chosen = _scope(scope)
        server = McpServerConfig(command=command[0] if command else "", args=command[1:], url=flags.url or "",
                                 env=_pairs(flags.env, "--env"), headers=_pairs(flags.headers, "--header"),
                                 always_load=flags.always_load)
        target, trusted = keep_trust(root, dict(os.environ), lambda: add_server(
            root, name, server, lambda: load_settings(root, resolve_provider=False), chosen))
    except ValidationError as exc:
        return _error(f"invalid server: {exc.errors()[0]['msg'].removeprefix('Value error, ')}.")
    except SwecliError as exc:
        return _error(str(exc))
    print(f"Added MCP server {name} to {target} ({chosen} scope). Check it with: swecli mcp list")
    secrets = literal_secrets(server)
    if chosen == "project" and secrets:
        sys.stderr.write(f"swecli: warning: {', '.join(secrets)} of {name} holds what looks like a secret, written "
                         f"out in {target}, which is shared with everyone who gets the project (it is meant to be "
                         "committed). Write a reference instead (e.g. -H 'Authorization=Bearer ${GITHUB_TOKEN}', in "
                         f"single quotes) and set the variable, or keep it private: swecli mcp remove {name} "
                         "--scope project, then add it again with --scope local.\n")
    if chosen == "project" and not trusted:
        print("This project is not trusted, so its MCP servers start only once you trust it: swecli trust")
    return 0


def remove_mcp(root: Path, name: str, scope: str | None = None) -> int:
    import os

    from swecli.config import load_settings
    from swecli.mcp.configfile import remove_server
    from swecli.ui.trust import keep_trust

    try:
        target, _ = keep_trust(root, dict(os.environ), lambda: remove_server(
            root, name, lambda: load_settings(root, resolve_provider=False),
            _scope(scope) if scope is not None else None))
    except SwecliError as exc:
        return _error(str(exc))
    print(f"Removed MCP server {name} from {target} ({target.scope} scope).")
    return 0


def _scope(value: str) -> Scope:
    from swecli.mcp.configfile import SCOPES, McpConfigError

    for scope in SCOPES:
        if value == scope:
            return scope
    raise McpConfigError(f"--scope takes local, project or user, not {value!r}.")


def manage_trust(root: Path, *, revoke: bool, list_all: bool) -> int:
    """`swecli trust`: trust the project as it is now (`--revoke`: forget; `--list`: every decision)."""
    import os

    from swecli.config import trust_store_path
    from swecli.trust import TrustStore

    env = dict(os.environ)
    store = TrustStore(trust_store_path(env))
    try:
        if list_all:
            return _list_trust(store)
        if revoke:
            forgotten = store.forget(root)
            print(f"Forgot your trust decision for {root}: its settings that need trust are ignored again, and "
                  "asked about at the next start." if forgotten else f"You had not decided about {root}.")
            return 0
        return _trust_now(root, env, store)
    except (SwecliError, OSError) as exc:
        return _error(str(exc))


def _trust_now(root: Path, env: dict[str, str], store: TrustStore) -> int:
    from swecli.ui.trust import printable, review_project

    review = review_project(root, env)
    if not review.needs_trust:
        print(f"Nothing in {root} needs trust: its configuration sets only what applies without it "
              "(docs/security/trust.md).")
        return 0
    print(f"Trusting {printable(str(root))} with:")
    for line in review.lines():
        print(f"  {line}")
    store.record(root, review.fingerprint, True, review.names())
    print("These apply from the next start; a change to them asks again. Undo with: swecli trust --revoke")
    return 0


def _list_trust(store: TrustStore) -> int:
    import time

    decisions = store.decisions()
    if not decisions:
        print(f"No trust decisions yet ({store.path}).")
    for d in decisions:
        day = time.strftime("%Y-%m-%d", time.localtime(d.at))
        print(f"{'trusted ' if d.trusted else 'declined'}  {d.root}  {day}  {', '.join(d.names)}")
    return 0


def _pairs(items: list[str], option: str) -> dict[str, str]:
    from swecli.mcp.configfile import McpConfigError

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise McpConfigError(f"{option} takes KEY=VALUE, not {item!r}.")
        out[key] = value
    return out


def _fail(message: str) -> None:
    typer.echo(f"swecli: {message}", err=True)
    raise typer.Exit(2)


OPTIONAL_VALUES = {"--resume": "--resume=", "-p": "--print=", "--print": "--print="}
"""Options whose value may be left out: `--resume` alone picks from a list, `-p` alone reads stdin."""


def _normalize(argv: list[str]) -> list[str]:
    # click needs a value for these options, so one left out becomes an empty one; `-p -` keeps its "-".
    out = list(argv)
    for i, arg in enumerate(out):
        if arg == "--":
            break
        nxt = out[i + 1] if i + 1 < len(out) else None
        if arg in OPTIONAL_VALUES and (nxt is None or (nxt.startswith("-") and nxt != "-")):
            out[i] = OPTIONAL_VALUES[arg]
    return out


def split_task(argv: list[str], command: Any) -> list[str]:
    """Move a positional TASK (`swecli "fix the greeting"`) into TASK_OPTION, unless the first positional
    word names a subcommand (`swecli sessions`). Raises TaskError for a lone word that looks
    like a mistyped subcommand (`swecli sesions`), which would otherwise start a task."""
    import difflib

    takes_value = {name for p in command.params if p.param_type_name == "option" and not p.is_flag
                   for name in p.opts}
    rest: list[str] = []
    words: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            words += argv[i + 1:]
            break
        if arg.startswith("-") and arg != "-":
            rest.append(arg)
            if arg in takes_value and i + 1 < len(argv):
                rest.append(argv[i + 1])
                i += 1
        elif not words and arg in command.commands:
            return rest + argv[i:]  # a subcommand: what follows is its own
        else:
            words.append(arg)
        i += 1
    if not words:
        return rest
    if len(words) == 1 and not any(c.isspace() for c in words[0]):
        close = difflib.get_close_matches(words[0], list(command.commands), n=1, cutoff=0.75)
        if close:
            raise TaskError(f"no command {words[0]!r}; did you mean `swecli {close[0]}`? (To start a task, "
                                   f'say more: swecli "{words[0]} ...".)')
    return [*rest, TASK_OPTION, " ".join(words)]


class TaskError(SwecliError):
    """A positional word that is neither a subcommand nor, it seems, a task."""


def run_app(argv: list[str]) -> None:
    command = typer.main.get_command(app)  # built once: it parses the arguments too
    try:
        args = split_task(_normalize(argv), command)
    except TaskError as exc:
        sys.exit(_error(str(exc)))
    command(args=args, prog_name="swecli")
