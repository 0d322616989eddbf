"""The real `swecli` REPL in a pseudo-terminal against the scripted LLM server.

Every test waits for what a person would wait for (the prompt, the approval question) before
typing, with generous timeouts; none asserts on how long anything took. What a typed line does where the
terminal plays no part (`!command`, a failed turn's line) runs on an in-process REPL at the end: a
`swecli` start in a pty costs seconds of CPU (tests/ui/commands/ test the slash commands that way).
The checks of keys and the screen that start from an empty prompt share one REPL (`repl`, in
tests/ui/conftest.py: a `tests.ui.harness.SharedRepl`, a new conversation in default mode for each; a
check that needs auto or plan mode types `/mode`). The checks whose subject is the start (`--continue`, a
positional task) or the exit (the last lines after /exit, Ctrl-C twice) start a REPL of their own.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from swecli.testing.server import Call, Reply, ScriptedLLM, Step
from tests.ui.harness import (
    ALT_ENTER,
    ESC,
    SHIFT_TAB,
    SharedRepl,
    Terminal,
    assert_in_order,
    in_process,
    output,
    shown_for,
    spawn_swecli,
)

pytest.importorskip("pexpect")
pytestmark = pytest.mark.skipif(not hasattr(__import__("os"), "openpty"), reason="needs a pseudo-terminal")

APPROVAL = "Allow? [y]es / [n]o / [a]lways this session"
METER = re.compile(r"ctx \d+% · [\d.]+k?/32\.8k")


def meter_tokens(label: str) -> float:
    used = label.split(" · ")[1].split("/")[0]
    return float(used[:-1]) * 1000 if used.endswith("k") else float(used)


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def assert_history_valid(request: dict[str, Any]) -> None:
    """Every tool call in the request is answered by a tool message before the next turn."""
    messages = request["messages"]
    for i, message in enumerate(messages):
        for call in message.get("tool_calls") or []:
            answers = [m for m in messages[i + 1:] if m["role"] == "tool" and m["tool_call_id"] == call["id"]]
            assert answers, f"tool call {call['id']} has no result in {json.dumps(messages)[:2000]}"


def leave(term: Terminal) -> None:
    term.send("\x04")  # Ctrl-D
    assert term.exit_status() == 0


def test_task_streams_reasoning_actions_answer_and_approved_write(repl: SharedRepl) -> None:
    term, project = repl.term, repl.project
    repl.script(
        Reply(reasoning="I will look at the project first.", calls=[Call("list_files", {"path": "."})]),
        Reply(calls=[Call("write_file", {"path": "hello.txt", "content": "hello [world]\n"})]),
        Reply(text="Created **hello.txt** with a greeting."),
    )
    term.line("create hello.txt")
    term.expect("💭 Reasoning:")
    term.expect("I will look at the project first.")
    term.expect("📁 list .")
    term.expect("📝 write hello.txt")
    term.expect("+hello [world]")  # the diff, shown before asking; brackets printed as they are
    term.expect(APPROVAL)
    term.send("y")
    term.expect("yes")
    term.expect("⎿  ")
    term.expect("Created hello.txt with a greeting.")  # Markdown rendered: no asterisks
    term.expect("⏺ done in")
    term.expect(" tokens")
    term.prompt()
    assert (project / "hello.txt").read_text() == "hello [world]\n"
    history = (project / ".swecli" / "history").read_text()  # written as the line is entered
    assert "create hello.txt" in history


def test_decline_with_reason_reaches_the_model(repl: SharedRepl) -> None:
    term = repl.term
    (repl.project / "data.txt").write_text("precious\n")
    repl.script(
        Reply(calls=[Call("bash", {"command": "rm data.txt"})]),
        Reply(text="Understood, I left data.txt alone."),
        Reply(text="The docs say to archive it."),
    )
    term.line("clean up the data file")
    term.expect("⚡ bash rm data.txt")
    term.expect(APPROVAL)
    assert "$ rm data.txt" not in repl.shown()  # the action line shows the command; it is not printed twice
    term.send("what do the docs say?")  # type-ahead while Allow? waits: a message, 'a' and 'y' included
    term.send("\r")
    term.expect("⏎ queued: what do the docs say?")
    term.expect(APPROVAL)  # asked again
    term.send("n")
    term.expect("Reason for the model")
    term.settle()
    term.line("we still need it")
    term.expect("declined")
    term.expect("Understood, I left data.txt alone.")
    term.expect("⏺ done in")
    term.expect("❯ what do the docs say?")  # the queued message goes next
    term.expect("The docs say to archive it.")
    term.prompt()
    assert (repl.project / "data.txt").read_text() == "precious\n"
    (answer,) = tool_messages(repl.requests[1])
    assert "declined" in answer["content"]
    assert "Their reason: we still need it. Do not retry" in answer["content"]  # with its full stop
    assert repl.requests[2]["messages"][-1] == {"role": "user", "content": "what do the docs say?"}


def test_always_is_scoped_to_the_tool_for_edits_and_the_exact_command_for_bash(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In process, the answers typed as lines: the scope of "always" is the policy's; one key answering
    `Allow?` in a terminal is the other tests' (and tests/ui/test_approval.py's)."""
    (project / "notes.txt").write_text("alpha\nbeta\n")
    steps: list[Step] = [
        Reply(calls=[Call("edit_file", {"path": "notes.txt", "old_string": "alpha", "new_string": "ALPHA"})]),
        Reply(calls=[Call("edit_file", {"path": "notes.txt", "old_string": "beta", "new_string": "BETA"})]),
        Reply(calls=[Call("bash", {"command": "echo first >> log.txt"})]),
        Reply(calls=[Call("bash", {"command": "echo first >> log.txt"})]),
        Reply(calls=[Call("bash", {"command": "echo second >> log.txt"})]),
        Reply(text="All done."),
    ]
    monkeypatch.setattr(sys, "stdin", io.StringIO("a\na\ny\n"))  # the three answers, in order
    with ScriptedLLM(steps) as llm:
        shown = shown_for(project, llm, "shout the notes and log twice")
    assert_in_order(shown, [  # each, in this order
        "✏️ edit notes.txt",
        "+ALPHA",
        APPROVAL + " always",
        "Allowed for the rest of this session: edit_file",
        "✏️ edit notes.txt",
        "⚡ bash echo first >> log.txt",
        APPROVAL + " always",
        "Allowed for the rest of this session: the command `echo first >> log.txt`",
        "⚡ bash echo first >> log.txt",
        "⚡ bash echo second >> log.txt",
        APPROVAL + " yes",
        "All done.",
    ])
    assert shown.count(APPROVAL) == 3, shown  # the second edit and the same command again did not ask
    assert shown.count("✏️ edit notes.txt") == 2 and shown.count("⚡ bash echo first >> log.txt") == 2
    assert (project / "notes.txt").read_text() == "ALPHA\nBETA\n"
    assert (project / "log.txt").read_text() == "first\nfirst\nsecond\n"


