"""Progressive, cache-aware decay: old tool outputs fold into one-line digests, in rare batches.

The history has three zones. The newest (`keep_recent_tokens` of messages, counted back from the
end, widened to a whole step) stays verbatim. Before it, tool results whose policy allows it are
replaced by a digest: tool, key argument, outcome, size, and where the full text is (the offload
file, or whatever `reference_for` answers). The oldest part is compaction's business (its summary).

Why batched: rewriting an old message invalidates the provider's prompt cache from that message
on, so re-sending everything after it costs full price. Folding a little every turn (a peer clears
old outputs on every turn) sends fewer tokens but loses the cache on almost every request. `decay`
therefore acts only when the folds it would make save at least `min_savings_tokens` together, and
then folds everything eligible at once; otherwise it returns the very same history object, and
the prefix stays byte-identical. The next event comes only after that much new foldable output
has aged out of the newest zone.

Per-tool policies, declared by each tool (`ToolFacts.fold_after`): a listing, a grep or a file read is
cheap to redo and folds as soon as it leaves the newest zone; a test run's output (bash) lives a few
steps longer; an edit's result (the diff that shows what changed) lives much longer; todo/notes results
and loaded skills are never folded.

Old thinking goes too: the signed thinking blocks of assistant messages before the newest zone
(Anthropic extended thinking) are dropped in the same batches. The API needs them back only for the
turn in progress, and a block cannot be shortened (its signature covers it), only removed.

What is never touched otherwise: user and assistant messages. In particular the tool-call arguments of old
assistant messages stay verbatim, even a large write_file `content`: they are what the model did,
and a model imitates its own context, so placeholders in its past calls invite placeholder
arguments in its next ones; they must also stay valid JSON for the Anthropic wire. In the sessions
measured, arguments are a small share of the prompt next to outputs.

Per turn: the loop keeps a `DecayScan`, which looks at each message once, when it leaves the newest
zone, and caches what folding it would save; `decay` is the same decision made from scratch.

Invariants: same length, same order, every ToolMessage keeps its tool_call_id, name and is_error
(only `content` changes), so tool-call/result pairing can never break; a digest is never digested
again; the function is pure except through `reference_for`, which is called only for results that
are actually folded.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from swecli.context.ledger import Ledger
from swecli.context.offload import OffloadError, offload_path_in, save_output
from swecli.context.tokens import MESSAGE_OVERHEAD, IdentityCache, TokenCounter
from swecli.lazy import regex
from swecli.messages import AssistantMessage, Message, ToolCall, ToolMessage
from swecli.records import datarecord
from swecli.session.secrets import Redactor
from swecli.tools.facts import facts_for

DIGEST_MARKER = "[swecli: decayed]"
MIN_FOLD_TOKENS = 150
"""A result folds only if that saves at least this much: small outputs are worth their tokens."""
KEY_ARGS = ("pattern", "command", "path", "file_path", "glob", "query", "url", "name")
"""What identifies a call of a tool that does not say (`ToolFacts.key_args`): an MCP tool, another agent's."""
ARG_CHARS = 100
REFERENCE_PLACEHOLDER = ".swecli/tool_results/call_0000000000000000000000.txt"
"""Stands in for the real reference while estimating savings, so no file is written for a batch
that does not happen."""
NO_REFERENCE = "not saved; run the call again to see it"

ReferenceFor = Callable[[ToolMessage], str]
MadeAhead = Callable[[ToolMessage], "ToolMessage | None"]
"""The digest already made for an output (`foldahead.FoldsAhead.made`), or None: then it is made now."""


@datarecord(frozen=True)
class DecayPolicy:
    """When a tool's results may be folded to a reference, declared per tool."""

    min_age: int = 1
    """Steps (assistant messages after the one that made the call) before the result may fold; at
    least 1 whatever is set: a result folds only after the model has answered it once."""
    keep: bool = False
    """Never fold (the result is small and stays relevant: a todo list, a note)."""


def policy_for(tool: str) -> DecayPolicy:
    """The tool's own policy (`ToolFacts.fold_after`)."""
    fold_after = facts_for(tool).fold_after
    return DecayPolicy(keep=True) if fold_after is None else DecayPolicy(min_age=fold_after)


def room_policy(tool: str) -> DecayPolicy:
    """When room is needed at once (`fold_older`): every output older than the newest zone folds, whatever
    its tool, unless its tool's results are never folded."""
    return DecayPolicy(min_age=1, keep=policy_for(tool).keep)


