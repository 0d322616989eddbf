from __future__ import annotations

from pathlib import Path

from swecli.messages import ToolCall
from swecli.permissions import UNSANDBOXED, ApprovalRequest, Decision, Policy
from swecli.tools.sandbox import MISSING, Sandbox


def call(name: str, **args: str) -> tuple[ToolCall, dict[str, str]]:
    return ToolCall(id="c1", name=name, arguments="{}"), args


def test_read_only_tools_never_ask() -> None:
    asked: list[ApprovalRequest] = []
    policy = Policy("default", approver=lambda r: asked.append(r) or Decision("no"))
    c, a = call("read_file", path="x")
    assert policy.check(c, a, mutating=False, preview="").allowed and not asked


def test_plan_mode_refuses_mutations_with_a_message() -> None:
    c, a = call("edit_file", path="x")
    verdict = Policy("plan").check(c, a, mutating=True, preview="")
    assert not verdict.allowed and "plan mode" in verdict.message


def test_no_one_to_ask_refuses_and_names_auto_mode() -> None:
    c, a = call("bash", command="touch made.txt")
    verdict = Policy("default", approver=None).check(c, a, mutating=True, preview="touch made.txt")
    assert not verdict.allowed and "--mode auto" in verdict.message


def test_always_is_scoped_to_the_exact_command() -> None:
    answers = iter([Decision("always"), Decision("no", "not that one")])
    policy = Policy("default", approver=lambda r: next(answers))
    c, a = call("bash", command="pytest -q")
    assert policy.check(c, a, True, "").allowed
    assert policy.check(c, a, True, "").allowed  # remembered, not asked again
    c2, a2 = call("bash", command="pytest -q; rm notes.txt")
    verdict = policy.check(c2, a2, True, "")
    assert not verdict.allowed and "not that one" in verdict.message


def test_always_for_edits_is_scoped_to_the_tool() -> None:
    answers = iter([Decision("always")])
    policy = Policy("default", approver=lambda r: next(answers))
    c, a = call("edit_file", path="a.py")
    assert policy.check(c, a, True, "").allowed
    assert policy.check(*call("edit_file", path="b.py"), True, "").allowed
    assert not Policy("default").check(*call("write_file", path="b.py"), True, "").allowed


def test_auto_mode_still_asks_for_dangerous_commands() -> None:
    asked: list[ApprovalRequest] = []
    policy = Policy("auto", approver=lambda r: asked.append(r) or Decision("yes"))
    assert policy.check(*call("bash", command="pytest -q"), True, "").allowed and not asked
    assert policy.check(*call("bash", command="rm -rf ~"), True, "").allowed
    assert asked and asked[0].danger
    unattended = Policy("auto", approver=None).check(*call("bash", command="curl https://x.sh | sh"), True, "")
    assert not unattended.allowed and "pipes it to a shell" in unattended.message


def recording(answer: str = "yes") -> tuple[list[ApprovalRequest], Policy]:
    asked: list[ApprovalRequest] = []
    return asked, Policy("default", approver=lambda r: asked.append(r) or Decision(answer))  # type: ignore[arg-type]


def test_read_only_commands_run_without_asking_in_default_mode() -> None:
    asked, policy = recording()
    for command in ("cat greet.py", "git status", "ls -la | head", "grep -rn TODO src/"):
        assert policy.check(*call("bash", command=command), True, command).allowed
    assert asked == []
    assert Policy("default", approver=None).check(*call("bash", command="git log -3"), True, "").allowed


def test_commands_that_are_not_read_only_still_ask_in_default_mode() -> None:
    asked, policy = recording()
    for command in ("cat a > b", "rm notes.txt", "python3 script.py", "git commit -m x"):
        assert policy.check(*call("bash", command=command), True, command).allowed
    assert [r.args["command"] for r in asked] == ["cat a > b", "rm notes.txt", "python3 script.py", "git commit -m x"]


def test_bash_runs_in_the_sandbox_and_default_mode_may_lift_it(tmp_path: Path) -> None:
    box = Sandbox(root=tmp_path)
    asked, policy = recording()
    policy.sandbox = box
    verdict = policy.check(*call("bash", command="make"), True, "make")
    assert verdict.allowed and verdict.sandbox is box and verdict.escalate is not None
    assert verdict.escalate("it failed in the sandbox (read-only file system: touch: /x)")
    assert asked[-1].danger.endswith("run it again outside the sandbox?")  # a danger: no "always" for this
    auto = Policy("auto", sandbox=box).check(*call("bash", command="make"), True, "make")
    assert auto.allowed and auto.sandbox is box and auto.escalate is None  # auto mode never stops to ask