def test_plan_mode_refuses_changes_and_shift_tab_cycles_modes(repl: SharedRepl) -> None:
    term = repl.term
    repl.script(
        Reply(calls=[Call("write_file", {"path": "refused.txt", "content": "x\n"})]),
        Reply(text="Plan: 1. write refused.txt."),
    )
    term.expect("default mode")  # the toolbar
    term.line("/mode plan")
    term.expect("Mode: plan")
    term.prompt()
    term.expect("plan mode")  # the toolbar, drawn under the new prompt
    term.line("make refused.txt")
    term.expect("📝 write refused.txt")
    term.expect("refused in plan mode")
    term.expect("Plan: 1. write refused.txt.")
    term.expect("⏺ done in")
    assert APPROVAL not in term.since()
    term.expect("Plan ready. Carry it out?")
    term.settle()
    term.send("n")  # one key, as Allow? takes its answer
    term.expect("Still in plan mode")
    term.prompt()
    term.send(SHIFT_TAB)
    term.expect("default mode")
    term.send(SHIFT_TAB)
    term.expect("auto mode")
    term.settle()
    assert not (repl.project / "refused.txt").exists()
    (answer,) = tool_messages(repl.requests[1])
    assert "plan mode" in answer["content"]


def _sleep_running(marker: str) -> bool:
    listing = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=False).stdout
    return any(line.strip() == f"sleep {marker}" for line in listing.splitlines())


def _gone_soon(marker: str) -> bool:
    """`sleep MARKER` has stopped, or stops within 10 s (killed, its sandbox's namespace torn down: the prompt
    can be back a moment before the kernel is done), far below the command's own 37 s."""
    deadline = time.monotonic() + 10
    while _sleep_running(marker) and time.monotonic() < deadline:
        time.sleep(0.1)  # a look at the process table, not at the terminal
    return not _sleep_running(marker)


