"""What the CLI commands do, once the arguments are parsed: load settings, pick the provider, open
the session, then hand over to headless mode or the REPL. Errors a user can fix are one sentence on
stderr and exit status 2; never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from swecli.config import ConfigError


def _error(message: str) -> int:
    sys.stderr.write(f"swecli: {message}\n")
    return 2


def run(root: Path, flags: dict[str, Any], *, prompt: str | None, output_format: str = "text",
        resume: str | None = None, continue_latest: bool = False) -> int:
    from swecli.cli import load

    try:
        settings = load(root, flags)
    except ConfigError as exc:
        return _error(str(exc))
    if prompt is not None:
        return run_headless(root, settings, prompt, output_format)  # type: ignore[arg-type]
    from swecli.ui.repl import run_repl

    return run_repl(root, settings)


def run_headless(root: Path, settings: Any, prompt: str, output_format: str) -> int:
    from swecli.app import EventBus, build_agent
    from swecli.headless import ProgressPrinter, StreamJsonPrinter, finish
    from swecli.llm.base import ProviderError
    from swecli.llm.factory import make_provider

    if not prompt.strip():
        return _error("-p needs a task, e.g. swecli -p \"fix the failing test in tests/test_api.py\".")
    bus = EventBus()
    if output_format == "stream-json":
        bus.listeners.append(StreamJsonPrinter(sys.stdout))
    elif output_format == "text":
        bus.listeners.append(ProgressPrinter(sys.stderr))
    provider = make_provider(settings)
    agent = build_agent(settings, root, provider, approver=_tty_approver(), bus=bus)
    session_id = ""
    try:
        turn = agent.run(prompt)
    except ProviderError as exc:
        return finish(output_format, None, session_id, str(exc))  # type: ignore[arg-type]
    except KeyboardInterrupt:
        return finish(output_format, None, session_id, "interrupted by user")  # type: ignore[arg-type]
    finally:
        provider.close()
    return finish(output_format, turn, session_id, "")  # type: ignore[arg-type]


def _tty_approver() -> Any:
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