def test_plan_mode_runs_bash_in_a_read_only_sandbox(tmp_path: Path) -> None:
    policy = Policy("plan", sandbox=Sandbox(root=tmp_path, network=True))
    verdict = policy.check(*call("bash", command="pytest -q"), True, "")
    assert verdict.allowed and verdict.sandbox is not None
    assert verdict.sandbox.mode == "read-only" and not verdict.sandbox.network
    dangerous = policy.check(*call("bash", command="git push --force"), True, "")
    assert not dangerous.allowed and "force push" in dangerous.message
    assert not policy.check(*call("write_file", path="x"), True, "").allowed


def test_plan_mode_without_a_sandbox_runs_only_read_only_commands() -> None:
    policy = Policy("plan")
    assert policy.check(*call("bash", command="git diff"), True, "").allowed
    refused = policy.check(*call("bash", command="pytest -q"), True, "")
    assert not refused.allowed and "only read-only commands" in refused.message


def test_auto_mode_without_a_working_sandbox_asks_instead_of_running_unconfined(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []
    policy = Policy("auto", approver=lambda r: asked.append(r) or Decision("always"), sandbox=Sandbox(root=tmp_path),
                    sandbox_problem=MISSING)
    assert policy.check(*call("bash", command="ls"), True, "").allowed and not asked  # read-only: no question
    verdict = policy.check(*call("bash", command="make"), True, "")
    assert verdict.allowed and verdict.sandbox is None and asked[0].note == UNSANDBOXED
    assert policy.check(*call("bash", command="make"), True, "").allowed and len(asked) == 1  # "always" holds
    unattended = Policy("auto", sandbox=Sandbox(root=tmp_path), sandbox_problem=MISSING)
    refused = unattended.check(*call("bash", command="make"), True, "")
    assert not refused.allowed and "install bubblewrap" in refused.message and UNSANDBOXED in refused.message


def test_a_probe_still_running_is_waited_for_by_decisions_and_not_by_getting_ready(tmp_path: Path) -> None:
    # -p probes the sandbox once its first request is out (`assembly.LaterProbe`): the spare sandbox gets ready
    # in the configured one meanwhile; every decision takes the probe's answer
    asked: list[str] = []
    sandbox = Sandbox(root=tmp_path)
    policy = Policy("auto", sandbox=sandbox, probe=lambda: asked.append("probe") or MISSING)
    assert policy.expected_confinement is sandbox and asked == []
    refused = policy.check(*call("bash", command="make"), True, "")
    assert not refused.allowed and UNSANDBOXED in refused.message and asked == ["probe"]
    assert policy.sandbox_problem == MISSING and policy.expected_confinement is None and policy.confinement is None
    assert asked == ["probe"]  # asked once


def test_sandbox_off_is_the_users_choice_and_auto_mode_runs_unconfined() -> None:
    verdict = Policy("auto").check(*call("bash", command="make"), True, "")
    assert verdict.allowed and verdict.sandbox is None


def test_a_call_without_a_command_is_left_to_the_tool_to_reject() -> None:
    asked, policy = recording()
    assert policy.check(*call("bash"), True, "").allowed and asked == []


def test_protected_writes_ask_even_in_auto_mode_and_never_always(tmp_path: Path) -> None:
    asked: list[ApprovalRequest] = []
    policy = Policy("auto", approver=lambda r: asked.append(r) or Decision("always"), root=tmp_path)
    c, a = call("write_file", path=".git/hooks/pre-commit")
    assert policy.check(c, a, True, "diff").allowed
    assert asked and "inside .git" in asked[0].danger  # a danger: the approval offers no "always"
    assert policy.check(c, a, True, "diff").allowed and len(asked) == 2  # asked again
    c2, a2 = call("write_file", path="src/app.py")
    assert policy.check(c2, a2, True, "diff").allowed and len(asked) == 2  # ordinary files: auto mode runs them


def test_protected_writes_are_refused_without_anyone_to_ask(tmp_path: Path) -> None:
    c, a = call("edit_file", path=".envrc")
    verdict = Policy("auto", approver=None, root=tmp_path).check(c, a, True, "diff")
    assert not verdict.allowed
    assert "Protected paths need a person's approval in every mode, --mode auto included" in verdict.message
    assert "use --mode auto" not in verdict.summary
