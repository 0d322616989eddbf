"""The context-engineering mechanisms, as the loop meets them through the ContextManager.

The engine always holds a set: `Mechanisms` (built from `[context]` and `[images]` by
`ContextManager.from_settings`), or `NoMechanisms`, the same hooks doing nothing (an engine built
without them: tests, benchmarks). So no caller asks whether there is one.

Four are switchable in `[context]` config; each reports what it did (a Notice or a CompactionDone on
the event bus, and a line in `/context`):

- offload (`context.offload`): a large tool result is saved under `.swecli/tool_results/` and
  enters the history as a head+tail preview that says how to read the rest; a result the tool cut
  (`ToolResult.full`) is saved whole, always, so the tool's cap never loses output.
- decay (`context.decay`): old tool results fold into one-line digests, in rare batches that each
  save at least `decay_min_savings_tokens` (each batch rewrites the prefix once, like a compaction).
- recitation (`context.recitation`): goal, todo progress and next step in the dynamic tail.
- failure evidence (`context.failure_evidence`): repeated failures and loops noted in the tail.

Three are always on in a `Mechanisms` set (they cost nothing until they act, and turning them off would
only lose information):

- image stand-ins (tuned by `[images]` `keep_turns` and `batch_min_tokens`): images older than
  `keep_turns` user turns become one-line stand-ins, riding along with a decay batch (or a
  compaction), or in their own batch at the start of a user turn once they cost `batch_min_tokens`
  (see `swecli.context.images`).
- references: every summarizing compaction lists the references it drops, with pointers back.
- the append-only check: between two rewrites, each request must extend the previous one byte for
  byte; a violation is reported as a warning. Prefix reuse is measured for every request.

Per-turn work is proportional to what was appended (the meter's `Ledger` says where the prompts and
steps are): decay classifies each message once, the recitation reads each message's terms once, the
append-only check serializes only new messages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from swecli.config import ContextConfig, ImagesConfig
from swecli.context.compaction_params import SummarySection
from swecli.context.decay import DecayScan, saving_reference
from swecli.context.failures import FailureTracker
from swecli.context.images import age_images, pending_tokens
from swecli.context.ledger import Ledger
from swecli.context.offload import OFFLOAD_MARKER, Offloaded, OffloadError, offload, offload_full
from swecli.context.prefix import PrefixMonitor
from swecli.context.recitation import Recitation, goal_from
from swecli.context.todo import TodoState
from swecli.context.tokens import TokenCounter
from swecli.events import CompactionDone, Event, Notice
from swecli.llm.base import ModelRequest
from swecli.messages import AssistantMessage, Message, ToolCall, UserMessage
from swecli.session.secrets import Redactor
from swecli.tools.base import ToolResult

MAX_REFERENCES = 30
FINDINGS_IN_TAIL = 5
GOAL_PROMPTS = 4
"""The goal is read from the latest prompts only (a short follow-up points back to the one before)."""


class NoMechanisms:
    """The mechanisms switched off: every hook hands back what it is given and reports nothing. What an
    engine built without mechanisms holds, and the interface `Mechanisms` fills in."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.redactor: Redactor | None = None
        """Masks secrets in saved outputs (None: those of the environment)."""
        self.offloaded = self.decays = self.decay_saved = self.warnings = self.images_replaced = 0
        self.findings: list[str] = []
        """Top references from the latest compaction, kept in view by the recitation."""

    def use_counter(self, counter: TokenCounter) -> None:
        """Another tokenizer (after /model)."""
        self.counter = counter

    def tool_content(self, call: ToolCall, result: ToolResult) -> str:
        return result.content

    def decay(self, history: list[Message], ledger: Ledger, keep_recent_tokens: int) -> list[Message]:
        return history

    def age_images(self, history: list[Message], riding_along: bool = False) -> list[Message]:
        return history

    def tail(self, history: Sequence[Message], fill_ratio: float, ledger: Ledger | None = None) -> str:
        return ""

    def check(self, request: ModelRequest) -> None:
        return None

    def rewrite(self, reason: str) -> None:
        return None

    def summary_sections(self) -> tuple[SummarySection, ...]:
        """Extra sections for a compaction's summary message."""
        return ()

    def remember_references(self, history: Sequence[Message]) -> None:
        return None

    def resume(self, history: Sequence[Message]) -> None:
        """A resumed session's history, read once before its first request."""
        return None

    def summary_lines(self) -> list[str]:
        """For /context."""
        return []