def test_esc_interrupts_a_long_command_and_the_next_request_is_valid(repl: SharedRepl) -> None:
    term = repl.term
    repl.script(
        Reply(text="Running the slow command.", calls=[Call("bash", {"command": "sleep 37.25"})]),
        Reply(text="It was interrupted; tell me how to go on."),
    )
    term.line("/mode auto")
    term.expect("Mode: auto")
    term.prompt()
    term.line("run the slow thing")
    term.expect("⚡ bash sleep 37.25")
    term.expect("Running bash")  # the spinner: the command is under way
    term.send(ESC)
    term.expect("interrupted by user")
    term.expect("⏺ interrupted after")
    term.prompt()  # within the pexpect timeout, far below the command's 37 s
    assert _gone_soon("37.25"), "the interrupted command's process is still running"
    term.line("what happened?")
    term.expect("It was interrupted; tell me how to go on.")
    term.prompt()
    follow_up = repl.requests[1]
    assert_history_valid(follow_up)
    (answer,) = tool_messages(follow_up)
    assert "interrupted by user" in answer["content"]
    assert follow_up["messages"][-1] == {"role": "user", "content": "what happened?"}


def test_esc_at_the_approval_prompt_declines_and_interrupts(repl: SharedRepl) -> None:
    term = repl.term
    repl.script(Reply(calls=[Call("write_file", {"path": "x.txt", "content": "x\n"})]), Reply(text="ok"))
    term.line("write x")
    term.expect(APPROVAL)
    term.send(ESC)
    term.expect("no (interrupted)")
    term.expect("⏺ interrupted after")
    term.prompt()
    term.line("never mind")
    term.expect("ok")
    term.prompt()
    assert not (repl.project / "x.txt").exists()
    assert_history_valid(repl.requests[1])


def test_slash_commands_and_the_context_meter(start: Any) -> None:
    long_answer = "Hi there. " + "Here is a long explanation. " * 150  # enough to move the meter
    steps: list[Step] = [Reply(text=long_answer, usage={"prompt_tokens": 1234, "completion_tokens": 56})]
    with ScriptedLLM(steps) as llm:
        term = start(llm)
        term.line("/hepl")
        term.expect("Unknown command /hepl. Did you mean /help?")
        term.prompt()
        term.line("/help")
        for name in ("/clear", "/exit", "/help", "/mode [default|auto|plan]", "/model [NAME]", "/tokens"):
            term.expect(name)
        term.prompt()
        term.line("hello")
        term.expect("Hi there.")
        term.expect("⏺ done in")
        term.expect("↑ 1.2k ↓ 56 tokens")
        term.prompt()
        before = meter_tokens(term.expect(METER))  # the toolbar, counted by the context engine
        term.line("/tokens")
        term.expect("Session usage · 1 request")
        term.expect("1.2k  (1,234)")
        term.expect("56  (56)")
        term.prompt()
        term.send("\x1b[A")  # Up recalls the last entry
        term.line("")
        term.expect("Session usage · 1 request")
        term.prompt()
        term.line("/model")
        term.expect("Model: scripted-model")
        term.prompt()
        term.line("/clear")
        term.expect("Started a new conversation.")
        term.prompt()
        assert meter_tokens(term.expect(METER)) < before  # only the system prompt and tools remain
        term.line("/exit")  # leaving says how to come back
        sid = term.expect(re.compile(r"Session \d{8}-\d{6}-[0-9a-f]{4}")).split()[1]
        term.expect(f"resume it with: swecli --resume {sid}")
        assert term.exit_status() == 0


def test_mentions_multiline_input_and_tab_completion(repl: SharedRepl) -> None:
    term = repl.term
    (repl.project / "src").mkdir()
    (repl.project / "src" / "app.py").write_text("def main():\n    return 42\n")
    repl.script(Reply(text="It returns 42."), Reply(text="Two lines received."), Reply(text="Paste received."))
    term.send("what does @src/ap")
    term.settle()
    term.send("\t")
    term.settle()
    term.line(" return?")
    term.expect("📎 src/app.py · 2 lines")
    term.expect("It returns 42.")
    term.prompt()
    term.send("line one")
    term.send(ALT_ENTER)
    term.line("line two")
    term.expect("Two lines received.")
    term.prompt()
    term.send("\x1b[200~pasted one\rpasted two\x1b[201~")  # a bracketed paste, as terminals send it
    term.line("")
    term.expect("Paste received.")
    term.prompt()
    first = repl.requests[0]["messages"]
    assert first[-1] == {"role": "user", "content": "what does @src/app.py return?"}
    assert "def main():\n    return 42" in first[-2]["content"]
    assert 'path="src/app.py"' in first[-2]["content"]
    assert repl.requests[1]["messages"][-1]["content"] == "line one\nline two"
    assert repl.requests[2]["messages"][-1]["content"] == "pasted one\npasted two"


