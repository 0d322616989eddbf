"""Images through the real loop over HTTP, on both wires: attached with @path, returned by read_file,
refused in one sentence for a text-only model, counted in the meter, and replaced by stand-ins only at
planned rewrite points."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swecli.assembly import AgentSession, open_session
from swecli.config import ImagesConfig
from swecli.context.images import age_images, keep_from
from swecli.events import CompactionDone, Event, Notice
from swecli.messages import AssistantMessage, ImagePart, UserMessage
from swecli.models.vision import image_tokens
from swecli.testing.server import Call, Reply, ScriptedLLM, Step, image_sizes
from tests.helpers import scripted_settings
from tests.tools.test_images import make_image


def session(root: Path, llm: ScriptedLLM, events: list[Event], model: str = "scripted-model",
            **images: Any) -> AgentSession:
    settings = scripted_settings(llm, model=model, images=ImagesConfig(**images))
    return open_session(root, settings, listeners=[events.append])


def notices(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, Notice)]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_an_attached_image_reaches_the_model_and_is_counted(project: Path, wire: str) -> None:
    make_image(project / "shots" / "bug.png", (1280, 720))
    events: list[Event] = []
    with ScriptedLLM([Reply("The button overlaps the title.")], wire=wire) as llm:  # type: ignore[arg-type]
        s = session(project, llm, events)
        s.run("what is wrong in @shots/bug.png?")
        prompt = s.agent.history[0]
        state = s.agent.context.state(s.agent.history)
        s.close()
    assert image_sizes(llm.requests[0]) == [(1280, 720)]
    assert isinstance(prompt, UserMessage) and prompt.content == "what is wrong in @shots/bug.png?"
    assert [(i.path, i.width, i.height) for i in prompt.images] == [("shots/bug.png", 1280, 720)]
    cost = image_tokens("scripted-model", 1280, 720)
    assert f"attached image shots/bug.png (1280×720, ~{cost:,} tokens)" in notices(events)
    assert s.agent.context.counter.message(prompt) > cost  # the meter counts the image by its pixels
    assert state.history >= cost


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_read_file_returns_an_image_to_the_model(project: Path, wire: str) -> None:
    make_image(project / "ui.png", (400, 300))
    steps: list[Step] = [Reply(calls=[Call("read_file", {"path": "ui.png"})]), Reply("It is a red square.")]
    with ScriptedLLM(steps, wire=wire) as llm:  # type: ignore[arg-type]
        s = session(project, llm, [])
        s.run("what does ui.png show?")
        s.close()
    body = llm.requests[1]
    assert image_sizes(body) == [(400, 300)]
    if wire == "openai":
        tool, returned = body["messages"][-2:]
        assert tool["role"] == "tool" and tool["content"] == "Image ui.png (400×300 PNG) is attached."
        assert returned["role"] == "user" and returned["content"][1]["type"] == "image_url"
    else:
        result = body["messages"][-1]["content"][0]
        assert result["type"] == "tool_result" and result["content"][1]["type"] == "image"


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_text_only_model_gets_a_sentence_not_an_image(project: Path, wire: str) -> None:
    make_image(project / "shot.png", (200, 100))
    events: list[Event] = []
    steps: list[Step] = [Reply(calls=[Call("read_file", {"path": "shot.png"})]), Reply("I cannot see it.")]
    with ScriptedLLM(steps, wire=wire) as llm:  # type: ignore[arg-type]
        s = session(project, llm, events, model="deepseek-chat")
        turn = s.run("look at @shot.png")
        s.close()
    assert turn.answer == "I cannot see it."
    assert ("deepseek-chat does not accept images, so shot.png was not attached; switch to a model that does "
            "(/model), or describe it.") in notices(events)
    assert image_sizes(llm.requests[0]) == image_sizes(llm.requests[1]) == []
    assert "shot.png is an image, and the current model does not accept images" in json.dumps(llm.requests[1])


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_old_images_become_stand_ins_at_the_start_of_a_later_turn(project: Path, wire: str) -> None:
    make_image(project / "a.png", (1024, 1024))
    events: list[Event] = []
    steps: list[Step] = [Reply("one"), Reply("two"), Reply("three")]
    with ScriptedLLM(steps, wire=wire) as llm:  # type: ignore[arg-type]
        s = session(project, llm, events, batch_min_tokens=100)
        s.run("first: see @a.png")
        s.run("second")
        s.run("third")
        warnings = s.agent.context.mechanisms.warnings  # type: ignore[union-attr]
        s.close()
    first, second, third = llm.requests
    assert image_sizes(first) == image_sizes(second) == [(1024, 1024)]  # the last two turns keep it verbatim
    assert image_sizes(third) == []
    stand_in = ("[image: a.png (1024×1024 PNG), attached by the user; not in the context now: read_file 'a.png' "
                "to see it]")
    assert f"first: see @a.png\n{stand_in}" in json.dumps(third["messages"], ensure_ascii=False).replace("\\n", "\n")
    done = [e for e in events if isinstance(e, CompactionDone)]
    assert [(e.trigger, e.messages_compacted) for e in done] == [("images", 1)]
    assert warnings == 0  # the second request extended the first byte for byte; the rewrite was announced


def test_below_the_batch_threshold_old_images_wait_for_a_compaction(project: Path) -> None:
    make_image(project / "a.png", (512, 512))
    events: list[Event] = []
    # A long first answer: a compaction is applied only when it shrinks the conversation.
    steps: list[Step] = [Reply("one. " + "Some detail about the image. " * 200), Reply("two"), Reply("three"),
                         Reply("### Current task\nLooking."), Reply("four")]
    with ScriptedLLM(steps) as llm:
        s = session(project, llm, events, batch_min_tokens=50_000)
        s.run("first: see @a.png")
        s.run("second")
        s.run("third")
        s.agent.replace_history(s.agent.context.compact(s.agent.history, s.provider, "manual"), "compaction")
        s.run("fourth")
        s.close()
    assert image_sizes(llm.requests[2]) == [(512, 512)]  # eligible, but not worth a rewrite of its own
    assert image_sizes(llm.requests[4]) == []  # the compaction rewrote the prefix: the stand-in rode along
    assert "[image: a.png (512×512 PNG)" in json.dumps(llm.requests[4]["messages"], ensure_ascii=False)


def test_age_images_keeps_the_last_turns_and_counts_what_it_saves() -> None:
    image = ImagePart(media_type="image/png", data="", width=1000, height=1000, path="x.png")
    history = [UserMessage(content="one", images=(image,)), AssistantMessage(content="ok"),
               UserMessage(content="two", images=(image,)), AssistantMessage(content="ok"), UserMessage(content="3")]
    assert keep_from(history, 2) == 2
    result = age_images(history, 2, lambda w, h: w * h // 750)
    assert (result.replaced, result.saved_tokens) == (1, 1333)
    assert result.history[0].images == () and result.history[2] is history[2]
    assert age_images(history[:2], 2, lambda w, h: 1).history == history[:2]  # one turn: nothing is old yet


def test_a_pasted_image_path_outside_the_project_in_headless_mode(project: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    shot = make_image(tmp_path / "Desktop" / "Screen Shot 1.png", (300, 200))
    pasted = str(shot).replace(" ", "\\ ")  # how a terminal pastes a dropped file
    steps: list[Step] = [Reply(calls=[Call("read_file", {"path": str(shot)})]), Reply("A red rectangle.")]
    with ScriptedLLM(steps) as llm:
        cmd = [sys.executable, "-m", "swecli", "--provider", "openai-compatible", "--base-url", llm.base_url,
               "--model", "scripted-model", "-p", f"what is this? {pasted}"]
        out = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    assert f"info: attached image {shot}" in out.stderr
    assert image_sizes(llm.requests[0]) == [(300, 200)]
    assert image_sizes(llm.requests[1]) == [(300, 200), (300, 200)]  # read again from outside the project