class Mechanisms(NoMechanisms):
    def __init__(self, config: ContextConfig, counter: TokenCounter, root: Path, *, todo: TodoState | None = None,
                 on_event: Callable[[Event], None] | None = None, images: ImagesConfig | None = None,
                 redactor: Redactor | None = None) -> None:
        super().__init__(counter)
        self.config, self.root = config, root
        self.redactor = redactor
        self.todo = todo or TodoState()
        self.on_event: Callable[[Event], None] = on_event or _ignore
        self.images = images or ImagesConfig()
        self.failures = FailureTracker()
        self.recitation = Recitation(todo=self.todo)
        self.prefix = PrefixMonitor(counter)
        self._decay = DecayScan(counter)

    def use_counter(self, counter: TokenCounter) -> None:
        """Another tokenizer (after /model): counts made with the old one are dropped."""
        self.counter = counter
        self.prefix = PrefixMonitor(counter, stats=self.prefix.stats)
        self._decay = DecayScan(counter)

    # -- per tool result ----------------------------------------------------------------------------
    def tool_content(self, call: ToolCall, result: ToolResult) -> str:
        if self.config.failure_evidence:
            self.failures.observe(call, result.content, result.is_error)
        if not self.config.offload:
            if result.full is not None:
                result.full.discard()
                return f"{result.content}\n[swecli: the output above is cut and was not saved (context.offload " \
                       "is off); redirect it to a file to keep all of it]"
            return result.content
        try:
            saved = self._offload(call, result)
        except OffloadError as exc:
            self._notice("warning", f"could not offload a large {call.name} output ({exc}); kept it in full")
            return result.content
        if saved is None:
            return result.content
        if saved.saved:
            self.offloaded += 1
            kept = "a preview" if saved.content.startswith(OFFLOAD_MARKER) else "the tool's cut of it"
            self._notice("info", f"offloaded {call.name} output ({saved.tokens:,} tokens, {saved.lines:,} lines) "
                                 f"to {saved.path}; the context keeps {kept}")
        return saved.content

    def _offload(self, call: ToolCall, result: ToolResult) -> Offloaded | None:
        threshold, preview = self.config.offload_threshold_tokens, self.config.offload_preview_lines
        if result.full is not None:  # the tool cut its output: the whole of it is saved, always
            return offload_full(self.root, call.id, call.name, result.content, result.full, self.counter.text,
                                threshold, preview, redactor=self.redactor)
        return offload(self.root, call.id, call.name, result.content, self.counter.text, threshold, preview,
                       arguments=call.arguments, redactor=self.redactor)

    # -- at a turn boundary, before compaction --------------------------------------------------------
    def decay(self, history: list[Message], ledger: Ledger, keep_recent_tokens: int) -> list[Message]:
        """`ledger` is synced to `history`; each call reads only what was appended since the last one."""
        if not self.config.decay:
            return self.age_images(history)
        result = self._decay.run(history, ledger, keep_recent_tokens, self.config.decay_min_savings_tokens,
                                 reference_for=saving_reference(self.root, self.redactor))
        if not result.changed:
            return self.age_images(history)
        before = ledger.tokens()
        self.decays += 1
        self.decay_saved += result.saved_tokens
        self.on_event(CompactionDone("decay", "decay", before, before - result.saved_tokens, result.folded, 0.0,
                                     note=f"folded {result.folded} old tool outputs into digests"))
        self.rewrite("decay")
        return self.age_images(result.history, riding_along=True)

    def age_images(self, history: list[Message], riding_along: bool = False) -> list[Message]:
        """Old images become stand-ins: always when the prefix is being rewritten anyway (`riding_along`:
        a decay batch, a compaction), else only at the start of a user turn and when they cost enough."""
        keep, cost = self.images.keep_turns, self.counter.image_tokens
        if not riding_along and not (starts_turn(history) and
                                     pending_tokens(history, keep, cost) >= self.images.batch_min_tokens):
            return history
        result = age_images(history, keep, cost)
        if not result.replaced:
            return history
        self.images_replaced += result.replaced
        if not riding_along:
            before = self.counter.messages(history)
            self.on_event(CompactionDone("images", "decay", before, before - result.saved_tokens, result.replaced,
                                         0.0, note=f"{result.replaced} old image(s) replaced by one-line stand-ins"))
            self.rewrite("images")
        return result.history

    # -- per request ----------------------------------------------------------------------------------
    def tail(self, history: Sequence[Message], fill_ratio: float, ledger: Ledger | None = None) -> str:
        """`ledger`, synced to `history`, saves reading the whole history for the goal and the iteration."""
        parts = []
        if self.config.recitation:
            if ledger is None:
                iteration, goal = iteration_of(history), None
            else:
                since = ledger.assistants_after(ledger.prompts[-1]) if ledger.prompts else len(ledger.assistants)
                iteration = since + 1
                goal = goal_from([_content(ledger.messages[i]) for i in ledger.prompts[-GOAL_PROMPTS:]])
            parts.append(self.recitation.tail_text(iteration, history, fill_ratio, self.findings, goal))
        if self.config.failure_evidence:
            parts.append(self.failures.note())
        return "\n\n".join(p for p in parts if p)

    def check(self, request: ModelRequest) -> None:
        report = self.prefix.observe(request)
        if report.warning:
            self.warnings += 1
            self._notice("warning", f"prompt cache: {report.warning}")

    def rewrite(self, reason: str) -> None:
        """The history was rewritten on purpose: the next request may differ anywhere."""
        self.prefix.mark_rewrite(reason)

    # -- at compaction ----------------------------------------------------------------------------------
    def summary_sections(self) -> tuple[SummarySection, ...]:
        return (self.references_section,)

    def resume(self, history: Sequence[Message]) -> None:
        """Repeated failures survive a resume."""
        self.failures.replay(history)

    def references_section(self, span: Sequence[Message], archive: str, budget_tokens: int) -> str:
        """The summary's reference list (may run on the background summary's thread: no side effects)."""
        from swecli.context.references import extract_references, render_references  # at compaction only

        refs = extract_references(span, transcript=archive, limit=MAX_REFERENCES)
        text = render_references(refs, archive)
        while refs and self.counter.text(text) > budget_tokens:
            refs = refs[: len(refs) * 2 // 3]
            text = render_references(refs, archive)
        return text

    def remember_references(self, history: Sequence[Message]) -> None:
        """After a compaction: the best references of its summary stay in view through the recitation."""
        from swecli.context.references import REFERENCES_HEADING

        summary = next((m.content for m in history if isinstance(m, UserMessage) and m.kind == "summary"), "")
        start = summary.find(REFERENCES_HEADING)
        if start < 0:
            self.findings = []
            return
        section = summary[start:].split("\n## ", 1)[0]
        self.findings = [line for line in section.splitlines() if line.startswith("- ")][:FINDINGS_IN_TAIL]

    # -- visibility ------------------------------------------------------------------------------------
    def summary_lines(self) -> list[str]:
        stats = self.prefix.stats
        lines = [f"prompt cache: {stats.reuse_ratio:.0%} of {stats.requests} request(s) reused the previous prefix"
                 + (f" · {self.warnings} append-only warning(s)" if self.warnings else "")]
        on = [name for name, flag in (("offload", self.config.offload), ("decay", self.config.decay),
                                      ("recitation", self.config.recitation),
                                      ("failure evidence", self.config.failure_evidence)) if flag]
        lines.append(f"mechanisms on: {', '.join(on) or 'none'} · {self.offloaded} output(s) offloaded · "
                     f"{self.decays} decay batch(es) saved {self.decay_saved:,} tokens · "
                     f"recitation fired {self.recitation.fired_count}×"
                     + (f" · {self.images_replaced} old image(s) now stand-ins" if self.images_replaced else ""))
        if self.failures.summary():
            lines.append(self.failures.summary())
        return lines

    def _notice(self, level: str, text: str) -> None:
        self.on_event(Notice(level, text))


def _ignore(event: Event) -> None:
    return None


def _content(msg: Message) -> str:
    return msg.content


def starts_turn(history: Sequence[Message]) -> bool:
    """The last message is the person's new request: the next request opens a user turn."""
    return bool(history) and isinstance(history[-1], UserMessage) and history[-1].kind == "prompt"


def iteration_of(history: Sequence[Message]) -> int:
    """Model calls so far in the current task, plus one (the call about to be made)."""
    count = 0
    for msg in reversed(history):
        if isinstance(msg, UserMessage) and msg.kind == "prompt":
            break
        count += isinstance(msg, AssistantMessage)
    return count + 1
