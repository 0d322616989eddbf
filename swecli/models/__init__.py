"""What swecli knows about providers and models: tables and pure functions, no I/O (config and llm read it).

    presets.py    provider presets (wire, base URL, key variable) and the known context windows
    thinking.py   the `thinking` setting, and what each wire sends for it
    vision.py     which models accept images, and what an image costs them in tokens

What other packages may use is re-exported here (`from swecli.models import ...`); each name is imported from
its module the first time it is used, so importing the package costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from swecli.lazy import exports

if TYPE_CHECKING:
    from swecli.models.presets import DEFAULT_CONTEXT_WINDOW as DEFAULT_CONTEXT_WINDOW
    from swecli.models.presets import KEY_ORDER as KEY_ORDER
    from swecli.models.presets import LOCAL_ORDER as LOCAL_ORDER
    from swecli.models.presets import PRESETS as PRESETS
    from swecli.models.presets import Preset as Preset
    from swecli.models.presets import known_context_window as known_context_window
    from swecli.models.thinking import MIN_BUDGET as MIN_BUDGET
    from swecli.models.thinking import Thinking as Thinking
    from swecli.models.vision import accepts_images as accepts_images
    from swecli.models.vision import image_tokens as image_tokens
    from swecli.models.vision import sends_images as sends_images

_EXPORTS = {
    "DEFAULT_CONTEXT_WINDOW": "presets",
    "KEY_ORDER": "presets",
    "LOCAL_ORDER": "presets",
    "MIN_BUDGET": "thinking",
    "PRESETS": "presets",
    "Preset": "presets",
    "Thinking": "thinking",
    "accepts_images": "vision",
    "image_tokens": "vision",
    "known_context_window": "presets",
    "sends_images": "vision",
}
__all__ = sorted(_EXPORTS)
__getattr__ = exports(__name__, _EXPORTS)
