from __future__ import annotations

import json
from pathlib import Path

from swecli.llm.base import ProviderError
from swecli.memory.playbook import Playbook
from swecli.memory.reflector import (
    LOCATE_BEFORE_READ,
    NO_BLIND_RETRY,
    READ_BEFORE_EDIT,
    REREAD_ON_MISMATCH,
    TESTS_AFTER_EDITS,
    Delta,
    Reflector,
    parse_deltas,
    reflection_request,
    rule_deltas,
    task_span,
    task_steps,
)
from swecli.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from swecli.testing.model import ScriptedModel, say


class Trace:
    """Builds a task history: a prompt, then tool calls with their results."""

    def __init__(self, prompt: str = "Fix the header parser") -> None:
        self.history: list[Message] = [UserMessage(content=prompt)]

    def call(self, tool: str, result: str, ok: bool = True, **args: object) -> Trace:
        call = ToolCall(id=f"c{len(self.history)}", name=tool, arguments=json.dumps(args))
        self.history += [AssistantMessage(tool_calls=(call,)),
                         ToolMessage(tool_call_id=call.id, name=tool, content=result, is_error=not ok)]
        return self

    def done(self, answer: str = "Fixed.") -> list[Message]:
        return [*self.history, AssistantMessage(content=answer)]


def contents(deltas: list[Delta]) -> set[tuple[str, str]]:
    return {(d.op, d.content) for d in deltas}


def test_task_span_starts_at_the_latest_prompt() -> None:
    old = Trace("old task").call("read_file", "x", path="a.py").done()
    new = Trace("new task").call("bash", "ok", command="ls").done()
    goal, span = task_span([*old, *new])
    assert goal == "new task" and len(task_steps(span)) == 1


def test_blind_edit_failure_adds_read_before_edit() -> None:
    h = Trace().call("edit_file", "old_string not found in src/a.py", ok=False, path="src/a.py",
                     old_string="x", new_string="y").done()
    deltas = rule_deltas(task_steps(task_span(h)[1]))
    assert ("add", READ_BEFORE_EDIT) in contents(deltas)


def test_read_then_edit_only_reinforces() -> None:
    h = (Trace().call("read_file", "1\tx = 1", path="src/a.py")
         .call("edit_file", "edited", path="src/a.py", old_string="x", new_string="y").done())
    deltas = rule_deltas(task_steps(task_span(h)[1]))
    assert ("tag", READ_BEFORE_EDIT) in contents(deltas)
    assert not any(d.op == "add" and d.content == READ_BEFORE_EDIT for d in deltas)


def test_guessed_path_adds_locate_before_read_but_a_listed_one_does_not() -> None:
    guessed = Trace().call("read_file", "path 'src/parser.py' does not exist", ok=False, path="src/parser.py").done()
    assert ("add", LOCATE_BEFORE_READ) in contents(rule_deltas(task_steps(task_span(guessed)[1])))
    listed = (Trace().call("list_files", "src/parser.py\nsrc/other.py", path="src")
              .call("read_file", "path 'src/parser.py' does not exist", ok=False, path="src/parser.py").done())
    assert ("add", LOCATE_BEFORE_READ) not in contents(rule_deltas(task_steps(task_span(listed)[1])))


def test_edits_without_tests_and_with_a_passing_test_command() -> None:
    untested = Trace().call("read_file", "x", path="a.py").call("edit_file", "ok", path="a.py").done()
    assert ("add", TESTS_AFTER_EDITS) in contents(rule_deltas(task_steps(task_span(untested)[1])))
    docs_only = Trace().call("edit_file", "ok", path="README.md").done()
    assert ("add", TESTS_AFTER_EDITS) not in contents(rule_deltas(task_steps(task_span(docs_only)[1])))
    tested = (Trace().call("read_file", "x", path="a.py").call("edit_file", "ok", path="a.py")
              .call("bash", "3 passed in 0.1s\nexit code 0", command="python3 -m pytest -q tests").done())
    found = contents(rule_deltas(task_steps(task_span(tested)[1])))
    assert ("tag", TESTS_AFTER_EDITS) in found
    assert ("add", "Run the tests with `python3 -m pytest -q tests` (it worked after edits).") in found


