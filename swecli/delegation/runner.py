"""Running one sub-agent for a `task` call: a fresh context, its own budget, one condensed report back.

The child is built by the assembly (`Spawn`), so it goes through the same `Agent` loop, tools,
`Policy` (modes, approvals, the dangerous-command guard) and tool context (sandbox) as its parent;
this module only decides how it runs and what the parent gets back:

- its cancel token follows the parent's (Esc stops every child) but not the other way round, so a
  child that runs out of budget stops alone;
- it stops at its iteration limit or token budget; then it gets one last request to write its
  report from what it found (no more tools);
- every event it emits reaches the parent's bus wrapped in a `ChildEvent` naming the parent's call
  (the REPL folds them under that call; the recorder writes the child's transcript and links it);
- the report is cut to `report_tokens`, with a pointer to the full transcript.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import field
from typing import Protocol

from swecli.config import SubagentsConfig
from swecli.context.tokens import head_by_tokens
from swecli.delegation.definitions import AgentCatalog, AgentDefinition
from swecli.events import ChildEvent, Event, ModelCallFinished, ToolStarted, TurnFinished
from swecli.llm.base import CancelToken, Provider
from swecli.messages import AssistantMessage, Message, Usage
from swecli.records import datarecord

WRAP_UP = ("Stop here: you have used your budget for this job. Do not call any more tools. Write your report "
           "now from what you have found so far, and say what is left unexplored.")
POLL = 0.05


@datarecord
class LinkedCancel(CancelToken):
    """Cancelled when cancelled itself or when `parent` is (the child's token: Esc reaches it)."""

    parent: CancelToken | None = None

    @property
    def cancelled(self) -> bool:
        return self._event.is_set() or (self.parent is not None and self.parent.cancelled)

    def wait(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while not self.cancelled:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._event.wait(min(POLL, left))
        return True


class ChildAgent(Protocol):
    """What delegation needs of the child loop (`swecli.agent.Agent` is one)."""

    provider: Provider
    history: list[Message]
    max_iterations: int

    def run(self, task: str) -> TurnFinished: ...


Spawn = Callable[[AgentDefinition, CancelToken, Callable[[Event], None]], ChildAgent]
"""(definition, the child's cancel token, where its events go) -> a ready child with a fresh context."""


@datarecord(frozen=True)
class ChildOutcome:
    """What a sub-agent's run gives back: its report and what it cost."""

    report: str
    stop_reason: str
    """done | budget | iteration_limit | cancelled | error"""
    steps: int
    usage: Usage
    tool_calls: int


@datarecord
class Delegator:
    """Runs sub-agents for one parent session (shared by every `task` call, possibly in parallel)."""

    agents: AgentCatalog
    spawn: Spawn
    parent_cancel: CancelToken
    on_event: Callable[[Event], None]
    config: SubagentsConfig = field(default_factory=SubagentsConfig)
    count: Callable[[str], int] = lambda text: len(text) // 4
    transcript_for: Callable[[str], str] = lambda call_id: ""
    """Where the recorder writes the child transcript of a parent call ("" when nothing is recorded)."""

    def run(self, call_id: str, agent: AgentDefinition, prompt: str) -> ChildOutcome:
        cancel = LinkedCancel(parent=self.parent_cancel)
        watch = _Watch(self.config.max_tokens, cancel)
        started = time.monotonic()

        def forward(event: Event) -> None:
            watch.see(event)
            if not isinstance(event, TurnFinished):  # one outcome per call, below (a wrap-up is a second run)
                self.on_event(ChildEvent(call_id, agent.name, event))

        child = self.spawn(agent, cancel, forward)
        try:
            turn = child.run(prompt)
            reason = self._reason(turn, watch)
            answer = turn.answer if reason == "done" else self._wrap_up(child, reason, cancel)
        except Exception as exc:  # a provider error in the child must not end the parent's turn
            reason, answer = "error", f"The sub-agent failed: {exc}"
        finally:
            child.provider.close()
        report = self._bounded(answer, call_id)
        self.on_event(ChildEvent(call_id, agent.name, TurnFinished(
            report, watch.steps, watch.usage, time.monotonic() - started, reason, tool_calls=watch.tools)))
        return ChildOutcome(report, reason, watch.steps, watch.usage, watch.tools)

    def _reason(self, turn: TurnFinished, watch: _Watch) -> str:
        if watch.over_budget:
            return "budget"
        if turn.stop_reason == "interrupted":
            return "cancelled"
        return turn.stop_reason

    def _wrap_up(self, child: ChildAgent, reason: str, cancel: LinkedCancel) -> str:
        """After a limit: one more request for the report, no tools allowed (the user's Esc skips it)."""
        if reason == "cancelled" or self.parent_cancel.cancelled:
            return _findings(child.history, "The sub-agent was cancelled by the user before it finished.")
        cancel.reset()
        child.max_iterations = 1
        turn = child.run(WRAP_UP)
        if turn.stop_reason == "done" and turn.answer.strip():
            return turn.answer
        return _findings(child.history, "The sub-agent stopped before writing a report.")

    def _bounded(self, answer: str, call_id: str) -> str:
        answer = answer.strip() or "(the sub-agent returned no text)"
        limit = self.config.report_tokens
        if self.count(answer) <= limit:
            return answer
        where = self.transcript_for(call_id)
        more = f"; the whole report is in {where}" if where else ""
        return f"{head_by_tokens(answer, limit, self.count).rstrip()}\n[report cut at {limit} tokens{more}]"


@datarecord
class _Watch:
    """Counts a child's steps, tools and tokens from its events, and stops it at its token budget."""

    budget: int
    cancel: CancelToken
    steps: int = 0
    tools: int = 0
    usage: Usage = field(default_factory=Usage)
    over_budget: bool = False

    def see(self, event: Event) -> None:
        if isinstance(event, ToolStarted):
            self.tools += 1
        elif isinstance(event, ModelCallFinished):
            self.steps += 1
            self.usage = self.usage + event.usage
            if self.usage.total_tokens >= self.budget and not self.over_budget:
                self.over_budget = True
                self.cancel.cancel()


def _findings(history: list[Message], why: str) -> str:
    """A report made from the child's own words so far, when it could not write one."""
    said = [m.content.strip() for m in history if isinstance(m, AssistantMessage) and m.content.strip()]
    if not said:
        return f"{why} It had not reported anything yet."
    return f"{why} What it had said so far:\n" + "\n\n".join(said[-3:])


def resolve_agent(agents: AgentCatalog, name: str) -> AgentDefinition:
    """The named agent; ValueError with the list of known ones when there is none."""
    agent = agents.get(name or "explore")
    if agent is None:
        raise ValueError(f"There is no sub-agent named {name!r}. Available: {', '.join(agents.names())}.")
    return agent