def test_ctrl_c_on_an_empty_prompt_asks_once_more_then_leaves(start: Any) -> None:
    with ScriptedLLM([]) as llm:
        term = start(llm)
        term.send("some text")
        term.settle()
        term.send("\x03")  # clears the line, does not leave
        term.settle()
        term.send("\x03")
        term.expect("Press Ctrl-C again to exit")
        term.prompt()
        term.send("\x03")
        assert term.exit_status() == 0


def test_ctrl_c_interrupts_a_streaming_answer_and_keeps_what_arrived(repl: SharedRepl) -> None:
    term = repl.term
    slow = Reply(text="First words arrive. " + "More words keep coming. " * 200, chunk=12, delay=0.05)
    repl.script(slow, Reply(text="Picking up again."))
    term.line("tell me a long story")
    term.expect("First words arrive.")  # streaming: shown in the live region
    term.send("\x03")
    term.expect("⏺ interrupted after")
    term.prompt()
    term.line("go on")
    term.expect("Picking up again.")
    term.prompt()
    messages = repl.requests[1]["messages"]
    kept = [m for m in messages if m["role"] == "assistant"]
    assert kept and kept[-1]["content"].startswith("First words arrive.")
    assert len(kept[-1]["content"]) < len(slow.text)
    assert messages[-1] == {"role": "user", "content": "go on"}


def test_continue_resumes_the_last_conversation(start: Any, project: Path) -> None:
    (project / "notes.txt").write_text("n\n")
    steps: list[Step] = [Reply(text="Hello."),
                         Reply(calls=[Call("read_file", {"path": "notes.txt"}), Call("grep", {"pattern": "n"})]),
                         Reply(text="The answer is 42.\nIt was in notes.txt.")]
    with ScriptedLLM(steps) as llm:  # the last conversation, had in process (typing it is the other tests')
        repl = in_process(project, llm)
        try:
            repl.submit("hi")
            repl.submit("what is the answer?")
        finally:
            repl.close()
        sid = repl.session.session_id
    with ScriptedLLM([Reply(text="You asked about the answer.")]) as llm:
        term = start(llm, "--continue")
        text = term.text
        assert f"Resumed session {sid} · 7 messages" in text
        # The last exchanges, compactly: each prompt, its actions, the answer's first line.
        replay = text[text.index("Resumed session"):]
        assert replay.index("❯ hi") < replay.index("⏺ Hello.") < replay.index("❯ what is the answer?")
        assert "2 actions: read notes.txt, grep 'n'" in replay
        assert "⏺ The answer is 42. …" in replay and "It was in notes.txt." not in replay
        term.line("what did I ask?")
        term.expect("You asked about the answer.")
        term.prompt()
        leave(term)
    contents = [m.get("content") for m in llm.requests[0]["messages"]]
    assert contents[-2:] == ["The answer is 42.\nIt was in notes.txt.", "what did I ask?"]


OPENCLI = ("# demo\n\n## Overview\nA one-file demo (app.py:1).\n\n## Structure\n- `app.py`\n\n## Key files\n"
           "- `app.py:1`\n\n## Patterns\nunknown\n\n## Dependencies\nnone\n\n## Build and test\n"
           "`python3 app.py`\n\n## Current state\nPrints hi.\n")


