"""How the loop reads a reply that is not simply an answer or a set of tool calls.

`read_reply` looks at the finish reason and the message and says what the loop does next and what
the user is told:
- cut at the output limit (`length`; Anthropic `max_tokens`) with no tool call: the turn ends with
  the partial answer and a sentence saying it was cut and how to get the rest;
- cut while writing a tool call: the cut call is not run; the model gets an error result saying
  why, and the loop goes on so it can retry with smaller arguments (complete calls of the same
  reply run as usual);
- Anthropic `pause_turn`: the turn is not over; the loop sends the history back as it is and the
  model continues;
- `refusal` (OpenAI's `refusal` field, Anthropic's stop reason) and OpenAI's `content_filter`: the
  turn ends as a refusal;
- no text and no tool call: the turn ends saying the answer was empty, instead of printing nothing.
"""

from __future__ import annotations

import json
from typing import Literal

from swecli.llm.base import ResponseDone
from swecli.messages import AssistantMessage, ToolCall, ToolMessage
from swecli.records import datarecord

Action = Literal["finish", "run_tools", "continue"]


@datarecord(frozen=True)
class ReplyVerdict:
    """What the loop does with a reply: run its tool calls, finish the turn, or continue it."""

    action: Action
    stop_reason: str = "done"
    """For a finished turn: done | output_limit | refused | empty."""
    notice: str = ""
    """One sentence for the user, when the reply needs explaining."""
    cut_calls: frozenset[str] = frozenset()
    """Ids of tool calls cut short by the output limit: answered with an error, never run."""


@datarecord(frozen=True)
class OutputLimit:
    """The `max_tokens` a request sent, and what set it: the configured reply size, or the window (a
    quarter of it at most, and never more than the prompt left). A warning about a cut answer names the
    number that was sent, and the fix for what limited it: raising a setting that was not the limit
    would not help."""

    sent: int
    configured: int = 0
    """`Settings.max_tokens` (0: unknown, taken as the limit)."""
    window: int = 0
    """The context window planned with (0: unknown)."""

    @property
    def by_window(self) -> bool:
        return 0 < self.sent < self.configured and self.window > 0

    def describe(self) -> str:
        if not self.by_window:
            return f"max_tokens {self.sent:,}"
        if self.sent == self.window // 4:
            return (f"max_tokens {self.sent:,}: the configured {self.configured:,} is capped at a quarter of the "
                    f"{self.window:,}-token context window")
        return f"max_tokens {self.sent:,}: all the {self.window:,}-token context window had left after the prompt"

    def advice(self) -> str:
        if not self.by_window:
            return "raise max_tokens"
        return ("give the model a larger context window (llama-server -c, Ollama num_ctx, LM Studio's context "
                "length; then context_limit if swecli does not learn it) or /compact")


def read_reply(done: ResponseDone, limit: OutputLimit | int) -> ReplyVerdict:
    """`limit`: the output limit the request was sent with (a bare number: max_tokens as configured)."""
    limit = limit if isinstance(limit, OutputLimit) else OutputLimit(limit)
    message, finish = done.message, done.finish_reason
    if finish == "pause_turn":
        return ReplyVerdict("continue")
    if message.tool_calls:
        return _with_calls(message, finish, limit)
    if finish == "refusal":
        return ReplyVerdict("finish", "refused", "the model refused this request"
                            + ("" if message.content.strip() else " (it gave no explanation)"))
    if finish == "content_filter":
        return ReplyVerdict("finish", "refused", "the provider's content filter stopped the answer")
    if finish == "length":
        if message.content.strip():
            return ReplyVerdict("finish", "output_limit",
                                f"the answer was cut at the output limit ({limit.describe()}); "
                                f"ask it to continue, or {limit.advice()}")
        what = "reasoning" if message.reasoning.strip() else "nothing visible"
        return ReplyVerdict("finish", "output_limit",
                            f"the model reached the output limit ({limit.describe()}) before answering "
                            f"({what}); {limit.advice()}, or ask a narrower question")
    if not message.content.strip():
        said = "only reasoning, no text" if message.reasoning.strip() else "no text"
        return ReplyVerdict("finish", "empty", f"the model returned an empty answer ({said} and no tool call)")
    return ReplyVerdict("finish")


def _with_calls(message: AssistantMessage, finish: str, limit: OutputLimit) -> ReplyVerdict:
    if finish != "length":
        return ReplyVerdict("run_tools")
    cut = frozenset(call.id for call in message.tool_calls if not arguments_complete(call))
    if not cut:
        return ReplyVerdict("run_tools")
    names = ", ".join(sorted({c.name for c in message.tool_calls if c.id in cut}))
    return ReplyVerdict("run_tools", notice=f"a {names} call was cut at the output limit ({limit.describe()}) "
                                            "and not run; the model was asked to retry with smaller arguments",
                        cut_calls=cut)


def arguments_complete(call: ToolCall) -> bool:
    """A cut-off JSON object never parses; a complete one does."""
    try:
        return isinstance(json.loads(call.arguments or "{}"), dict)
    except ValueError:
        return False


def cut_call_result(call: ToolCall, max_tokens: int) -> ToolMessage:
    """What the model reads instead of running a call whose arguments the output limit cut off."""
    return ToolMessage(
        tool_call_id=call.id, name=call.name, is_error=True,
        content=(f"Not run: this {call.name} call was cut off at the output limit ({max_tokens:,} tokens) before "
                 f"its arguments were complete ({len(call.arguments):,} characters arrived). Retry with smaller "
                 "arguments: split large content over several calls (write the first part, then append or "
                 "edit in further calls), and keep any text before the call short."),
    )