@datarecord(frozen=True)
class DecayResult:
    """The history after a decay pass, and what folding saved."""

    history: list[Message]
    """The input object itself when nothing was folded."""
    saved_tokens: int
    folded: int
    pending_tokens: int = 0
    """When nothing was folded: what folding now would have saved (below the batch threshold)."""

    @property
    def changed(self) -> bool:
        return self.folded > 0


@datarecord(frozen=True)
class Candidate:
    """A tool result that may be folded, and the tokens folding it would save."""

    index: int
    message: ToolMessage
    call: ToolCall | None
    saving: int


def decay(
    history: list[Message],
    counter: TokenCounter,
    keep_recent_tokens: int,
    min_savings_tokens: int,
    policies: Mapping[str, DecayPolicy] | None = None,
    reference_for: ReferenceFor | None = None,
) -> DecayResult:
    """Fold old tool results into digests when that saves at least `min_savings_tokens` in total.
    (The loop keeps a `DecayScan` instead, which does the same in O(appended) per turn.)"""
    scan = DecayScan(counter, policies)
    return scan.run(history, Ledger(counter.message).sync(history), keep_recent_tokens, min_savings_tokens,
                    reference_for)


MIN_ZONE = 500
"""The newest history `fold_older` always keeps verbatim, in local tokens (the newest step's outputs stay
whatever the zone)."""


def fold_older(history: list[Message], ledger: Ledger, scan: DecayScan, keep_recent_tokens: int,
               reference_for: ReferenceFor, needed: int = 0, made: MadeAhead | None = None) -> DecayResult:
    """Every tool output before the newest `keep_recent_tokens` folded at once, whatever it saves: the
    no-model-call compaction ("observation masking"), for when room is needed before a summary is ready.
    When that saves less than `needed` tokens, the newest zone halves (down to `MIN_ZONE`) until it saves
    enough. `ledger` must be synced to `history`; `scan` (with `room_policy`) is kept from one fold to the
    next, so what folding a message saves is worked out once. `made` gives the digests made ahead."""
    keep = keep_recent_tokens
    while scan.saving(ledger, keep) < needed and keep // 2 >= MIN_ZONE:
        keep //= 2  # the scan goes on from where it was: each message is still looked at once
    return scan.run(history, ledger, keep, 0, reference_for, made)


