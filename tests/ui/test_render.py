"""Rendering, checked as text on a fixed-width console without colour."""

from __future__ import annotations

import io

from rich.console import Console, RenderableType

from swecli.events import (
    CompactionDone,
    Event,
    MessageAppended,
    ModelCallStarted,
    Notice,
    ReasoningDelta,
    TextDelta,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnFinished,
    Waiting,
)
from swecli.messages import AssistantMessage, ToolCall, Usage
from swecli.permissions import ApprovalRequest
from swecli.tools.base import ToolResult
from swecli.ui.render import (
    BlockStream,
    LineStream,
    Renderer,
    action_line,
    approval_preview,
    completion_line,
    diff_text,
    format_duration,
    result_text,
)

DIFF = "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,2 @@\n def main():\n-    return 41\n+    return 42\n"


def capture_console() -> Console:
    return Console(file=io.StringIO(), width=80, color_system=None, force_terminal=False, highlight=False)


def plain(console: Console) -> str:
    """What was printed, with the padding rich adds at line ends removed."""
    file = console.file
    assert isinstance(file, io.StringIO)
    return "\n".join(line.rstrip() for line in file.getvalue().splitlines())


def render(renderable: RenderableType) -> str:
    console = capture_console()
    console.print(renderable)
    return plain(console)


def call(name: str, call_id: str = "c1") -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments="{}")


def test_action_lines_show_an_icon_and_the_key_argument() -> None:
    assert render(action_line("grep", {"pattern": "login", "path": "src/"})) == "🔍 grep 'login' src/"
    assert render(action_line("grep", {"pattern": "def ", "path": ".", "glob": "*.py"})) == "🔍 grep 'def ' (*.py)"
    assert render(action_line("read_file", {"path": "src/api/auth.py"})) == "📖 read src/api/auth.py"
    assert render(action_line("read_file", {"path": "a.py", "offset": 10, "limit": 20})) == "📖 read a.py:10-29"
    assert render(action_line("edit_file", {"path": "src/api/auth.py", "old_string": "x"})) == \
        "✏️ edit src/api/auth.py"
    assert render(action_line("write_file", {"path": "notes.md", "content": "..."})) == "📝 write notes.md"
    assert render(action_line("bash", {"command": "pytest -q"})) == "⚡ bash pytest -q"
    assert render(action_line("list_files", {})) == "📁 list ."
    assert render(action_line("list_files", {"path": "src", "glob": "*.py"})) == "📁 list src '*.py'"


def test_action_lines_keep_model_text_literal_and_on_one_line() -> None:
    assert render(action_line("bash", {"command": "echo [bold]hi[/bold]\nrm x"})) == "⚡ bash echo [bold]hi[/bold] …"
    assert render(action_line("custom_tool", {"query": "[red]x"})) == "🔧 custom_tool query='[red]x'"


def test_result_summary_with_a_preview_from_the_start_of_a_search() -> None:
    result = ToolResult("a.py:1: login\nb.py:2: login\nc.py:3: login\nd.py:9: login",
                        summary="Found 4 matches across 4 files")
    assert render(result_text("grep", result)) == (
        "  ⎿  Found 4 matches across 4 files\n"
        "     a.py:1: login\n"
        "     b.py:2: login\n"
        "     c.py:3: login\n"
        "     … +1 line"
    )


def test_command_results_preview_the_end_where_failures_are() -> None:
    result = ToolResult("collected 9\n.....\n....F\nFAILED test_x\n1 failed, 8 passed\nexit code 1",
                        is_error=True, summary="exit 1 · 3.2s")
    assert render(result_text("bash", result)) == (
        "  ⎿  exit 1 · 3.2s\n"
        "     … +3 lines\n"
        "     FAILED test_x\n"
        "     1 failed, 8 passed\n"
        "     exit code 1"
    )


def test_reads_show_only_the_summary_and_errors_do_not_repeat_it() -> None:
    assert render(result_text("read_file", ToolResult("1\tx\n2\ty", summary="2 lines"))) == "  ⎿  2 lines"
    error = ToolResult("No such file: a.py\nDid you mean b.py?", is_error=True)
    assert render(result_text("read_file", error)) == "  ⎿  No such file: a.py\n     Did you mean b.py?"
    declined = ToolResult("The user declined this bash call.", is_error=True, summary="declined")
    assert render(result_text("bash", declined)) == "  ⎿  declined"


def test_diffs_are_indented_and_capped() -> None:
    assert render(diff_text(DIFF)) == (
        "    --- a/src/app.py\n"
        "    +++ b/src/app.py\n"
        "    @@ -1,2 +1,2 @@\n"
        "     def main():\n"
        "    -    return 41\n"
        "    +    return 42"
    )
    assert render(diff_text(DIFF, max_lines=2)).splitlines()[-1] == "    … +4 more diff lines"


