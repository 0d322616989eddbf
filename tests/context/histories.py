"""Builders and hypothesis strategies for typed histories, and the invariants every compaction keeps."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from swecli.llm.base import CancelToken, ModelRequest, ResponseDone, StreamEvent
from swecli.messages import AssistantMessage, Message, ToolCall, ToolMessage, Usage, UserMessage

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
"""`HYPOTHESIS_PROFILE=thorough pytest tests/context`: the property tests over these histories draw several
times as many examples (minutes, not seconds: for a change to compaction, decay or the ledger, or a nightly
run). The suite's default counts were checked to still catch planted bugs (docs/testing.md)."""


def examples(quick: int, thorough: int) -> int:
    """`max_examples` for a property test over drawn histories: `quick` in the suite, `thorough` on demand.
    Each example counts real o200k tokens over histories of up to ~200 messages, so the count is most of
    the suite's time for these tests."""
    return thorough if THOROUGH else quick


def drawn(quick: int, thorough: int) -> settings:
    """The settings of a property test over drawn histories: `examples(quick, thorough)`, no deadline (a
    loaded machine), and no health check about slow or large draws (the histories are large on purpose)."""
    return settings(max_examples=examples(quick, thorough), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


WORDS = ("alpha", "beta", "parser", "token", "def", "return", "self.value", "import os", "x = 1", "{}", "[]",
         "error", "ok", "src/app.py:12", "path/to/file.txt", "ünïcode", "漢字", "\n", "    ", "'quoted'")


def text_of(words: Sequence[str]) -> str:
    return " ".join(words)


texts = st.binary(max_size=40).map(lambda picks: text_of([WORDS[pick % len(WORDS)] for pick in picks]))
"""Up to 40 words. Drawn as one byte string (a byte per word), not a list of 40 separate draws: the same kind
of texts, at a third of the drawing time (the histories are drawn from hundreds of these)."""


@functools.cache
def numbered_lines(count: int) -> str:
    """A big tool output of `count` lines: the same text for the same count, built once per process (drawing
    it anew for every example was a tenth of the drawing time)."""
    return "\n".join(f"line {i}: value = compute({i}) # {WORDS[i % len(WORDS)]}" for i in range(count))


big_texts = st.integers(min_value=50, max_value=1500).map(numbered_lines)

# The strategies `turns` draws from, made once: hypothesis validates a strategy object on its first draw, and
# made inside `turns` they were new objects (validated again) for every call, message and tool call, which was
# most of the drawing time. The same strategies, so the same examples for the same seed.
_STEPS = st.integers(0, 4)
_CALLS = st.integers(1, 3)
_TOOL_NAMES = st.sampled_from(["bash", "read_file", "edit_file"])
_CALL_CONTENT = st.one_of(st.just(""), texts)
_OUTPUTS = st.one_of(texts, big_texts)
_FLAGS = st.booleans()


@st.composite
def turns(draw: st.DrawFn, turn_index: int) -> list[Message]:
    """One user turn: a prompt, some tool rounds (assistant with calls, then every result), an answer."""
    return _turn(draw, turn_index)


def _turn(draw: st.DrawFn, turn_index: int) -> list[Message]:
    out: list[Message] = [UserMessage(content=f"prompt {turn_index}: " + draw(texts))]
    for step in range(draw(_STEPS)):
        n_calls = draw(_CALLS)
        calls = tuple(
            ToolCall(id=f"t{turn_index}s{step}c{i}", name=draw(_TOOL_NAMES),
                     arguments=json.dumps({"command": draw(texts), "path": f"src/m{i}.py"}))
            for i in range(n_calls)
        )
        # Tool-call-only assistant messages with empty content are the normal OpenAI shape.
        content = draw(_CALL_CONTENT)
        out.append(AssistantMessage(content=content, tool_calls=calls))
        for call in calls:
            body = draw(_OUTPUTS)
            out.append(ToolMessage(tool_call_id=call.id, name=call.name, content=body,
                                   is_error=draw(_FLAGS)))
    if draw(_FLAGS):
        out.append(AssistantMessage(content=draw(texts)))
    return out


@st.composite
def histories(draw: st.DrawFn, min_turns: int = 1, max_turns: int = 12) -> list[Message]:
    history: list[Message] = []
    for i in range(draw(_turn_counts(min_turns, max_turns))):
        history.extend(_turn(draw, i))  # not draw(turns(i)): a new strategy object (validated again) per turn
    return history


@functools.cache
def _turn_counts(least: int, most: int) -> st.SearchStrategy[int]:
    return st.integers(least, most)


# --- invariants -----------------------------------------------------------------------------------

def assert_pairing(history: Sequence[Message]) -> None:
    """Every tool call is followed, before any other user/assistant message, by exactly its results;
    every result belongs to the assistant message right before its block."""
    i = 0
    while i < len(history):
        msg = history[i]
        assert not isinstance(msg, ToolMessage), f"orphan tool result at {i}: {msg.tool_call_id}"
        i += 1
        if isinstance(msg, AssistantMessage) and msg.tool_calls:
            expected = {c.id for c in msg.tool_calls}
            seen = set()
            while i < len(history) and isinstance(history[i], ToolMessage):
                result = history[i]
                assert isinstance(result, ToolMessage)
                assert result.tool_call_id in expected, f"result {result.tool_call_id} not for the call before it"
                seen.add(result.tool_call_id)
                i += 1
            assert seen == expected, f"calls without results: {expected - seen}"


def prompts(history: Sequence[Message]) -> list[str]:
    return [m.content for m in history if isinstance(m, UserMessage) and m.kind == "prompt"]


# --- fake summarizers -----------------------------------------------------------------------------

@dataclass
class EchoSummarizer:
    """A Provider answering every summary request with a short deterministic text (for property
    tests, where the number of calls depends on the drawn history)."""

    name: str = "echo"
    model: str = "echo-model"
    requests: list[ModelRequest] = field(default_factory=list)
    words: int = 40

    def stream(self, request: ModelRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        self.requests.append(request)
        text = f"### Current task and state\nsummary {len(self.requests)} " + "word " * self.words
        yield ResponseDone(AssistantMessage(content=text.strip()), Usage(input_tokens=100, output_tokens=50,
                                                                         requests=1))

    def close(self) -> None:
        return None