class DecayScan:
    """`decay` for a history that grows by appends: each message is looked at once, when it leaves the
    newest zone, and its saving (a fold estimated with a placeholder reference) is cached on the message.
    Results too young for their policy wait in a short list until they are old enough. Only a batch
    that folds (a rewrite of the history) makes the scan start over, from the cached savings."""

    def __init__(self, counter: TokenCounter, policies: Mapping[str, DecayPolicy] | None = None, *,
                 default: Callable[[str], DecayPolicy] = policy_for) -> None:
        self.counter = counter
        self.rules = policies or {}
        """Overrides of the tools' own policies, by tool name."""
        self.default = default
        """A tool's policy when `rules` does not name it (`room_policy` when room is needed at once)."""
        self._savings = IdentityCache[int]()
        self._generation = -1
        self.epoch = 0
        """Counts the restarts: positions in `ready` hold from one restart to the next."""
        self._reset()

    def _reset(self) -> None:
        self.epoch += 1
        self._scanned = 0
        self._ready: list[int] = []
        self._waiting: list[tuple[int, int]] = []
        """(index, steps it must be old) of results that will be eligible once old enough."""
        self._thoughts: list[tuple[int, int]] = []
        """(index, tokens) of assistant messages before the zone that still carry thinking blocks."""
        self.pending = 0
        """What folding every eligible result now would save."""

    def saving(self, ledger: Ledger, keep_recent_tokens: int) -> int:
        """What folding everything eligible before the newest `keep_recent_tokens` would save (nothing is
        written)."""
        self._advance(ledger, keep_recent_tokens)
        return self.pending

    def run(self, history: list[Message], ledger: Ledger, keep_recent_tokens: int, min_savings_tokens: int,
            reference_for: ReferenceFor | None = None, made: MadeAhead | None = None) -> DecayResult:
        """`ledger` must be synced to `history`."""
        self._advance(ledger, keep_recent_tokens)
        if not (self._ready or self._thoughts) or self.pending < min_savings_tokens:
            return DecayResult(history, 0, 0, self.pending)
        # The folded history is a rewrite: the ledger restarts on it, and so will this scan.
        return _fold_all(history, self.candidates(ledger), self._thoughts, self.counter, reference_for, made)

    def candidates(self, ledger: Ledger) -> list[Candidate]:
        """The results a run would fold now (as of the last `saving` or `run`), oldest first."""
        return [self._candidate(ledger, index) for index in sorted(self._ready)]

    def ready(self) -> int:
        """How many results a run would fold now; until the next restart (`epoch`) only ever more."""
        return len(self._ready)

    def candidates_since(self, ledger: Ledger, start: int) -> list[Candidate]:
        """`candidates` that became ready after the first `start` of them (in this `epoch`), oldest first."""
        return [self._candidate(ledger, index) for index in sorted(self._ready[start:])]

    def _advance(self, ledger: Ledger, keep_recent_tokens: int) -> None:
        zone = ledger.zone_start(keep_recent_tokens)
        if ledger.generation != self._generation or zone < self._scanned:
            self._generation = ledger.generation
            self._reset()
        for index in range(self._scanned, zone):
            self._classify(ledger, index)
        self._scanned = max(self._scanned, zone)
        waiting, self._waiting = self._waiting, []
        for index, min_age in waiting:
            self._place(ledger, index, min_age)

    def _classify(self, ledger: Ledger, index: int) -> None:
        msg = ledger.messages[index]
        if isinstance(msg, AssistantMessage) and msg.thinking:
            tokens = sum(self.counter.text(block.text) for block in msg.thinking)
            self._thoughts.append((index, tokens))
            self.pending += tokens
            return
        if not isinstance(msg, ToolMessage) or is_digest(msg):
            return
        policy = self.rules.get(msg.name) or self.default(msg.name)
        if policy.keep or self._saving(ledger, index) < MIN_FOLD_TOKENS:
            return
        self._place(ledger, index, max(1, policy.min_age))

    def _place(self, ledger: Ledger, index: int, min_age: int) -> None:
        if ledger.assistants_after(ledger.caller_of(index)) >= min_age:
            self._ready.append(index)
            self.pending += self._saving(ledger, index)
        else:
            self._waiting.append((index, min_age))

    def _saving(self, ledger: Ledger, index: int) -> int:
        msg = ledger.messages[index]
        saving = self._savings.get(msg)
        if saving is None:
            assert isinstance(msg, ToolMessage)
            estimate = fold(msg, _call_for(ledger, index), REFERENCE_PLACEHOLDER, self.counter)
            saving = self.counter.message(msg) - self.counter.message(estimate)
            self._savings.put(msg, saving)
        return saving

    def _candidate(self, ledger: Ledger, index: int) -> Candidate:
        msg = ledger.messages[index]
        assert isinstance(msg, ToolMessage)
        return Candidate(index, msg, _call_for(ledger, index), self._saving(ledger, index))


def _call_for(ledger: Ledger, index: int) -> ToolCall | None:
    msg = ledger.messages[index]
    caller = ledger.caller_of(index)
    if caller < 0 or not isinstance(msg, ToolMessage):
        return None
    assistant = ledger.messages[caller]
    assert isinstance(assistant, AssistantMessage)
    return next((c for c in assistant.tool_calls if c.id == msg.tool_call_id), None)


def _fold_all(history: list[Message], candidates: Sequence[Candidate], thoughts: Sequence[tuple[int, int]],
              counter: TokenCounter, reference_for: ReferenceFor | None,
              made: MadeAhead | None = None) -> DecayResult:
    out = list(history)
    saved = 0
    for index, saving in thoughts:
        out[index] = history[index].model_copy(update={"thinking": ()})
        saved += saving
    for cand in candidates:
        folded = made(cand.message) if made is not None else None
        if folded is None:
            reference = reference_for(cand.message) if reference_for is not None else default_reference(cand.message)
            folded = fold(cand.message, cand.call, reference, counter)
        saved += counter.message(cand.message) - counter.message(folded)
        out[cand.index] = folded
    return DecayResult(out, saved, len(candidates) + len(thoughts))


def newest_zone_start(history: Sequence[Message], counter: TokenCounter, keep_recent_tokens: int) -> int:
    """Index where the verbatim zone begins (see `Ledger.zone_start`)."""
    return Ledger(counter.message).sync(history).zone_start(keep_recent_tokens)


