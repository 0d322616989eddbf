"""Keep secrets out of everything swecli writes to disk (transcripts, logs).

A `Redactor` knows the secret values (the configured API key, and the value of every environment
variable whose name says it holds a secret) and replaces each occurrence with `[REDACTED]`. It works
on the Python objects before they are serialized, and also knows each secret's JSON-escaped form,
because a tool call's arguments are raw JSON text in which a secret may appear escaped.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

REDACTED = "[REDACTED]"
SECRET_NAME_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_SECRET_KEY", "_ACCESS_KEY")
"""Environment variables whose name ends with one of these hold secrets."""
MIN_SECRET_LENGTH = 8
"""Shorter values are too likely to be ordinary words ("ollama", "none") to be masked everywhere."""


class _HasApiKey(Protocol):
    api_key: str


def secret_env_values(env: Mapping[str, str]) -> list[str]:
    return [value for name, value in env.items() if name.upper().endswith(SECRET_NAME_SUFFIXES)]


class Redactor:
    """Replaces known secret values with `[REDACTED]` in text and in JSON-like objects."""

    def __init__(self, secrets: Iterable[str]) -> None:
        values: set[str] = set()
        for secret in secrets:
            secret = secret.strip()
            if len(secret) < MIN_SECRET_LENGTH:
                continue
            values.add(secret)
            values.add(json.dumps(secret)[1:-1])  # the form it takes inside JSON text
        # Longest first so a secret that contains another is replaced whole.
        ordered = sorted(values, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(v) for v in ordered)) if ordered else None

    @classmethod
    def from_environment(cls, settings: _HasApiKey | None = None, env: Mapping[str, str] | None = None) -> Redactor:
        """The settings' api_key plus every *_API_KEY / *_TOKEN / *_SECRET (...) environment value."""
        env = os.environ if env is None else env
        secrets = secret_env_values(env)
        if settings is not None and settings.api_key:
            secrets.append(settings.api_key)
        return cls(secrets)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def redact(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(REDACTED, text)

    def redact_obj(self, obj: Any) -> Any:
        """A copy of a JSON-like object (dicts, lists, strings, numbers) with every string redacted."""
        if self._pattern is None:
            return obj
        if isinstance(obj, str):
            return self.redact(obj)
        if isinstance(obj, dict):
            return {self.redact(str(k)): self.redact_obj(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.redact_obj(v) for v in obj]
        return obj


NO_REDACTION = Redactor(())
