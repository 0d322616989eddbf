"""Who may run what: modes, approvals and the "always" scopes.

- default: read-only tools run freely; mutating tools (write/edit/bash) ask first.
- auto: everything runs, except commands matching the dangerous-command guard, which still ask
  (or are refused when no one is there to ask).
- plan: read-only; mutating tools are refused with a message the model sees.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from swecli.messages import ToolCall

MODES = ("default", "auto", "plan")


@dataclass(frozen=True)
class ApprovalRequest:
    call: ToolCall
    args: dict[str, Any]
    preview: str
    """The diff of an edit, the full command of bash: what will happen if allowed."""
    danger: str = ""
    """Why the dangerous-command guard flagged it, if it did."""


@dataclass(frozen=True)
class Decision:
    verdict: Literal["yes", "no", "always"]
    reason: str = ""


Approver = Callable[[ApprovalRequest], Decision]


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    message: str = ""
    """When refused: what the model is told."""
    summary: str = ""
    """When refused: one line for the person (`declined`, `refused in plan mode`)."""


@dataclass
class Policy:
    mode: str = "default"
    approver: Approver | None = None
    """None means no one is there to ask (headless without a TTY)."""
    always_tools: set[str] = field(default_factory=set)
    always_commands: set[str] = field(default_factory=set)

    def check(self, call: ToolCall, args: dict[str, Any], mutating: bool, preview: str) -> Verdict:
        if not mutating:
            return Verdict(True)
        if self.mode == "plan":
            return Verdict(False, f"{call.name} is not available in plan mode (read-only). Explore with the "
                                  "read-only tools and finish by proposing a plan; the user will switch modes "
                                  "to carry it out.", "refused in plan mode")
        from swecli.tools.guard import dangerous_reason

        command = str(args.get("command", "")) if call.name == "bash" else ""
        danger = dangerous_reason(command) if command else ""
        if self.mode == "auto" and not danger:
            return Verdict(True)
        if not danger and self._always_allows(call.name, command):
            return Verdict(True)
        return self._ask(ApprovalRequest(call, args, preview, danger), command)

    def _always_allows(self, tool: str, command: str) -> bool:
        # "Always" for bash is scoped to that exact command, never to its first word.
        return command in self.always_commands if tool == "bash" else tool in self.always_tools

    def _ask(self, request: ApprovalRequest, command: str) -> Verdict:
        if self.approver is None:
            why = f" ({request.danger})" if request.danger else ""
            return Verdict(False, f"{request.call.name} needs the user's approval{why}, and no one is there to "
                                  "approve it (non-interactive run). The user can re-run with --mode auto to allow "
                                  "changes without approval.", "refused: needs approval (use --mode auto)")
        decision = self.approver(request)
        if decision.verdict == "always" and not request.danger:
            if command:
                self.always_commands.add(command)
            else:
                self.always_tools.add(request.call.name)
        if decision.verdict == "no":
            reason = f" Their reason: {decision.reason}" if decision.reason else ""
            return Verdict(False, f"The user declined this {request.call.name} call.{reason} Do not retry it "
                                  "unchanged; adjust your approach or ask the user.", "declined by user")
        return Verdict(True)