# --- digests ------------------------------------------------------------------------------------

def is_digest(msg: ToolMessage) -> bool:
    return msg.content.startswith(DIGEST_MARKER)


def fold(msg: ToolMessage, call: ToolCall | None, reference: str, counter: TokenCounter) -> ToolMessage:
    """The digest that replaces `msg`: same id, name and error flag, one line of content."""
    return ToolMessage(tool_call_id=msg.tool_call_id, name=msg.name, content=digest(msg, call, reference, counter),
                       is_error=msg.is_error)


def digest(msg: ToolMessage, call: ToolCall | None, reference: str, counter: TokenCounter) -> str:
    lines, tokens = _size(msg, counter)
    return (f"{DIGEST_MARKER} {msg.name}({key_arguments(call)}) -> {outcome(msg)}; {lines:,} lines, "
            f"{tokens:,} tokens; full output: {_where(reference)}")


def _where(reference: str) -> str:
    if reference and " " not in reference:  # a path: say how to open it
        return f"`{reference}` (read_file with offset/limit, or grep it)"
    return reference or NO_REFERENCE


_OFFLOAD_SIZE = regex(r"returned ([\d,]+) lines, [\d,]+ characters, ([\d,]+) tokens")


def _size(msg: ToolMessage, counter: TokenCounter) -> tuple[int, int]:
    """The size of the output the model originally got (an offload preview names the full size)."""
    if offload_path_in(msg.content):
        match = _OFFLOAD_SIZE.search(msg.content.split("\n", 1)[0])
        if match:
            return int(match.group(1).replace(",", "")), int(match.group(2).replace(",", ""))
    # The message's count is cached by identity: never re-tokenize old outputs on every turn.
    tokens = counter.message(msg) - MESSAGE_OVERHEAD - counter.text(msg.name)
    return line_count(msg.content), tokens


def line_count(text: str) -> int:
    """As read_file numbers lines (see offload.split_lines), without building the list."""
    if not text:
        return 1
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def key_arguments(call: ToolCall | None) -> str:
    """The arguments that identify the call (path, pattern, command...), each cut to a short JSON string."""
    if call is None:
        return ""
    try:
        args = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return _clip(call.arguments)
    if not isinstance(args, dict):
        return _clip(call.arguments)
    keys = [k for k in facts_for(call.name).key_args or KEY_ARGS if isinstance(args.get(k), (str, int, float))][:2]
    if not keys:
        keys = [k for k, v in args.items() if isinstance(v, str) and len(v) <= ARG_CHARS][:1]
    return ", ".join(f"{k}={_clip(json.dumps(args[k], ensure_ascii=False))}" for k in keys)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ARG_CHARS else text[:ARG_CHARS] + "…"


_EXIT = regex(r"^exit code (-?\d+|None)$")


def outcome(msg: ToolMessage) -> str:
    """`ok`, `exit code N`, or `error: <first line>`."""
    body = msg.content
    if offload_path_in(body):
        body = body.split("\n", 1)[1] if "\n" in body else ""
    for line in body.rstrip().rsplit("\n", 3)[-3:]:  # bash ends with it (a preview may add a footer)
        exit_match = _EXIT.match(line.strip())
        if exit_match:
            return f"exit code {exit_match.group(1)}"
    if not msg.is_error:
        return "ok"
    first = next((line.strip() for line in body.splitlines() if line.strip()), "")
    return f"error: {_clip(first)}" if first else "error"


# --- references ---------------------------------------------------------------------------------

def default_reference(msg: ToolMessage) -> str:
    """The offload file when the result was offloaded; otherwise nothing on disk is known to hold it."""
    return offload_path_in(msg.content) or NO_REFERENCE


def saving_reference(root: Path, redactor: Redactor | None = None) -> ReferenceFor:
    """A `reference_for` that makes every folded output reachable: the offload file when there is one,
    else the output is saved now under `.swecli/tool_results/` (only results actually folded are), its
    secrets masked by `redactor` (the environment's when None, read once here, not once per output)."""
    redactor = redactor if redactor is not None else Redactor.from_environment()

    def reference(msg: ToolMessage) -> str:
        existing = offload_path_in(msg.content)
        if existing:
            return existing
        try:
            return save_output(root, msg.tool_call_id, msg.content, redactor)
        except OffloadError:
            return NO_REFERENCE

    return reference