def test_context_compact_init_notes_and_resume_commands(project: Path) -> None:
    """In process: what the commands do and say (typing them is the other tests')."""
    (project / "app.py").write_text("def main():\n    print('hi')\n" + "".join(f"# note {i}\n" for i in range(400)))
    summary = "## Current task\nReading app.py.\n## Files\napp.py"
    steps: list[Step] = [
        Reply("Hello."),
        Reply("Fine."),
        Reply(summary),  # a /compact that would not shrink the short conversation
        Reply(calls=[Call("read_file", {"path": "app.py"})]),
        Reply("app.py prints hi."),
        Reply(summary),  # the /compact summary request
        Reply("OK."),  # /init: not an OPENCLI.md, refused
        Reply(OPENCLI),  # /init
        Reply("It is a one-file demo."),
    ]
    with ScriptedLLM(steps) as llm:
        repl = in_process(project, llm)

        def say(line: str) -> str:
            before = len(output(repl))
            repl.submit(line)
            return output(repl)[before:]

        try:
            assert "Hello." in say("hi")
            assert "Fine." in say("and you?")
            assert "compaction would not shrink the conversation" in say("/compact")
            assert "compacted" not in output(repl)
            assert "app.py prints hi." in say("what does app.py do? keep answers short")
            report, at = say("/context"), 0
            for row in ("compaction at", "system", "tools", "history", "free"):
                at = report.index(row, at) + len(row)  # each, in this order
            assert re.search(r"compacted .*tokens \(-\d+%", say("/compact keep the file names"))
            assert "keep the file names" in json.dumps(llm.requests[5])  # the focus steered the summary request
            assert "does not look like OPENCLI.md" in say("/init")
            assert not (project / "OPENCLI.md").exists()
            assert f"({len(OPENCLI.splitlines())} lines); this session uses it from now on" in say("/init")
            assert (project / "OPENCLI.md").read_text() == OPENCLI
            assert "It is a one-file demo." in say("what is it?")
            assert "A one-file demo (app.py:1)" in llm.requests[-1]["messages"][0]["content"]  # loaded at once
            # /init's two calls count with the tasks' five and the two summary requests (one compaction's summary
            # would not have shrunk the conversation and was not applied, but it was billed all the same)
            assert "Session usage · 9 requests" in say("/tokens")
            assert "Current goal" in say("/notes")
            listing = say("/resume")
            assert "hi" in listing[listing.index("4 turns"):]  # listed by its first prompt
            say("/exit")
            assert repl._exit
        finally:
            repl.close()


def test_a_positional_task_starts_the_repl_on_it(project: Path, home: Path) -> None:
    with ScriptedLLM([Reply(text="Greeting fixed.")]) as llm:
        term = spawn_swecli(llm.base_url, project, home, "fix the greeting")
        try:
            term.expect("❯ fix the greeting")
            term.expect("Greeting fixed.")
            term.expect("⏺ done in")
            term.prompt()  # then the REPL goes on as usual
            leave(term)
        finally:
            term.close()
    assert llm.requests[0]["messages"][-1] == {"role": "user", "content": "fix the greeting"}


def test_bang_runs_a_shell_command_and_the_model_sees_it_next_turn(project: Path) -> None:
    (project / "greet.py").write_text("print('helo')\n")
    with ScriptedLLM([Reply(text="I see the greeting is fixed.")]) as llm:
        repl = in_process(project, llm)
        try:
            repl.submit("!sed -i s/helo/hello/ greet.py && cat greet.py")
            shown = output(repl)
            assert shown.index("print('hello')") < shown.index("⎿  exit 0")  # the output, shown as a shell would
            assert not llm.requests  # running it asked the model nothing
            repl.submit("is it fixed?")
            assert "I see the greeting is fixed." in output(repl)
        finally:
            repl.close()
    assert (project / "greet.py").read_text() == "print('hello')\n"
    first = [m["content"] for m in llm.requests[0]["messages"] if m["role"] == "user"]
    assert first[-1] == "is it fixed?"
    assert "$ sed -i s/helo/hello/ greet.py && cat greet.py\nprint('hello')\nexit code 0" in first[-2]
    log = next((project / ".swecli" / "logs").glob("*.jsonl")).read_text()
    assert '"event":"tool"' in log and "sed -i" in log


def test_text_typed_while_the_model_works_is_queued_as_the_next_message(repl: SharedRepl) -> None:
    term = repl.term
    typed = threading.Event()  # the first answer stops halfway until the second task is queued
    slow = Reply(text="Working on the first task, " + "step by step, " * 20 + "done.", chunk=8, hold=typed)
    repl.script(slow, Reply(text="Second task done."))
    term.line("first task")
    term.expect("Working on")
    term.send("also the second task")
    term.expect("❯ also the second task")  # being typed, under the spinner
    term.send("\r")
    term.expect("⏎ queued: also the second task")
    assert "⏺ done in" not in repl.shown()  # the first turn was still under way
    typed.set()
    term.expect("⏺ done in")
    term.expect("❯ also the second task")  # sent as soon as the first turn ended
    term.expect("Second task done.")
    term.prompt()
    assert repl.requests[1]["messages"][-1] == {"role": "user", "content": "also the second task"}
    assert repl.requests[1]["messages"][-2]["content"].endswith("done.")


