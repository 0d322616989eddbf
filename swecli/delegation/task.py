"""The `task` tool: the model hands a self-contained job to a sub-agent and gets its report back.

Several `task` calls in one reply run side by side (`Tool.concurrent`, bounded by
`subagents.parallel`). The result is the child's condensed report, headed by one line that says
which agent ran, how it ended and what it cost; a cancelled or failed child says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from swecli.tools.base import Tool, ToolContext, ToolError, ToolResult
from swecli.tools.facts import ToolFacts, declare, one_line

if TYPE_CHECKING:
    from swecli.delegation.definitions import AgentCatalog
    from swecli.delegation.runner import ChildOutcome, Delegator

TOOL_NAME = "task"
ENDINGS = {
    "done": "finished",
    "budget": "stopped at its token budget",
    "iteration_limit": "stopped at its step limit",
    "cancelled": "was cancelled by the user",
    "error": "failed",
}


def describe_task(args: Mapping[str, Any]) -> str:
    """`explore: Find DB config`: which agent, on what."""
    return f"{args.get('agent') or 'explore'}: {one_line(args.get('description') or args.get('prompt', ''), 80)}"


FACTS = ToolFacts(kind="agent", icon="🤖", verb="task", describe=describe_task, key_args=("agent", "description"))
declare(TOOL_NAME, FACTS)


class TaskArgs(BaseModel):
    description: str = Field(description="A 3-6 word label for the job, shown to the user.")
    prompt: str = Field(description="The whole job, self-contained, and what the report should contain.")
    agent: str = Field("explore", description="Which sub-agent runs it.")


def task_tool(agents: AgentCatalog, delegator: Callable[[], Delegator]) -> Tool[TaskArgs]:
    """The tool offering `agents`; `delegator` gives the session's one runner, made on the first call (the
    runner's module is not imported on the way to a session's first request)."""

    def run(args: TaskArgs, ctx: ToolContext) -> ToolResult:
        from swecli.delegation.runner import resolve_agent

        try:
            agent = resolve_agent(agents, args.agent)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        call_id = ctx.call_id or f"task-{id(args):x}"
        runner = delegator()
        outcome = runner.run(call_id, agent, args.prompt)
        return _result(agent.name, outcome, runner.transcript_for(call_id))

    listing = "\n".join(f"- {a.name}: {a.description}" for a in agents.agents)
    return Tool(
        name=TOOL_NAME,
        description=(
            "Hand a self-contained job to a sub-agent with a fresh context and get back only its report. Use it "
            "for exploration that would fill your context with files you will not need again (where is X "
            "defined or configured, how does a feature work across files). It sees nothing of this "
            "conversation: put all it needs in `prompt`. Several task calls in one reply run in parallel.\n"
            f"Sub-agents:\n{listing}"),
        args=TaskArgs,
        fn=run,
        concurrent=True,
        facts=FACTS,
    )


def _result(agent: str, outcome: ChildOutcome, transcript: str) -> ToolResult:
    ending = ENDINGS.get(outcome.stop_reason, outcome.stop_reason)
    cost = f"{outcome.steps} step(s), {outcome.tool_calls} tool call(s), {outcome.usage.total_tokens:,} tokens"
    where = f"; transcript: {transcript}" if transcript else ""
    header = f"[sub-agent {agent} {ending}: {cost}{where}]"
    failed = outcome.stop_reason in ("cancelled", "error")
    return ToolResult(f"{header}\n{outcome.report}", is_error=failed,
                      summary=f"{agent} {ending} · {outcome.tool_calls} tools · {outcome.usage.total_tokens:,} tokens",
                      meta={"agent": agent, "stop_reason": outcome.stop_reason, "transcript": transcript})