def test_diff_colours() -> None:
    text = diff_text(DIFF)
    styles = {text.plain[span.start:span.end].strip(): str(span.style) for span in text.spans}
    assert styles["+    return 42"] == "green"
    assert styles["-    return 41"] == "red"
    assert styles["@@ -1,2 +1,2 @@"] == "cyan"


def test_completion_line() -> None:
    turn = TurnFinished("ok", 3, Usage(input_tokens=3200, output_tokens=450), 12.3)
    assert render(completion_line(turn)) == "⏺ done in 12s · ↑ 3.2k ↓ 450 tokens"
    stopped = TurnFinished("interrupted by user", 1, Usage(input_tokens=80), 1.24, "interrupted")
    assert render(completion_line(stopped)) == "⏺ interrupted after 1.2s · ↑ 80 ↓ 0 tokens"
    local = TurnFinished("", 1, Usage(input_tokens=2006, output_tokens=41, requests=1, estimated_requests=1), 3.0,
                         "output_limit")
    assert render(completion_line(local)) == "⏺ cut at the output limit after 3.0s · ↑ ~2k ↓ ~41 tokens (estimated)"


def test_durations() -> None:
    assert [format_duration(s) for s in (0.42, 3.25, 12.4, 59.6, 125, 3725)] == \
        ["0.4s", "3.2s", "12s", "60s", "2m 05s", "1h 02m"]


def test_approval_preview_shows_what_the_action_line_cut_or_the_diff() -> None:
    # A short one-line command is in full on the action line above the question: not printed twice.
    bash = ApprovalRequest(call("bash"), {"command": "rm -rf build && make [all]"}, "rm -rf build && make [all]")
    assert render(approval_preview(bash)) == ""
    assert render(action_line("bash", bash.args)) == "⚡ bash rm -rf build && make [all]"
    script = "cat > run.sh <<EOF\nmake [all]\nEOF"
    multi = ApprovalRequest(call("bash"), {"command": script}, script)
    assert render(approval_preview(multi)) == "    $ cat > run.sh <<EOF\nmake [all]\nEOF"
    long = "pytest " + "tests/test_a_really_long_module_name.py " * 6
    assert render(approval_preview(ApprovalRequest(call("bash"), {"command": long}, long))).startswith("    $ pytest")
    edit = ApprovalRequest(call("edit_file"), {"path": "src/app.py"}, DIFF)
    assert render(approval_preview(edit)).splitlines()[-1] == "    +    return 42"
    danger = ApprovalRequest(call("bash"), {"command": "rm -rf /"}, "rm -rf /", danger="deletes the filesystem root")
    assert render(approval_preview(danger)) == "    ⚠ deletes the filesystem root"
    note = ApprovalRequest(call("bash"), {"command": "make"}, "make", note="runs without the sandbox")
    assert render(approval_preview(note)) == "    ⚠ runs without the sandbox"


def test_line_stream_wraps_long_paragraphs_at_spaces() -> None:
    stream = LineStream(width=20)
    assert stream.feed("one two three four five six") == ["one two three four"]
    assert stream.partial == "five six"
    assert stream.feed(" seven\nnext") == ["five six seven"]
    assert stream.flush() == ["next"]
    assert stream.flush() == []


def test_block_stream_never_splits_a_code_fence() -> None:
    stream = BlockStream()
    assert stream.feed("Intro para") == []
    assert stream.feed("graph.\n\n```py\nx = 1\n\n") == ["Intro paragraph."]
    assert stream.feed("y = 2\n```\n\nAfter") == ["```py\nx = 1\n\ny = 2\n```"]
    assert stream.flush() == ["After"]


def test_a_turn_renders_in_order_with_brackets_kept() -> None:
    console = capture_console()
    renderer = Renderer(console, live=False)
    grep = ToolCall(id="c1", name="grep", arguments="{}")
    edit = ToolCall(id="c2", name="edit_file", arguments="{}")
    renderer.begin_turn()
    events: list[Event] = [
        ModelCallStarted(1, 0),
        ReasoningDelta("The user wants [bold]login[/bold] "), ReasoningDelta("fixed.\nFirst find it."),
        TextDelta("Searching for "), TextDelta("**login**."),
        MessageAppended(AssistantMessage(content="Searching for **login**.", tool_calls=(grep, edit))),
        ToolStarted(grep, {"pattern": "login", "path": "src/"}),
        ToolFinished(grep, ToolResult("src/a.py:3: def login(", summary="Found 1 match in 1 file"), 0.1),
        ToolStarted(edit, {"path": "src/a.py"}),
        ToolFinished(edit, ToolResult("Edited src/a.py", summary="1 replacement", diff=DIFF), 0.1),
        ModelCallStarted(2, 0),
        TextDelta("Fixed `login` in [src/a.py]."),
        MessageAppended(AssistantMessage(content="Fixed `login` in [src/a.py].")),
        TurnFinished("Fixed `login` in [src/a.py].", 2, Usage(input_tokens=3200, output_tokens=450), 12.0),
    ]
    for event in events:
        renderer(event)
    renderer.end_turn()
    assert plain(console) == (
        "💭 Reasoning:\n"
        "  The user wants [bold]login[/bold] fixed.\n"
        "  First find it.\n"
        "Searching for login.\n"
        "🔍 grep 'login' src/\n"
        "  ⎿  Found 1 match in 1 file\n"
        "     src/a.py:3: def login(\n"
        "✏️ edit src/a.py\n"
        "  ⎿  1 replacement\n"
        "    --- a/src/app.py\n"
        "    +++ b/src/app.py\n"
        "    @@ -1,2 +1,2 @@\n"
        "     def main():\n"
        "    -    return 41\n"
        "    +    return 42\n"
        "Fixed login in [src/a.py].\n"
        "⏺ done in 12s · ↑ 3.2k ↓ 450 tokens"
    )


