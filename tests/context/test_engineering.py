"""The mechanisms as the engine holds them: `Mechanisms` from `[context]`, `NoMechanisms` when off."""

from __future__ import annotations

from pathlib import Path

from swecli.config import ContextConfig
from swecli.context.engineering import Mechanisms, NoMechanisms, iteration_of, starts_turn
from swecli.context.ledger import Ledger
from swecli.context.manager import ContextManager, Prompt
from swecli.context.references import REFERENCES_HEADING
from swecli.context.tokens import TokenCounter
from swecli.events import Event, Notice
from swecli.llm.base import ModelRequest
from swecli.messages import AssistantMessage, Message, SystemBlock, ToolCall, ToolMessage, UserMessage
from swecli.tools.base import ToolResult

BIG = "\n".join(f"line {i}: " + "payload " * 20 for i in range(2_000))


def mechanisms(root: Path, events: list[Event] | None = None, **config: object) -> Mechanisms:
    return Mechanisms(ContextConfig(**config), TokenCounter(), root,  # type: ignore[arg-type]
                      on_event=None if events is None else events.append)


def steps(n: int) -> list[Message]:
    history: list[Message] = [UserMessage(content="fix the tokenizer bug in the parser module")]
    for i in range(n):
        call = ToolCall(id=f"c{i}", name="read_file", arguments='{"path": "parser.py"}')
        history += [AssistantMessage(content=f"reading the parser tokenizer, step {i}", tool_calls=[call]),
                    ToolMessage(tool_call_id=f"c{i}", name="read_file", content=f"def tokenize(): pass  # {i}")]
    return history


def test_an_engine_without_mechanisms_hands_everything_back_as_it_is() -> None:
    context = ContextManager(Prompt((SystemBlock(text="sys"),)))
    held = context.mechanisms
    assert type(held) is NoMechanisms
    history: list[Message] = [UserMessage(content="hi"), AssistantMessage(content="hello " * 5_000)]
    assert context.tool_content(ToolCall(id="1", name="bash"), ToolResult("x" * 100_000)) == "x" * 100_000
    assert context.prepare(history, None) is history  # type: ignore[arg-type]  # nothing to compact with
    assert context.request(history).tail == "" and held.summary_sections() == ()
    assert held.summary_lines() == [] and (held.offloaded, held.decays) == (0, 0)
    assert held.decay(history, Ledger(TokenCounter().message), 1_000) is history


def test_a_big_output_is_offloaded_to_a_file_and_the_history_gets_a_preview(tmp_path: Path) -> None:
    events: list[Event] = []
    m = mechanisms(tmp_path, events)
    content = m.tool_content(ToolCall(id="call_1", name="bash"), ToolResult(BIG))
    saved = next(tmp_path.glob(".swecli/tool_results/*"))
    assert saved.read_text() == BIG and len(content) < len(BIG) // 10 and m.offloaded == 1
    assert saved.name in content
    assert [e.level for e in events if isinstance(e, Notice)] == ["info"]


def test_an_output_that_cannot_be_saved_stays_whole_with_a_warning(tmp_path: Path) -> None:
    root = tmp_path / "not-a-directory"
    root.write_text("a file where the project root should be")
    events: list[Event] = []
    m = mechanisms(root, events)
    assert m.tool_content(ToolCall(id="call_1", name="bash"), ToolResult(BIG)) == BIG
    (notice,) = [e for e in events if isinstance(e, Notice)]
    assert notice.level == "warning" and "could not offload" in notice.text and m.offloaded == 0


def test_offload_off_keeps_small_and_big_outputs_as_they_are(tmp_path: Path) -> None:
    m = mechanisms(tmp_path, offload=False)
    assert m.tool_content(ToolCall(id="1", name="bash"), ToolResult(BIG)) == BIG
    assert not (tmp_path / ".swecli").exists()


def test_the_tail_is_the_same_with_or_without_the_ledger(tmp_path: Path) -> None:
    """The ledger only saves reading the history: the goal and the iteration it gives are the same."""
    by_ledger, by_reading = mechanisms(tmp_path), mechanisms(tmp_path)
    ledger = Ledger(TokenCounter().message)
    tails = []
    for n in range(1, 12):
        history = steps(n)
        with_ledger = by_ledger.tail(history, 0.9, ledger.sync(history))
        assert with_ledger == by_reading.tail(history, 0.9)
        tails.append(with_ledger)
    assert any("fix the tokenizer bug" in tail for tail in tails)  # the recitation did fire


def test_the_summary_s_best_references_stay_in_view(tmp_path: Path) -> None:
    m = mechanisms(tmp_path)
    summary = (f"the summary\n\n{REFERENCES_HEADING}\n" + "".join(f"- src/mod_{i}.py: why\n" for i in range(8))
               + "\n## Next\n- not a reference")
    m.remember_references([UserMessage(content=summary, kind="summary"), UserMessage(content="go on")])
    assert m.findings == [f"- src/mod_{i}.py: why" for i in range(5)]
    m.remember_references([UserMessage(content="a summary without references", kind="summary")])
    assert m.findings == []


def test_another_tokenizer_keeps_the_prompt_cache_statistics(tmp_path: Path) -> None:
    m = mechanisms(tmp_path)
    m.check(ModelRequest(system=(SystemBlock(text="sys"),), messages=tuple(steps(1))))
    stats = m.prefix.stats
    m.use_counter(TokenCounter("cl100k_base"))
    assert m.prefix.stats is stats and stats.requests == 1 and m.counter.encoding_name == "cl100k_base"


def test_summary_lines_say_which_mechanisms_are_on(tmp_path: Path) -> None:
    lines = mechanisms(tmp_path, decay=False, recitation=False).summary_lines()
    assert "mechanisms on: offload, failure evidence" in lines[1] and lines[0].startswith("prompt cache:")


def test_a_turn_starts_at_a_prompt_and_iterations_count_its_model_calls() -> None:
    history = steps(3)
    assert not starts_turn(history) and iteration_of(history) == 4
    history.append(UserMessage(content="now the lexer"))
    assert starts_turn(history) and iteration_of(history) == 1
    assert not starts_turn([]) and not starts_turn([UserMessage(content="s", kind="summary")])
