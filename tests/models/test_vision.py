"""Which models take images, the providers' published image-token formulas, and images on both wires."""

from __future__ import annotations

import pytest

from swecli.llm.anthropic import AnthropicProvider
from swecli.llm.base import ModelRequest
from swecli.llm.openai import OpenAIProvider
from swecli.messages import AssistantMessage, ImagePart, ToolCall, ToolMessage, UserMessage
from swecli.models.vision import accepts_images, image_tokens

SHOT = ImagePart(media_type="image/png", data="iVBORw0KGgo=", width=800, height=600, path="shot.png")


@pytest.mark.parametrize(("model", "expected"), [
    ("gpt-4o", True), ("gpt-4.1-mini", True), ("o3", True), ("claude-sonnet-4-5", True), ("gemini-2.5-pro", True),
    ("llava:13b", True), ("qwen2.5-vl-7b-instruct", True), ("llama-3.2-11b-vision", True), ("deepseek-vl2", True),
    ("deepseek-chat", False), ("gpt-3.5-turbo", False), ("o3-mini", False), ("qwen2.5-coder:7b", False),
    ("llama3.1:8b", False), ("accounts/fireworks/models/kimi-k2-instruct", False), ("my-local-model", None),
])
def test_known_families(model: str, expected: bool | None) -> None:
    assert accepts_images(model) is expected


def test_published_formulas() -> None:
    # OpenAI's examples: 1024x1024 high detail is 765 tokens on gpt-4o; 2048x4096 is 1105.
    assert image_tokens("gpt-4o", 1024, 1024) == 765
    assert image_tokens("gpt-4o", 2048, 4096) == 1105
    assert image_tokens("gpt-4o-mini", 1024, 1024) == 2833 + 5667 * 4
    # Patch models: 1024x1024 is 1024 patches, times the model's multiplier.
    assert image_tokens("gpt-4.1-mini", 1024, 1024) == 1659
    # Anthropic: width x height / 750 after fitting 1568 px (1000x1000 is about 1334).
    assert image_tokens("claude-sonnet-4-5", 1000, 1000) == 1334
    assert image_tokens("claude-sonnet-4-5", 3136, 3136) == image_tokens("claude-sonnet-4-5", 1568, 1568)


def history() -> tuple[UserMessage | AssistantMessage | ToolMessage, ...]:
    call = ToolCall(id="c1", name="read_file", arguments='{"path": "ui.png"}')
    ui = SHOT.model_copy(update={"path": "ui.png", "origin": "read with read_file"})
    return (UserMessage(content="what is wrong here?", images=(SHOT,)), AssistantMessage(tool_calls=(call,)),
            ToolMessage(tool_call_id="c1", name="read_file", content="Image ui.png (800×600 PNG) is attached.",
                        images=(ui,)))


def test_openai_wire_sends_data_urls_and_tool_images_after_the_tool_results() -> None:
    body = OpenAIProvider(model="gpt-4o", base_url="http://127.0.0.1:9/v1").request_body(
        ModelRequest(system=(), messages=history()))
    user, _, tool, returned = body["messages"]
    assert user["content"] == [{"type": "text", "text": "what is wrong here?"},
                               {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]
    assert tool == {"role": "tool", "tool_call_id": "c1", "content": "Image ui.png (800×600 PNG) is attached."}
    assert returned["role"] == "user" and returned["content"][0]["text"].endswith("ui.png")
    assert returned["content"][1]["type"] == "image_url"


def test_anthropic_wire_sends_image_blocks_in_the_prompt_and_in_the_tool_result() -> None:
    body = AnthropicProvider(model="claude-sonnet-4-5", base_url="http://127.0.0.1:9").request_body(
        ModelRequest(system=(), messages=history()))
    user, _, results = body["messages"]
    source = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
    assert user["content"] == [{"type": "image", "source": source}, {"type": "text", "text": "what is wrong here?"}]
    result = results["content"][0]
    assert result["type"] == "tool_result" and result["content"][1] == {"type": "image", "source": source}


@pytest.mark.parametrize("provider", [OpenAIProvider, AnthropicProvider])
def test_a_text_only_model_gets_the_stand_ins_never_the_images(provider: type) -> None:
    body = provider(model="deepseek-chat", base_url="http://127.0.0.1:9").request_body(
        ModelRequest(system=(), messages=history()))
    text = str(body["messages"])
    assert "base64" not in text and "image_url" not in text
    assert ("[image: shot.png (800×600 PNG), attached by the user; not in the context now: read_file 'shot.png' to "
            "see it]") in text