def test_a_diff_already_approved_is_not_repeated() -> None:
    console = capture_console()
    renderer = Renderer(console, live=False)
    edit = ToolCall(id="c9", name="edit_file", arguments="{}")
    renderer.note_diff_shown("c9")
    renderer(ToolFinished(edit, ToolResult("ok", summary="1 replacement", diff=DIFF), 0.1))
    assert plain(console) == "  ⎿  1 replacement"


def test_an_answer_without_streaming_is_shown_whole() -> None:
    console = capture_console()
    renderer = Renderer(console, live=False)
    renderer(ModelCallStarted(1, 0))
    renderer(MessageAppended(AssistantMessage(content="# Title\n\nBody text.", reasoning="Short thought.")))
    assert plain(console) == "💭 Reasoning:\n  Short thought.\n" + render_markdown("# Title\n\nBody text.")


def render_markdown(text: str) -> str:
    from swecli.ui.render import as_written

    return render(as_written(text))


def test_text_that_looks_like_html_is_shown_as_written() -> None:
    text = ("<details>\n<summary>Why</summary>\n\nIt was `List<T>`.\n</details>\n\n"
            "Use List<String> and Map<K, V>; a <br/> break and <T> stay.\n\n**bold** and `code` still render.")
    console = capture_console()
    renderer = Renderer(console, live=False)
    renderer(TextDelta(text))
    renderer(MessageAppended(AssistantMessage(content=text)))
    shown = plain(console)
    for written in ("<details>", "<summary>Why</summary>", "List<T>", "</details>", "List<String>", "Map<K, V>",
                    "<br/>", "<T> stay"):
        assert written in shown
    assert "**" not in shown and "bold and code still render" in shown


def test_markdown_streamed_in_blocks_matches_a_whole_render() -> None:
    text = "Here is the fix:\n\n```python\ndef f():\n\n    return 1\n```\n\n1. first\n2. second\n\nDone."
    console = capture_console()
    renderer = Renderer(console, live=False)
    for i in range(0, len(text), 5):
        renderer(TextDelta(text[i:i + 5]))
    renderer(MessageAppended(AssistantMessage(content=text)))
    assert plain(console) == render_markdown(text)


def test_notices_compactions_and_limits() -> None:
    console = capture_console()
    renderer = Renderer(console, live=False)
    renderer(Notice("warning", "Rate limited [429]. Retrying in 2.0s."))
    renderer(CompactionDone("auto", "summarize", 120_000, 30_000, 42, 3.0))
    renderer(TurnFinished("Stopped after 5 iterations.", 5, Usage(), 61, "iteration_limit"))
    assert plain(console) == (
        "⚠ Rate limited [429]. Retrying in 2.0s.\n"
        "⟳ compacted 42 messages: 120k → 30k tokens (-75%, summarize, auto)\n"
        "Stopped after 5 iterations.\n"
        "⏺ stopped at the iteration limit after 1m 01s · ↑ 0 ↓ 0 tokens"
    )


def test_status_line_shows_elapsed_time_and_how_to_interrupt() -> None:
    renderer = Renderer(capture_console(), live=False)
    renderer.begin_turn()
    start = renderer._turn_started
    assert render(renderer.status_line(start + 3.0))[1:] == " Thinking… 3.0s · esc to interrupt"
    renderer(ToolStarted(call("bash"), {"command": "make"}))
    renderer.mark_interrupting()
    assert render(renderer.status_line(start + 14.0))[1:] == " Interrupting… 14s · esc to interrupt"


