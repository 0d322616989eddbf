"""Which models accept images, and what an image costs them in prompt tokens.

`accepts_images(model)` is True for families known to take images, False for families known not to
(those get a clear sentence from swecli instead of the provider's HTTP 400), None when unknown (the
image is sent, and a provider that refuses it says so).

`image_tokens(model, width, height)` follows each provider's published formula:
- Anthropic (claude-*): the image is scaled to fit 1568 px on its long edge, then width x height / 750;
- OpenAI's tile models (gpt-4o, gpt-4.1, gpt-5, o1/o3, and the default for other models): fit in
  2048 x 2048, shortest side scaled down to 768, then 85 + 170 per 512 px tile (gpt-4o-mini:
  2833 + 5667 per tile);
- OpenAI's patch models (gpt-4.1-mini/nano, o4-mini): 32 px patches, at most 1536, times the model's
  multiplier.
"""

from __future__ import annotations

import math

from swecli.lazy import regex

TEXT_ONLY = regex(r"deepseek|gpt-3\.5|o1-mini|o3-mini|gpt-oss|coder|codestral|codellama|starcoder|mixtral"
                       r"|mistral-7b|kimi-k2|glm-4\.5|llama-?3")
"""Checked after VISION, so `llama-3.2-11b-vision` or `deepseek-vl2` still count as vision models."""
VISION = regex(
    r"claude|gpt-4o|gpt-4\.1|gpt-4-turbo|gpt-4-vision|gpt-5|(?:^|/)o1(?!-mini)|(?:^|/)o3(?!-mini)|o4-mini|gemini"
    r"|llava|vision|-vl|vl-|pixtral|llama-?4|gemma-?3|qwen[\d.]*-?vl|glm-4\.5v|grok-4|moondream|minicpm-v")
PATCH_MULTIPLIERS = {"gpt-4.1-mini": 1.62, "gpt-4.1-nano": 2.46, "o4-mini": 1.72}


def accepts_images(model: str) -> bool | None:
    name = model.lower()
    if VISION.search(name):
        return True
    if TEXT_ONLY.search(name):
        return False
    return None


def sends_images(setting: bool | None, model: str) -> bool:
    """A provider's choice: the explicit setting, else images unless the model is known not to take them."""
    return setting if setting is not None else accepts_images(model) is not False


def image_tokens(model: str, width: int, height: int) -> int:
    """Prompt tokens one image of this size costs on `model` (see the module docstring)."""
    name = model.lower().rsplit("/", 1)[-1]
    if "claude" in name:
        return anthropic_tokens(width, height)
    for prefix, multiplier in PATCH_MULTIPLIERS.items():
        if name.startswith(prefix):
            return math.ceil(patch_count(width, height) * multiplier)
    if name.startswith("gpt-4o-mini"):
        return 2833 + 5667 * tile_count(width, height)
    return 85 + 170 * tile_count(width, height)


def anthropic_tokens(width: int, height: int) -> int:
    width, height = fit(width, height, 1568)
    return max(1, math.ceil(width * height / 750))


def tile_count(width: int, height: int) -> int:
    width, height = fit(width, height, 2048)
    short = min(width, height)
    if short > 768:
        width, height = round(width * 768 / short), round(height * 768 / short)
    return math.ceil(width / 512) * math.ceil(height / 512)


def patch_count(width: int, height: int, cap: int = 1536) -> int:
    patches = math.ceil(width / 32) * math.ceil(height / 32)
    if patches <= cap:
        return patches
    shrink = math.sqrt(cap * 32 * 32 / (width * height))
    width_patches = math.floor(width * shrink / 32)
    shrink *= width_patches / (width * shrink / 32)  # whole patches across the width, as OpenAI describes
    return min(cap, math.ceil(width * shrink / 32) * math.ceil(height * shrink / 32))


def fit(width: int, height: int, longest: int) -> tuple[int, int]:
    """Scaled down (never up) so the long edge is at most `longest`, keeping the aspect ratio."""
    edge = max(width, height)
    if edge <= longest:
        return width, height
    return max(1, round(width * longest / edge)), max(1, round(height * longest / edge))