def test_a_running_command_shows_its_last_lines_and_esc_leaves_what_the_model_got(repl: SharedRepl) -> None:
    term = repl.term
    command = "for i in $(seq 1 60); do echo progress line $i; sleep 0.2; done"
    repl.script(Reply(calls=[Call("bash", {"command": command})]), Reply(text="Stopped early."))
    term.line("/mode auto")
    term.expect("Mode: auto")
    term.prompt()
    term.line("run the long job")
    term.expect("progress line 3")  # live, while the command runs
    assert "⏺" not in term.since()
    term.expect("Running bash")
    term.send(ESC)
    term.expect("interrupted by user")
    term.expect(re.compile(r"progress line \d+"))  # the partial output, under the result line
    term.expect("⏺ interrupted after")
    term.prompt()
    term.line("ok")
    term.expect("Stopped early.")
    term.prompt()
    (answer,) = tool_messages(repl.requests[1])
    assert "progress line 3" in answer["content"] and "interrupted by user" in answer["content"]


def test_plan_mode_offers_to_carry_out_the_plan(repl: SharedRepl) -> None:
    term = repl.term
    repl.script(
        Reply(text="Plan: 1. write plan.txt."),
        Reply(calls=[Call("write_file", {"path": "plan.txt", "content": "done\n"})]),
        Reply(text="Carried out."),
    )
    term.line("/mode plan")
    term.expect("Mode: plan")
    term.prompt()
    term.line("plan the work")
    term.expect("Plan: 1. write plan.txt.")
    term.expect("Plan ready. Carry it out? [a] yes, changes without asking")
    term.settle()
    term.send("a")  # one key, no Enter
    term.expect("Mode: auto")
    term.expect("❯ Carry out the plan above.")
    term.expect("📝 write plan.txt")
    term.expect("Carried out.")
    term.prompt()
    assert APPROVAL not in repl.shown() and "reflected" not in repl.shown()
    assert (repl.project / "plan.txt").read_text() == "done\n"
    assert repl.requests[1]["messages"][-1] == {"role": "user", "content": "Carry out the plan above."}


def test_clear_clears_the_screen(repl: SharedRepl) -> None:
    repl.term.line("/clear")
    repl.term.expect("Started a new conversation.")
    assert "\x1b[2J" in repl.raw_since()  # the terminal was told to erase the screen
    repl.term.prompt()


def test_clear_leaves_no_spare_sandbox_waiting(project: Path) -> None:
    """After a bash call a sandbox waits for the next command; /clear starts a new conversation, and the
    REPL, still running, discards it (the next request starts one again). In process: the spare is a child
    process all the same."""
    from swecli.tools.sandbox import unavailable_reason
    from tests.tools.test_spare import _gone, _waiting_spares

    if unavailable_reason():
        pytest.skip(f"bwrap cannot run here: {unavailable_reason()}")
    root = project.resolve()
    with ScriptedLLM([Reply(calls=[Call("bash", {"command": "true"})]), Reply("Ran it.")]) as llm:
        repl = in_process(project, llm, mode="auto")
        try:
            repl.submit("run true")
            assert "Ran it." in output(repl)
            assert _appears(root, _waiting_spares), "no spare sandbox was waiting for the next command"
            repl.submit("/clear")
            assert "Started a new conversation." in output(repl)
            assert _gone(root)
        finally:
            repl.close()


def _appears(root: Path, find: Any) -> bool:
    import time

    deadline = time.monotonic() + 120
    while not find(root) and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(find(root))


def test_a_failed_turn_reports_how_long_it_took(project: Path) -> None:
    from swecli.testing.server import Fail

    with ScriptedLLM([Fail.overloaded(), Fail.overloaded()]) as llm:
        shown = shown_for(project, llm, "hello", max_retries=1, retry_base_delay=0.2)
    assert "retrying in" in shown
    duration = float(re.findall(r"⏺ failed after (\d+\.\d)s", shown)[-1])
    assert duration > 0.0  # the retries' wait, not "0.0s"
    assert len(llm.requests) == 2