def test_the_status_clock_counts_the_running_command_then_the_turn_again() -> None:
    renderer = Renderer(capture_console(), live=False)
    renderer.begin_turn()
    renderer._turn_started -= 100.0  # the turn has run for 100 s when the command starts
    renderer(ToolStarted(call("bash"), {"command": "make"}))
    now = renderer._turn_started + 100.0
    assert render(renderer.status_line(now + 3.0))[1:].startswith(" Running bash… 3.0s")
    renderer(ToolFinished(call("bash"), ToolResult("ok", summary="exit 0"), 3.0))
    assert render(renderer.status_line(now + 4.0))[1:].startswith(" Thinking… 1m 44s")


def test_a_cut_outputs_preview_counts_the_lines_hidden_in_the_whole_of_it() -> None:
    from swecli.tools.spool import Spool

    spool = Spool()
    spool.write("".join(f"{i}\n" for i in range(1, 200_001)))
    result = ToolResult("1\n2\n... [1,000 bytes (5,000 lines) cut from the middle of the output] ...\n199999\n200000\n"
                        "exit code 0", summary="exit 0 · 1.0s", full=spool.finish())
    assert render(result_text("bash", result, preview_lines=2)).splitlines() == [
        "  ⎿  exit 0 · 1.0s", "     … +199,998 lines", "     199999", "     200000"]


def test_the_live_region_shows_a_running_commands_last_lines_and_typed_messages() -> None:
    console = capture_console()
    renderer = Renderer(console, live=False)
    call = ToolCall(id="b1", name="bash", arguments='{"command": "make"}')
    renderer(ToolStarted(call, {"command": "make"}))
    renderer(ToolOutput(call, "".join(f"step {i}\n" for i in range(1, 9)) + "\x1b[32mbuil"))
    renderer(ToolOutput(call, "ding\r 50%\r100%"))
    renderer.show_typing("and then", ["run the tests"])
    view = render(renderer._live_view())
    assert view.splitlines()[:5] == ["     step 5", "     step 6", "     step 7", "     step 8", "     100%"]
    assert "Running bash" in view
    assert view.splitlines()[-2:] == ["  ⏎ queued: run the tests", "  ❯ and then▏"]
    renderer(ToolFinished(call, ToolResult("ok\nexit code 0", summary="exit 0 · 1.0s"), 1.0))
    assert "step" not in render(renderer._live_view())


def test_an_interrupted_command_shows_the_partial_output_the_model_got() -> None:
    result = ToolResult("interrupted by user\none\ntwo\nthree\nfour\ninterrupted by user\nexit code -15",
                        is_error=True, summary="interrupted by user")
    assert render(result_text("bash", result)).splitlines() == [
        "  ⎿  interrupted by user", "     … +1 line", "     two", "     three", "     four"]
    quiet = ToolResult("interrupted by user\n(no output)\ninterrupted by user\nexit code -15", is_error=True,
                       summary="interrupted by user")
    assert render(result_text("bash", quiet)) == "  ⎿  interrupted by user"


def test_a_compaction_that_grew_is_signed_correctly() -> None:
    from swecli.ui.render import compaction_line

    grew = CompactionDone("manual", "summarize", 2_700, 2_800, 3, 0.5)
    assert "(+4%, summarize, manual)" in render(compaction_line(grew))
    shrank = CompactionDone("auto", "summarize", 10_000, 2_500, 30, 1.5)
    assert "(-75%, summarize, auto)" in render(compaction_line(shrank))


def test_a_resumed_conversation_replays_its_last_exchanges_compactly() -> None:
    from swecli.messages import ToolMessage, UserMessage
    from swecli.ui.render import replay_lines

    read = ToolCall(id="r", name="read_file", arguments='{"path": "a.py"}')
    history = [
        UserMessage(content="first"), AssistantMessage(content="One."),
        UserMessage(content="second task\nwith two lines"),
        AssistantMessage(content="", tool_calls=(read,)),
        ToolMessage(tool_call_id="r", name="read_file", content="x", is_error=True),
        AssistantMessage(content="Done.\nMore detail."),
        UserMessage(content="third"), AssistantMessage(content="Three."),
    ]
    lines = [render(line) for line in replay_lines(history, exchanges=2)]
    assert lines == ["  … 1 earlier exchange not shown", "❯ second task …", "  1 action (1 failed): read a.py",
                     "⏺ Done. …", "❯ third", "⏺ Three."]


def test_status_line_shows_how_long_a_silent_model_has_said_nothing() -> None:
    renderer = Renderer(capture_console(), live=False)
    renderer.begin_turn()
    renderer(ModelCallStarted(1, 100))
    renderer(Waiting(20.0, "llamacpp", 600.0))
    now = renderer._silent_since + 45.0 if renderer._silent_since is not None else 0.0
    assert render(renderer.status_line(now)).endswith(" · no reply for 45s · esc to interrupt")
    renderer(TextDelta("finally"))
    assert "no reply" not in render(renderer.status_line(now))
