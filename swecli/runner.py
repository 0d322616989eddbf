"""What the CLI commands do, once the arguments are parsed: load settings, pick the provider, open
the session, then hand over to headless mode or the REPL. Errors a user can fix are one sentence on
stderr and exit status 2; never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swecli.config import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable

    from swecli.config import Settings
    from swecli.events import Event
    from swecli.permissions import Approver


def _error(message: str) -> int:
    sys.stderr.write(f"swecli: {message}\n")
    return 2


def _settings(root: Path, flags: dict[str, Any]) -> Settings:
    """Settings with the provider resolved (auto-detected when none is configured) and the context
    window the server reports (when the user set none)."""
    from swecli.config import load_settings
    from swecli.llm.window import resolve_window

    settings = load_settings(root, flags)
    if not (settings.provider and settings.model):
        from swecli.llm.discovery import discover  # finds the provider, or asks the server for its model

        settings = discover(settings)
    return resolve_window(settings)


def run(root: Path, flags: dict[str, Any], *, prompt: str | None, output_format: str = "text",
        resume: str | None = None, continue_latest: bool = False) -> int:
    from swecli.session.store import SessionError

    try:
        settings = _settings(root, flags)
        if resume == "":
            resume = pick_session(root)
        if prompt is not None:
            return run_headless(root, settings, prompt, output_format, resume=resume, continue_latest=continue_latest)
        from swecli.ui.repl import run_repl

        return run_repl(root, settings, resume=resume, continue_latest=continue_latest)
    except (ConfigError, SessionError) as exc:
        return _error(str(exc))


def run_headless(root: Path, settings: Settings, prompt: str, output_format: str, *, resume: str | None = None,
                 continue_latest: bool = False) -> int:
    from swecli.app import open_session
    from swecli.headless import ProgressPrinter, StreamJsonPrinter, finish
    from swecli.llm.base import ProviderError

    if not prompt.strip():
        return _error("-p needs a task, e.g. swecli -p \"fix the failing test in tests/test_api.py\".")
    printer = StreamJsonPrinter(sys.stdout) if output_format == "stream-json" else ProgressPrinter(sys.stderr)
    listeners: list[Callable[[Event], None]] = [] if output_format == "json" else [printer]
    session = open_session(root, settings, approver=tty_approver(), listeners=listeners, resume=resume,
                           continue_latest=continue_latest, first_prompt=prompt)
    fmt: Any = output_format
    try:
        turn = session.run(prompt)
    except ProviderError as exc:
        session.recorder.log.error(str(exc))
        return finish(fmt, None, session.session_id, str(exc))
    except KeyboardInterrupt:
        return finish(fmt, None, session.session_id, "interrupted by user")
    finally:
        session.close()
    return finish(fmt, turn, session.session_id, "")


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


def tty_approver() -> Approver | None:
    """Ask on the terminal when there is one; None (refuse, never block) when there is not."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None
    from swecli.permissions import ApprovalRequest, Decision

    def ask(request: ApprovalRequest) -> Decision:
        sys.stderr.write(f"\n{request.call.name} wants to run:\n{request.preview}\n")
        if request.danger:
            sys.stderr.write(f"warning: {request.danger}\n")
        answer = input("Allow? [y]es / [n]o / [a]lways this session: ").strip().lower()
        if answer.startswith("a"):
            return Decision("always")
        if answer.startswith("y"):
            return Decision("yes")
        return Decision("no", answer[1:].strip(" :-") if answer.startswith("n") else answer)

    return ask


def run_init(root: Path, flags: dict[str, Any], assume_yes: bool = False) -> int:
    """`swecli init`: scan, ask the model to fill OPENCLI.md.template, create or (after approval) update."""
    from swecli.llm.base import ProviderError, complete
    from swecli.llm.factory import make_provider
    from swecli.memory.init import InitError, prepare_init_request, prepare_init_result

    try:
        settings = _settings(root, flags)
        provider = make_provider(settings)
        sys.stderr.write("Scanning the project and asking the model to write OPENCLI.md ...\n")
        try:
            answer = complete(provider, prepare_init_request(root)).message.content
        finally:
            provider.close()
        result = prepare_init_result(root, answer)
    except (ConfigError, ProviderError, InitError) as exc:
        return _error(str(exc))
    if result.existing is None:
        result.write()
        print(f"Created {result.path} ({len(result.text.splitlines())} lines).")
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
