"""Who may run what: modes, approvals, the "always" scopes, and how each bash call is confined.

- default: read-only tools run freely, and so do read-only bash commands (`cat`, `ls`, `grep`,
  `git status/log/diff`, ... decided by `swecli/tools/readonly.py`); write, edit and other commands
  ask first. Commands run in the sandbox; when the sandbox blocks one, the user may let it run again
  outside (`Verdict.escalate`).
- auto: everything runs, in the sandbox, except commands the dangerous-command guard flags, which
  still ask (or are refused when no one is there to ask). When the sandbox is wanted but cannot run
  (no bwrap), commands that are not read-only ask too: never silently unsandboxed.
- plan: write and edit are refused; bash runs in a read-only sandbox (no network), or, when there is
  no sandbox, only read-only commands run.
- in every mode, a file tool's write to a protected path (`.git/`, `.swecli/`, `.envrc`, `.vscode/`,
  the home's dotfiles when the project holds the home; `swecli/tools/protected.py`) asks first, with
  no "always": it runs later outside any sandbox. Without anyone to ask (`-p`) it is refused.

`sandbox` is None when the user turned the sandbox off (`sandbox.mode = "off"`); `sandbox_problem`
is why it cannot run here (then commands are asked for as described above).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from swecli.messages import ToolCall
from swecli.records import datarecord
from swecli.tools.facts import facts_for

if TYPE_CHECKING:
    from swecli.tools.sandbox import Sandbox

MODES = ("default", "auto", "plan")
UNSANDBOXED = "runs without the sandbox (it cannot start here)"


@datarecord(frozen=True)
class ApprovalRequest:
    """What the person is asked about one tool call."""

    call: ToolCall
    args: dict[str, Any]
    preview: str
    """The diff of an edit, the full command of bash: what will happen if allowed."""
    danger: str = ""
    """Why the dangerous-command guard flagged it, or why it needs the sandbox lifted; no "always"."""
    note: str = ""
    """A caution that still allows "always" (e.g. that the command runs unsandboxed)."""


@datarecord(frozen=True)
class Decision:
    """The person's answer to an `ApprovalRequest`."""

    verdict: Literal["yes", "no", "always"]
    reason: str = ""


Approver = Callable[[ApprovalRequest], Decision]


@datarecord(frozen=True)
class Verdict:
    """The policy's answer for one tool call: run it (and where), or what to say instead."""

    allowed: bool
    message: str = ""
    """When refused: what the model is told."""
    summary: str = ""
    """When refused: one line for the person (`declined`, `refused in plan mode`)."""
    sandbox: Sandbox | None = None
    """When an allowed bash call: the sandbox it runs in (None: unconfined)."""
    escalate: Callable[[str], bool] | None = None
    """When an allowed bash call: asks the user to re-run it outside the sandbox after the sandbox
    blocked it (default mode, with someone to ask); None otherwise."""