def test_repeated_failure_and_fixed_command_variant() -> None:
    trace = Trace()
    for _ in range(3):
        trace.call("bash", "bash: python: command not found\nexit code 127", ok=False, command="python -m pytest")
    trace.call("bash", "5 passed", command="python3 -m pytest")
    deltas = rule_deltas(task_steps(task_span(trace.done())[1]))
    found = contents(deltas)
    assert ("add", NO_BLIND_RETRY) in found
    fixed = [d for d in deltas if d.section == "commands"]
    assert len(fixed) == 1
    assert fixed[0].content == ("`python -m pytest` fails here (not_found: bash: python: command not found); "
                                "`python3 -m pytest` works.")


def test_repeated_edit_mismatch() -> None:
    trace = Trace().call("read_file", "x", path="a.py")
    for _ in range(2):
        trace.call("edit_file", "old_string not found in a.py", ok=False, path="a.py", old_string="z")
    assert ("add", REREAD_ON_MISMATCH) in contents(rule_deltas(task_steps(task_span(trace.done())[1])))


def test_bullet_naming_a_command_is_tagged_by_its_outcome() -> None:
    pb = Playbook()
    good = pb.add("commands", "Run the tests with `make test`.").bullet
    bad = pb.add("commands", "Lint with `make lint`.").bullet
    h = (Trace().call("bash", "ok", command="make  test")
         .call("bash", "make: *** No rule to make target 'lint'.\nexit code 2", ok=False, command="make lint").done())
    tags = {(d.bullet_id, d.tag) for d in rule_deltas(task_steps(task_span(h)[1]), pb) if d.op == "tag"}
    assert (good.id, "helpful") in tags and (bad.id, "harmful") in tags


def test_reflect_applies_rules_saves_and_runs_once_per_task(project: Path) -> None:
    pb = Playbook.for_project(project)
    reflector = Reflector(pb)
    h = Trace().call("edit_file", "old_string not found", ok=False, path="src/a.py").done()
    result = reflector.reflect(h, "Could not fix it.")
    assert [c.action for c in result.changes] == ["added"]
    assert result.summary() == "playbook: 1 added, 0 merged, 0 tagged, 0 removed (rules 1)"
    assert Playbook.for_project(project).find_similar(READ_BEFORE_EDIT) is not None  # saved
    again = reflector.reflect(h, "Could not fix it.")
    assert again.changes == [] and again.warnings == []  # nothing to say to the person
    asked_again = reflector.reflect([UserMessage(content=h[0].content), *h[1:]], "Could not fix it.")
    assert [c.action for c in asked_again.changes] == ["merged"]  # the same words, asked again: another task
    # the same lesson in a later task merges into the bullet instead of duplicating it
    h2 = [*h, UserMessage(content="Try again"), *Trace("x").call("edit_file", "old_string not found", ok=False,
                                                                  path="b.py").done()[1:]]
    third = reflector.reflect(h2)
    assert [c.action for c in third.changes] == ["merged"] and len(pb.bullets) == 1


def test_low_confidence_deltas_are_skipped_with_a_reason() -> None:
    pb = Playbook()
    reflector = Reflector(pb, min_confidence=0.9)
    result = reflector.reflect(Trace().call("edit_file", "nope", ok=False, path="a.py").done())
    assert result.changes == [] and "below confidence" in result.skipped[0]
    assert "1 skipped" in result.summary()


TRICKY = 'Fix `${HOME}` expansion in {config} and $PATH; keys {0} {name} $$ %s {"a": 1}'


def test_reflection_prompt_survives_braces_and_dollars() -> None:
    pb = Playbook()
    pb.add("conventions", "Templates use {placeholders} and ${vars}.")
    h = Trace(TRICKY).call("bash", '{"error": "bad {x}"} $1 failed', ok=False, command="echo '{a}' $X").done()
    goal, span = task_span(h)
    request = reflection_request(goal, "answer with {braces} and $dollar", task_steps(span), pb)
    text = request.messages[0].content
    assert TRICKY in text
    assert "answer with {braces} and $dollar" in text
    assert "echo '{a}' $X" in text
    assert "Templates use {placeholders} and ${vars}." in text
    assert '"op": "add"' in request.system[0].text


