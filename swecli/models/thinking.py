"""The `thinking` setting: what the user asks for, and what each wire format sends for it.

One setting covers both kinds of reasoning control:
- Anthropic extended thinking takes a token budget (`thinking: {type: enabled, budget_tokens}`).
  The budget comes on top of `max_tokens` (the request asks for `max_tokens + budget`), so turning
  thinking on never shrinks the room for the answer and its tool calls.
- OpenAI reasoning models take an effort (`reasoning_effort: low | medium | high`).

Values: `off`; `on` (medium); `low` / `medium` / `high`; or a budget in tokens (at least 1024,
Anthropic's minimum), whose effort is derived from its size. `on` and a budget reach the OpenAI
wire only for models known to reason (`is_reasoning_model`), because other models answer 400 to an
unknown parameter; naming an effort sends it to any OpenAI-compatible model, since the user asked
for exactly that (a server swecli does not know may serve a reasoning model).
"""

from __future__ import annotations

from swecli.records import datarecord

EFFORT_BUDGETS = {"low": 2_048, "medium": 8_192, "high": 24_576}
"""The Anthropic budget an effort word stands for."""
MIN_BUDGET = 1_024
"""Anthropic's smallest `budget_tokens`."""
REASONING_MODELS = ("o1", "o3", "o4", "gpt-5", "gpt-oss", "grok-3-mini")
"""Model families (name prefixes, after any `vendor/`) that accept `reasoning_effort`."""
OFF_WORDS = frozenset({"off", "false", "no", "none", "0", ""})
ON_WORDS = frozenset({"on", "true", "yes"})


@datarecord(frozen=True)
class Thinking:
    """How much the model may think before answering, in each wire's own terms."""

    budget: int = 0
    """Anthropic `budget_tokens`; 0 means off."""
    effort: str = ""
    """OpenAI `reasoning_effort`; "" means off."""
    named_effort: bool = False
    """The user named the effort (`low`/`medium`/`high`): sent to any OpenAI-compatible model."""

    @property
    def on(self) -> bool:
        return self.budget > 0

    @classmethod
    def parse(cls, value: str | int | None) -> Thinking:
        """The setting from its text (config file, environment, `/thinking`); ValueError with one
        sentence for anything else."""
        text = str(value if value is not None else "").strip().lower().replace("_", "").replace(",", "")
        if text in OFF_WORDS:
            return cls()
        if text in ON_WORDS:
            return cls(EFFORT_BUDGETS["medium"], "medium")
        if text in EFFORT_BUDGETS:
            return cls(EFFORT_BUDGETS[text], text, named_effort=True)
        if text.isdigit():
            budget = int(text)
            if budget < MIN_BUDGET:
                raise ValueError(f"a thinking budget must be at least {MIN_BUDGET} tokens (got {budget})")
            return cls(budget, effort_for(budget))
        raise ValueError(f"thinking must be off, on, low, medium, high or a token budget (got {value!r})")

    def describe(self, wire: str = "", model: str = "") -> str:
        """What this setting sends to `model` on `wire` ("anthropic" | "openai"), in a few words."""
        if not self.on:
            return "off"
        if wire == "anthropic":
            return f"on: thinking budget {self.budget:,} tokens per response (on top of max_tokens)"
        if wire == "openai":
            effort = self.openai_effort(model)
            if effort:
                return f"on: reasoning_effort {effort}"
            return (f"on, but {model or 'this model'} is not a known reasoning model, so nothing is sent "
                    f"(name an effort, e.g. `high`, to send reasoning_effort anyway)")
        return f"{self.effort} (Anthropic budget {self.budget:,} tokens, OpenAI reasoning_effort {self.effort})"

    def setting(self) -> str:
        """The canonical text of this value (what `parse` reads back)."""
        if not self.on:
            return "off"
        return self.effort if self.named_effort else str(self.budget)

    def openai_effort(self, model: str) -> str:
        """The `reasoning_effort` to send to `model`, or "" to send none."""
        if not self.on:
            return ""
        return self.effort if self.named_effort or is_reasoning_model(model) else ""


def effort_for(budget: int) -> str:
    if budget < 4_096:
        return "low"
    return "medium" if budget < 16_384 else "high"


def is_reasoning_model(model: str) -> bool:
    name = model.lower().rsplit("/", 1)[-1]
    return name.startswith(REASONING_MODELS)