@datarecord
class Policy:
    """The session's permission mode and what the person allowed for good."""

    mode: str = "default"
    approver: Approver | None = None
    """None means no one is there to ask (headless without a TTY)."""
    always_tools: set[str] = field(default_factory=set)
    always_commands: set[str] = field(default_factory=set)
    sandbox: Sandbox | None = None
    """The configured sandbox (workspace-write or read-only); None when the user turned it off."""
    sandbox_problem: str = ""
    """Why the configured sandbox cannot run here ("" when it can); read through `problem()`."""
    probe: Callable[[], str] | None = field(default=None, repr=False, compare=False)
    """-p's sandbox probe while its answer is not in (it runs once the first request is out): called by
    the first decision that reads `sandbox_problem`, which waits for it and keeps its answer."""
    root: Path | None = None
    """The project root, to tell a write to a protected path (`.git/hooks`, `.envrc`, ...); None: not checked."""

    def check(self, call: ToolCall, args: dict[str, Any], mutating: bool, preview: str) -> Verdict:
        if not mutating:
            return Verdict(True)
        if facts_for(call.name).is_shell:
            return self._check_bash(call, args, preview)
        if self.mode == "plan":
            return self._plan_refusal(call.name)
        protected = self._protected(args)
        if protected:  # asks in every mode, never "always": it runs later, outside any sandbox
            return self._ask(ApprovalRequest(call, args, preview, danger=protected), "")
        if self.mode == "auto" or call.name in self.always_tools:
            return Verdict(True)
        return self._ask(ApprovalRequest(call, args, preview), "")

    def _protected(self, args: dict[str, Any]) -> str:
        """Why the file this call writes is protected, or ""."""
        path = args.get("path")
        if self.root is None or not isinstance(path, str) or not path or "\0" in path:
            return ""
        from swecli.tools.protected import protected_write

        try:
            target = (self.root / Path(path).expanduser()).resolve()
        except (RuntimeError, OSError):  # a symlink loop: the tool itself refuses the path
            return ""
        reason = protected_write(self.root, target)
        return f"writes {path}: {reason}" if reason else ""

    # -- bash ------------------------------------------------------------------------------------------

    def problem(self) -> str:
        """`sandbox_problem`, once a probe still running has answered (waited for here)."""
        probe = self.probe
        if probe is not None:
            self.sandbox_problem = probe()  # the same answer whoever asks first: sub-agents share this policy
            self.probe = None
        return self.sandbox_problem

    @property
    def confinement(self) -> Sandbox | None:
        """The sandbox bash runs in under the current mode, or None when it runs unconfined."""
        if self.sandbox is None or self.problem():
            return None
        return self._configured()

    @property
    def expected_confinement(self) -> Sandbox | None:
        """`confinement`, not waiting for a probe still running (taken to find nothing): what the tools get
        ready for while the model thinks (a spare sandbox). Never what a command runs in: `check` waits."""
        if self.probe is None:
            return self.confinement
        return None if self.sandbox is None else self._configured()

    def _configured(self) -> Sandbox:
        assert self.sandbox is not None
        return self.sandbox.read_only() if self.mode == "plan" else self.sandbox

    @property
    def unconfined_against_wishes(self) -> bool:
        """The user wants a sandbox but it cannot run: commands must not slip through unasked."""
        return self.sandbox is not None and bool(self.problem())

    def _check_bash(self, call: ToolCall, args: dict[str, Any], preview: str) -> Verdict:
        from swecli.tools.guard import dangerous_reason
        from swecli.tools.readonly import is_read_only

        command = str(args.get("command", ""))
        if not command.strip():
            return Verdict(True)  # nothing to run: the tool answers the malformed call itself
        danger = dangerous_reason(command)
        read_only = not danger and is_read_only(command)
        box = self.confinement
        if self.mode == "plan":
            if danger or not (read_only or box is not None):
                return self._plan_refusal(call.name, danger, shell=True)
            return Verdict(True, sandbox=box)
        allowed = self._allowed(call, args, box, command)
        if read_only or (not danger and self.mode == "auto" and not self.unconfined_against_wishes):
            return allowed
        if not danger and command in self.always_commands:
            return allowed
        note = UNSANDBOXED if self.unconfined_against_wishes else ""
        verdict = self._ask(ApprovalRequest(call, args, preview, danger, note), command)
        return allowed if verdict.allowed else verdict

    def _allowed(self, call: ToolCall, args: dict[str, Any], box: Sandbox | None, command: str) -> Verdict:
        escalate = None
        if box is not None and self.mode == "default" and self.approver is not None:
            escalate = partial(self._escalate, call, args, command)
        return Verdict(True, sandbox=box, escalate=escalate)

    def _escalate(self, call: ToolCall, args: dict[str, Any], command: str, why: str) -> bool:
        """Ask whether a command the sandbox blocked may run again outside it (never "always")."""
        assert self.approver is not None
        request = ApprovalRequest(call, args, command, f"{why}; run it again outside the sandbox?")
        return self.approver(request).verdict != "no"

    def _plan_refusal(self, tool: str, danger: str = "", *, shell: bool = False) -> Verdict:
        if not shell:
            why = f"{tool} is not available in plan mode (read-only)."
        elif danger:
            why = f"This command is not allowed in plan mode ({danger})."
        else:
            why = ("In plan mode without a sandbox, only read-only commands (cat, ls, grep, git status/log/diff, "
                   "...) may run.")
        return Verdict(False, f"{why} Explore with the read-only tools and finish by proposing a plan; the user "
                              "will switch modes to carry it out.", "refused in plan mode")

    # -- asking ----------------------------------------------------------------------------------------

    def _ask(self, request: ApprovalRequest, command: str) -> Verdict:
        if self.approver is None:
            why = f" ({request.danger or request.note})" if request.danger or request.note else ""
            fix = ("The user can re-run with --mode auto to allow changes without approval." if not request.note
                   else "The user can install bubblewrap, or set sandbox.mode = \"off\", to allow it.")
            if request.call.name != "bash" and request.danger:
                fix = ("Protected paths need a person's approval in every mode, --mode auto included: the user can "
                       "make this change themselves, or approve it in the REPL (swecli).")
            auto_helps = not request.note and not (request.call.name != "bash" and request.danger)
            return Verdict(False, f"{request.call.name} needs the user's approval{why}, and no one is there to "
                                  f"approve it (non-interactive run). {fix}",
                           "refused: needs approval" + (" (use --mode auto)" if auto_helps else ""))
        decision = self.approver(request)
        if decision.verdict == "always" and not request.danger:
            if command:
                self.always_commands.add(command)
            else:
                self.always_tools.add(request.call.name)
        if decision.verdict == "no":
            said = decision.reason.strip()
            reason = f" Their reason: {said}{'' if said.endswith(('.', '!', '?')) else '.'}" if said else ""
            return Verdict(False, f"The user declined this {request.call.name} call.{reason} Do not retry it "
                                  "unchanged; adjust your approach or ask the user.", "declined by user")
        return Verdict(True)