def test_llm_reflection_through_the_provider_protocol(project: Path) -> None:
    pb = Playbook.for_project(project)
    existing = pb.add("files", "Parser code lives in src/headers/.").bullet
    stale = pb.add("commands", "Use `nosetests` for tests.").bullet
    answer = ("Here are my deltas:\n```json\n"
              + json.dumps({"deltas": [
                  {"op": "add", "section": "conventions", "content": "Header values use ${VAR} and {name} syntax.",
                   "confidence": 0.9},
                  {"op": "tag", "id": existing.id, "tag": "helpful"},
                  {"op": "remove", "id": stale.id, "confidence": 0.95},
                  {"op": "tag", "id": "zzz-00099", "tag": "helpful"},
                  {"op": "explode"},
              ]}) + "\n```\nHope this helps {really}.")
    model = ScriptedModel([say(answer)])
    reflector = Reflector(pb, provider=model, use_llm=True)
    result = reflector.reflect(Trace(TRICKY).call("read_file", "x", path="src/headers/p.py").done())
    model.assert_done()
    assert len(model.requests) == 1 and TRICKY in model.requests[0].messages[0].content
    assert result.llm_used
    actions = [(c.action, c.bullet.id) for c in result.changes]
    assert ("tagged", existing.id) in actions and ("removed", stale.id) in actions
    added = [c.bullet for c in result.changes if c.action == "added"]
    assert [b.content for b in added] == ["Header values use ${VAR} and {name} syntax."]
    assert any("zzz-00099" in s for s in result.skipped)
    assert any("unknown op 'explode'" in w for w in result.warnings)
    saved = json.loads((project / ".swecli" / "playbook.json").read_text(encoding="utf-8"))
    assert stale.id not in {b["id"] for b in saved["bullets"]}


def test_invalid_llm_answer_gives_no_deltas_and_a_warning() -> None:
    pb = Playbook()
    model = ScriptedModel([say("I think you did great! {not json")])
    result = Reflector(pb, provider=model, use_llm=True).reflect(Trace().done())
    assert result.changes == [] and "no JSON object" in result.warnings[0]


def test_provider_failure_is_a_warning() -> None:
    model = ScriptedModel([ProviderError("server said no")])
    result = Reflector(Playbook(), provider=model, use_llm=True).reflect(Trace().done())
    assert result.warnings == ["LLM reflection failed: ProviderError: server said no"]


def test_llm_not_called_when_disabled() -> None:
    model = ScriptedModel([])
    Reflector(Playbook(), provider=model, use_llm=False).reflect(Trace().done())
    assert model.requests == []


def test_parse_deltas_variants() -> None:
    assert parse_deltas('[{"op": "add", "section": "files", "content": "x"}] trailing words')[0] == [
        Delta("add", "files", "x", confidence=0.7, source="llm")]
    assert parse_deltas('{"deltas": []}') == ([], [])
    deltas, warnings = parse_deltas('{"deltas": "nope"}')
    assert deltas == [] and "no 'deltas' list" in warnings[0]
    deltas, warnings = parse_deltas('{"deltas": [{"op": "add", "section": "s", "content": "c", "confidence": "high"},'
                                    ' {"op": "tag", "id": "a-1", "tag": "great"}, {"op": "remove"}, 7,'
                                    ' {"op": "add", "section": "s", "content": "' + "x" * 500 + '"}]}')
    assert deltas == []
    assert [w.split(": ", 1)[1] for w in warnings] == [
        "confidence is not a number", "tag must be 'helpful' or 'harmful'", "remove needs a bullet id",
        "not an object", "content longer than 400 characters"]
    deltas, _ = parse_deltas('prefix {broken ```json\n{"deltas": [{"op": "tag", "id": "a-1", "tag": "harmful",'
                             ' "confidence": 7}]}\n``` suffix')
    assert deltas == [Delta("tag", bullet_id="a-1", tag="harmful", confidence=1.0, source="llm")]
    many = json.dumps([{"op": "remove", "id": f"a-{i}"} for i in range(12)])
    deltas, warnings = parse_deltas(many)
    assert len(deltas) == 8 and "only the first 8" in warnings[-1]
