"""An in-process scripted model implementing the Provider protocol, for unit tests of the loop.

Like openai-agents' testing model: each `stream()` call consumes the next scripted response; an
unexpected extra call raises, and `assert_done()` fails on unused steps. End-to-end tests use the
HTTP server in `swecli.testing.server` instead, so the real provider code runs.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from swecli.llm.base import CancelToken, ModelRequest, ResponseDone, StreamEvent, TextDelta
from swecli.messages import AssistantMessage, ToolCall, Usage


@dataclass
class ScriptedModel:
    steps: list[AssistantMessage | Exception]
    name: str = "scripted"
    model: str = "scripted-model"
    requests: list[ModelRequest] = field(default_factory=list)

    def stream(self, request: ModelRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        self.requests.append(request)
        if not self.steps:
            raise AssertionError(f"unexpected extra model call #{len(self.requests)}")
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        if step.content:
            yield TextDelta(step.content)
        yield ResponseDone(step, Usage(input_tokens=10, output_tokens=5, requests=1))

    def close(self) -> None:
        return None

    def assert_done(self) -> None:
        assert not self.steps, f"{len(self.steps)} scripted step(s) never requested"


def say(text: str) -> AssistantMessage:
    return AssistantMessage(content=text)


_ids = itertools.count(1)


def calls(*specs: tuple[str, str], text: str = "") -> AssistantMessage:
    """calls(("read_file", '{"path": "a"}'), ...) -> an assistant message with those tool calls.

    Ids are unique across the whole test run, as a real provider's are.
    """
    return AssistantMessage(content=text, tool_calls=tuple(
        ToolCall(id=f"call_{next(_ids)}_{name}", name=name, arguments=args) for name, args in specs))


SUMMARY_SECTIONS = ("User instructions and constraints", "Current task and state", "Decisions and reasons",
                    "Files", "Errors and resolutions", "Commands", "Open questions")


@dataclass
class ScriptedSummarizer:
    """Answers every request with the same ~600-token structured summary, as a summarizing model would
    (for compaction benchmarks and replays, where the number of calls depends on the data)."""

    name: str = "scripted-summarizer"
    model: str = "scripted"
    requests: list[ModelRequest] = field(default_factory=list)

    def stream(self, request: ModelRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        self.requests.append(request)
        body = "\n".join(f"### {s}\n" + "- a specific finding with a path and a reason. " * 8
                         for s in SUMMARY_SECTIONS)
        yield ResponseDone(AssistantMessage(content=body), Usage(requests=1))

    def close(self) -> None:
        return None
