"""Goal recitation: the current goal, todo progress and next step, restated in the dynamic tail.

Long tasks drift: after dozens of tool results the request the person made is far behind the
model's attention. Restating it at the end of the prompt (Manus' todo.md trick) keeps it in view.
It is not restated every turn (that is noise the model learns to ignore); it fires

- every `every` iterations of a task,
- sooner when the recent conversation drifts from the goal: the share of the goal's terms that
  appear in the last few assistant and tool messages falls below `drift_threshold`,
- sooner as the context fills (`fill_ratio` from the context engine), when compaction is near and
  the original request is most at risk.

`tail_text` returns "" when nothing is recited this turn; `last` says what was decided and why, so
the decision can be logged and shown in `/context`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from swecli.context.todo import TodoState
from swecli.context.tokens import IdentityCache
from swecli.lazy import regex
from swecli.messages import AssistantMessage, Message, ToolMessage, UserMessage
from swecli.records import datarecord

GOAL_CHARS = 400
"""The goal is truncated to this many characters in the recitation."""
RECENT_CHARS = 4_000
"""Per message, how much of the recent text is scanned for goal terms (tool outputs can be huge)."""

_STOPWORD_TEXT = """
    a about above after again all also am an and any are as at be because been before being below
    between both but by can could did do does doing done down during each either else even ever every
    few for from further had has have having here how however i if in into is it its itself just let
    like make may me might more most must my need no nor not now of off on once only or other our out
    over own please same see should so some still such than that the their them then there these they
    this those through to too under until up use used using very via want was way we well were what
    when where which while who why will with would yes you your
    add change changes check fix get got help look new run show sure tell thing things try work
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = regex(r"[A-Za-z][A-Za-z0-9_]*")
_CAMEL = regex(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def terms(text: str) -> set[str]:
    """Content words of `text`: lowercased, identifiers split (snake_case, CamelCase) and kept whole,
    short words and stopwords dropped, a plural `s` folded so `tests` meets `test`."""
    return set(_terms(text))


@functools.lru_cache(maxsize=16)
def _terms(text: str) -> frozenset[str]:
    """`terms`, remembered for the few texts asked about again and again (the goal, its prompts)."""
    out: set[str] = set()
    for word in set(_WORD.findall(text)):  # outputs repeat their words: each is split once
        out |= _word_terms(word)
    return frozenset(out)


@functools.lru_cache(maxsize=65_536)
def _word_terms(word: str) -> frozenset[str]:
    word = word.rstrip("_")
    parts = {word}
    for piece in word.split("_"):
        parts.update([piece, *_CAMEL.findall(piece)] if not piece.islower() else [piece])
    folded = (_fold(part.lower()) for part in parts)
    return frozenset(term for term in folded if len(term) >= 3 and term not in _STOPWORDS)


def _fold(word: str) -> str:
    if "_" in word or len(word) <= 4 or not word.endswith("s") or word.endswith("ss"):
        return word  # identifiers stay exact
    return word[:-1]


@datarecord(frozen=True)
class Decision:
    """What the recitation decided for one iteration (for logs and `/context`)."""

    iteration: int
    fired: bool
    reason: str
    """Why it fired (`interval`, `drift`, `context`), or why not (`no goal`, `not due (2/5)`)."""
    overlap: float | None
    """Share of goal terms seen in the recent messages; None when not measurable."""
    interval: int
    """The refresh interval in effect (shrinks on drift and as the context fills)."""


class Recitation:
    def __init__(
        self,
        todo: TodoState | None = None,
        every: int = 5,
        drift_threshold: float = 0.2,
        window: int = 6,
        fill_mid: float = 0.5,
        fill_high: float = 0.75,
    ) -> None:
        if every < 1:
            raise ValueError("recitation interval `every` must be at least 1")
        if not 0.0 <= drift_threshold <= 1.0:
            raise ValueError("drift_threshold must be between 0 and 1")
        self.todo = todo if todo is not None else TodoState()
        self.every = every
        self.drift_threshold = drift_threshold
        self.window = window
        self.fill_mid = fill_mid
        self.fill_high = fill_high
        self.goal = ""
        self.last: Decision | None = None
        self.fired_count = 0
        self._last_fired = 0
        self._last_iteration = 0
        self._text = ""
        self._message_terms = IdentityCache[frozenset[str]]()

    def tail_text(
        self, iteration: int, history: Sequence[Message], fill_ratio: float = 0.0, findings: Sequence[str] = (),
        goal: str | None = None,
    ) -> str:
        """The recitation block for this iteration's tail, or "" when it is not due.

        Asking twice for the same iteration (a retry after a context overflow) gives the same answer.
        `findings` are short lines worth keeping in view (e.g. compaction references); optional.
        `goal` is `goal_of(history)` when the caller knows it already (the context engine's ledger finds
        the prompts without reading the whole history).
        """
        goal = goal_of(history) if goal is None else goal
        if self.last is not None and (iteration, goal or self.goal) == (self._last_iteration, self.goal):
            return self._text
        if iteration < self._last_iteration or (goal and goal != self.goal):
            self._last_fired = 1  # a new task: the prompt itself was the latest statement of the goal
        if goal:
            self.goal = goal  # kept when compaction drops the prompt: that is when it matters most
        self._last_iteration = iteration
        decision = self._decide(iteration, history, fill_ratio)
        self.last = decision
        self._text = self._render(decision, findings) if decision.fired else ""
        if decision.fired:
            self._last_fired = iteration
            self.fired_count += 1
        return self._text

    def _decide(self, iteration: int, history: Sequence[Message], fill_ratio: float) -> Decision:
        if not self.goal:
            return Decision(iteration, False, "no goal", None, self.every)
        overlap = self._overlap(history)
        drifting = overlap is not None and overlap < self.drift_threshold
        candidates = [(self.every, f"interval: every {self.every} iterations")]
        if drifting:
            candidates.append((max(1, self.every // 2),
                               f"drift: goal-term overlap {overlap:.2f} < {self.drift_threshold:.2f}"))
        if fill_ratio >= self.fill_high:
            candidates.append((1, f"context: {fill_ratio:.0%} full"))
        elif fill_ratio >= self.fill_mid:
            candidates.append((max(1, self.every // 2), f"context: {fill_ratio:.0%} full"))
        interval, reason = min(candidates, key=lambda c: c[0])
        since = iteration - max(self._last_fired, 1)
        if since < interval or iteration <= 1:
            return Decision(iteration, False, f"not due ({since}/{interval})", overlap, interval)
        return Decision(iteration, True, reason, overlap, interval)

    def _overlap(self, history: Sequence[Message]) -> float | None:
        goal_terms = _terms(self.goal)
        recent = self._recent_terms(history)
        if len(goal_terms) < 2 or recent is None:
            return None  # too little to measure: never call a two-word goal "drifted"
        return len(goal_terms & recent) / len(goal_terms)

    def _recent_terms(self, history: Sequence[Message]) -> set[str] | None:
        """Terms of the last `window` assistant/tool messages after the latest prompt (each message's
        terms computed once); None if fewer than 2."""
        found: set[str] = set()
        seen = 0
        for msg in reversed(history):
            if isinstance(msg, UserMessage) and msg.kind == "prompt":
                break
            if not isinstance(msg, AssistantMessage | ToolMessage):
                continue
            cached = self._message_terms.get(msg)
            if cached is None:
                cached = _terms_uncached(_scanned_text(msg))
                self._message_terms.put(msg, cached)
            found |= cached
            seen += 1
            if seen >= self.window:
                break
        return found if seen >= 2 else None

    def _render(self, decision: Decision, findings: Sequence[str]) -> str:
        lines = ["[Reminder: current goal and progress]", "Goal: " + _clip(self.goal, GOAL_CHARS)]
        lines.append(self._progress())
        rest = [item.content for item in self.todo.open_items()][1:6]
        if rest:
            lines.append("Then: " + "; ".join(rest))
        if findings:
            lines.append("Key findings so far:")
            lines.extend("- " + _clip(f, 200) for f in list(findings)[:8])
        if decision.reason.startswith("drift"):
            lines.append("The last steps look unrelated to the goal: check they serve it, or get back to it.")
        return "\n".join(lines)

    def _progress(self) -> str:
        if not self.todo.items:
            return "Progress: no todo list (for multi-step work, write one with the todo tool)."
        step = self.todo.next_step()
        line = f"Progress: {self.todo.done}/{self.todo.total} done."
        return line + (f" Next step: {step.content}" if step else " All items done: verify and answer.")


def goal_of(history: Sequence[Message]) -> str:
    """The latest prompt the person typed; a short follow-up (`yes, go on`) keeps the prompt before it."""
    return goal_from([m.content for m in history if isinstance(m, UserMessage) and m.kind == "prompt"])


def goal_from(prompts: Sequence[str]) -> str:
    """`goal_of` given the prompts, oldest first (only the last non-empty two are read)."""
    latest = previous = ""
    for text in reversed(prompts):
        if text.strip():
            if latest:
                previous = text.strip()
                break
            latest = text.strip()
    if not latest:
        return ""
    if len(_terms(latest)) < 3 and previous:
        return previous + "\nThen: " + latest
    return latest


def _scanned_text(msg: AssistantMessage | ToolMessage) -> str:
    """What of a message the drift measure reads (tool outputs can be huge: their head only)."""
    if isinstance(msg, AssistantMessage):
        calls = " ".join(c.name + " " + c.arguments for c in msg.tool_calls)
        return (msg.content + " " + calls)[:RECENT_CHARS]
    return msg.content[:RECENT_CHARS]


_terms_uncached = _terms.__wrapped__


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
