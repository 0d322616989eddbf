"""The `swecli` command (typer). Everything heavy is imported inside the commands, so `--version`
and `--help` never load the provider or UI stacks."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from swecli import __version__

HELP = """swecli: a terminal coding agent that manages its context window.

Run `swecli` in a project directory for the interactive REPL, or `swecli -p "TASK"` to run one task
unattended. Configure with .swecli/config.toml, ~/.config/swecli/config.toml, SWECLI_* variables or
the flags below."""

app = typer.Typer(add_completion=False, help=HELP, context_settings={"help_option_names": ["-h", "--help"]},
                  rich_markup_mode=None, pretty_exceptions_enable=False)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"swecli {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def main_command(
    ctx: typer.Context,
    prompt: str = typer.Option(None, "-p", "--print", help="Run TASK headless and print the result."),
    output_format: str = typer.Option("text", "--output-format", help="text | json | stream-json (with -p)."),
    provider: str = typer.Option(None, "--provider", help="openai, anthropic, fireworks, openrouter, ollama, "
                                                          "lmstudio, llamacpp, vllm, openai-compatible."),
    model: str = typer.Option(None, "--model", "-m", help="Model name."),
    base_url: str = typer.Option(None, "--base-url", help="API base URL (OpenAI-compatible: ending in /v1)."),
    mode: str = typer.Option(None, "--mode", help="default (ask before changes) | auto | plan (read-only)."),
    max_iterations: int = typer.Option(None, "--max-iterations", help="Model calls allowed per task."),
    context_limit: int = typer.Option(None, "--context-limit", help="Context window to plan for, in tokens."),
    continue_: bool = typer.Option(False, "--continue", "-c", help="Resume this project's latest session."),
    resume: str = typer.Option(None, "--resume", help="Resume session ID (or pick from a list with --resume '')."),
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                 help="Show the version and exit."),
) -> None:
    if ctx.invoked_subcommand:
        return
    if output_format not in ("text", "json", "stream-json"):
        _fail(f"--output-format must be text, json or stream-json, not {output_format!r}.")
    flags = {"provider": provider, "model": model, "base_url": base_url, "mode": mode,
             "max_iterations": max_iterations, "context_limit": context_limit}
    from swecli.runner import run

    code = run(Path.cwd(), flags, prompt=prompt, output_format=output_format, resume=resume,
               continue_latest=continue_)
    raise typer.Exit(code)


@app.command()
def init(
    provider: str = typer.Option(None, "--provider"),
    model: str = typer.Option(None, "--model", "-m"),
    base_url: str = typer.Option(None, "--base-url"),
    yes: bool = typer.Option(False, "--yes", "-y", help="Apply an update to an existing OPENCLI.md without asking."),
) -> None:
    """Scan the project and write (or update) OPENCLI.md with the model's help."""
    from swecli.runner import run_init

    raise typer.Exit(run_init(Path.cwd(), {"provider": provider, "model": model, "base_url": base_url}, yes))


@app.command()
def logs(session: str = typer.Argument(None, help="Session ID (default: the latest).")) -> None:
    """Pretty-print a session's JSON log."""
    from swecli.runner import show_log

    raise typer.Exit(show_log(Path.cwd(), session))


@app.command()
def sessions(
    delete: list[str] = typer.Option(None, "--delete", help="Delete this session (repeatable)."),
    older_than: int = typer.Option(None, "--older-than", help="With --delete-old: age in days."),
    delete_old: bool = typer.Option(False, "--delete-old", help="Delete sessions older than --older-than days."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """List this project's sessions (or delete some)."""
    from swecli.runner import manage_sessions

    raise typer.Exit(manage_sessions(Path.cwd(), delete or [], older_than if delete_old else None, yes))


@app.command()
def repomap(
    as_json: bool = typer.Option(False, "--json", help="Every mapped file by rank, as JSON."),
    symbols: bool = typer.Option(False, "--symbols", help="The map with each file's definitions."),
    deps: str = typer.Option(None, "--deps", help="What FILE defines, imports and is imported by."),
    tokens: int = typer.Option(2_000, "--tokens", min=100, help="Budget for --symbols, in tokens."),
) -> None:
    """The repository map: files ranked by how central they are, their symbols and dependencies."""
    from swecli.runner import show_repomap

    raise typer.Exit(show_repomap(Path.cwd(), as_json=as_json, symbols=symbols, deps=deps, tokens=tokens))


def _fail(message: str) -> None:
    typer.echo(f"swecli: {message}", err=True)
    raise typer.Exit(2)


def _normalize(argv: list[str]) -> list[str]:
    # `--resume` alone (no ID) means "pick from a list": click needs a value, so give it an empty one.
    out = list(argv)
    for i, arg in enumerate(out):
        if arg == "--resume" and (i + 1 == len(out) or out[i + 1].startswith("-")):
            out[i] = "--resume="
    return out


def run_app(argv: list[str]) -> None:
    app(args=_normalize(argv), prog_name="swecli")


def main() -> None:
    run_app(sys.argv[1:])
