from __future__ import annotations

import pytest

from swecli.context.recitation import Recitation, goal_of, terms
from swecli.context.todo import TodoItem, TodoState
from swecli.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage

GOAL = "Fix the tokenizer bug in parse_header so that quoted header values keep their spaces"


def step(i: int, text: str, tool_text: str) -> list[Message]:
    call = ToolCall(id=f"c{i}", name="read_file", arguments='{"path": "src/headers.py"}')
    return [AssistantMessage(content=text, tool_calls=(call,)), ToolMessage(tool_call_id=f"c{i}", name="read_file",
                                                                           content=tool_text)]


def on_topic(n: int) -> list[Message]:
    history: list[Message] = [UserMessage(content=GOAL)]
    for i in range(n):
        history += step(i, "Looking at parse_header and the tokenizer.", "def parse_header(value): # quoted spaces")
    return history


def off_topic(n: int) -> list[Message]:
    history: list[Message] = [UserMessage(content=GOAL)]
    for i in range(n):
        history += step(i, "Checking the CI badge and README formatting.", "![badge](ci.svg) install instructions")
    return history


def fired(rec: Recitation, history_at: object, iterations: range, fill: float = 0.0) -> list[int]:
    out = []
    for it in iterations:
        history = history_at(it)  # type: ignore[operator]
        if rec.tail_text(it, history, fill):
            out.append(it)
    return out


def test_terms_split_identifiers_and_drop_stopwords() -> None:
    assert terms("Fix the TokenCounter in parse_args, please; tests") >= {
        "tokencounter", "token", "counter", "parse_args", "parse", "args", "test"}
    assert "the" not in terms("the fix please") and "fix" not in terms("the fix please")


def test_goal_is_latest_prompt_and_short_follow_ups_keep_the_previous_one() -> None:
    h: list[Message] = [UserMessage(content="Add retry logic to the http client module"),
                        UserMessage(content="summary", kind="summary"), UserMessage(content="yes go on")]
    assert goal_of(h) == "Add retry logic to the http client module\nThen: yes go on"
    h.append(UserMessage(content="Now rename the config loader to load_settings everywhere"))
    assert goal_of(h) == "Now rename the config loader to load_settings everywhere"
    assert goal_of([UserMessage(content="ctx", kind="context")]) == ""


def test_fires_on_the_interval_when_on_topic() -> None:
    rec = Recitation(every=5)
    assert fired(rec, lambda it: on_topic(it - 1), range(1, 18)) == [6, 11, 16]
    assert rec.last is not None and rec.last.reason.startswith("not due")
    assert rec.fired_count == 3


def test_text_has_goal_progress_and_next_step() -> None:
    todo = TodoState()
    todo.replace([TodoItem(content="Find parse_header", status="done"),
                  TodoItem(content="Keep spaces in quoted values", status="in_progress"),
                  TodoItem(content="Run pytest"), TodoItem(content="Update the changelog")])
    rec = Recitation(todo=todo, every=2)
    rec.tail_text(1, on_topic(0))
    text = rec.tail_text(3, on_topic(2), findings=["src/headers.py:42 quoted branch"])
    assert "Goal: " + GOAL in text
    assert "Progress: 1/4 done. Next step: Keep spaces in quoted values" in text
    assert "Then: Run pytest; Update the changelog" in text
    assert "- src/headers.py:42 quoted branch" in text
    assert rec.last is not None and rec.last.reason.startswith("interval")


def test_without_todo_says_so() -> None:
    rec = Recitation(every=1)
    text = rec.tail_text(2, on_topic(1))
    assert "no todo list" in text


def test_drift_makes_it_fire_sooner_and_says_why() -> None:
    rec = Recitation(every=6, drift_threshold=0.2)
    its = fired(rec, lambda it: off_topic(it - 1), range(1, 13))
    assert its == [4, 7, 10]  # every 3 instead of every 6
    assert rec.last is not None and rec.last.overlap is not None and rec.last.overlap < 0.2
    text = Recitation(every=2).tail_text(3, off_topic(2))
    assert "look unrelated to the goal" in text
    on = Recitation(every=6)
    assert fired(on, lambda it: on_topic(it - 1), range(1, 13)) == [7]


def test_fills_context_makes_it_fire_sooner() -> None:
    assert fired(Recitation(every=6), lambda it: on_topic(it - 1), range(1, 10), fill=0.6) == [4, 7]
    rec = Recitation(every=6)
    assert fired(rec, lambda it: on_topic(it - 1), range(1, 6), fill=0.9) == [2, 3, 4, 5]
    assert rec.last is not None and rec.last.reason == "context: 90% full"


def test_same_iteration_twice_gives_the_same_answer() -> None:
    rec = Recitation(every=1)
    first = rec.tail_text(2, on_topic(1))
    assert first and rec.tail_text(2, on_topic(1)) == first
    assert rec.fired_count == 1


def test_new_task_restarts_the_schedule_and_goal_survives_compaction() -> None:
    rec = Recitation(every=3)
    assert fired(rec, lambda it: on_topic(it - 1), range(1, 5)) == [4]
    new_goal = "Write documentation for the retry decorator in http_client"
    h: list[Message] = [*on_topic(3), UserMessage(content=new_goal)]
    assert rec.tail_text(1, h) == ""
    assert rec.goal == new_goal
    compacted: list[Message] = [UserMessage(content="(summary of earlier work)", kind="summary"),
                                *step(9, "retry decorator docs", "def retry(...)"),
                                *step(10, "http_client retry", "docs")]
    assert rec.tail_text(3, compacted) == ""
    assert new_goal in rec.tail_text(4, compacted)


def test_no_goal_means_no_recitation() -> None:
    rec = Recitation(every=1)
    assert rec.tail_text(5, []) == ""
    assert rec.last is not None and rec.last.reason == "no goal"


@pytest.mark.parametrize("kwargs", [{"every": 0}, {"drift_threshold": 1.5}])
def test_bad_settings_are_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Recitation(**kwargs)  # type: ignore[arg-type]
