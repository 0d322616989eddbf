"""Tool-call arguments a model wrote as almost-JSON, repaired where the meaning is unambiguous.

The repairs, each with exactly one reading:
- a Markdown code fence around the object (a fence line, then the object, then a closing fence);
- raw control characters (a newline, a tab) inside strings, which strict JSON wants escaped;
- JSON5, parsed by the `json5` package: trailing commas, single-quoted strings, unquoted keys, comments;
- a JSON object sent as a JSON string (encoded twice).
Never repaired: arguments cut short. A missing closing quote or brace means the model stopped early
(often at its output limit); guessing the rest could write half a file. Those, and anything else that
does not parse, reach the tool layer unchanged, which answers the model with an error it can act on.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from swecli.lazy import regex

_FENCE = regex(r"\A\s*```[\w+-]*[ \t]*\n(?P<body>.*?)\n?[ \t]*```\s*\Z", re.DOTALL)


def repair_arguments(text: str) -> str | None:
    """Valid JSON for the object `text` means, when a repair applies; None when `text` is valid JSON
    already or cannot be repaired safely."""
    if _parses_to_object(text):
        return None
    fence = _FENCE.match(text)
    inner = fence.group("body") if fence else text
    for parse in (json.loads, _lenient, _json5, _twice):
        value = _attempt(parse, inner)
        if isinstance(value, dict) and _finite(value):
            return json.dumps(value, ensure_ascii=False)
    return None


def normalize_arguments(text: str) -> str:
    """The arguments as the tool layer should see them: repaired when possible, else as written."""
    if not text.strip():
        return "{}"
    return repair_arguments(text) or text


def _parses_to_object(text: str) -> bool:
    return isinstance(_attempt(json.loads, text), dict)


def _attempt(parse: Any, text: str) -> Any:
    try:
        return parse(text)
    except (ValueError, TypeError, RecursionError):
        return None


def _lenient(text: str) -> Any:
    return json.loads(text, strict=False)


def _json5(text: str) -> Any:
    import json5

    return json5.loads(text)


def _twice(text: str) -> Any:
    inner = json.loads(text)
    return json.loads(inner) if isinstance(inner, str) else None


def _finite(value: Any) -> bool:
    """JSON5 reads NaN and Infinity, which JSON cannot carry."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True
