"""Keep secrets out of everything swecli writes to disk (transcripts, logs, saved tool outputs, archives).

A `Redactor` knows the secret values (the configured API key, and the value of every environment
variable whose name says it holds a secret) and replaces each occurrence with `[REDACTED]`. It works
on the Python objects before they are serialized, and also knows each secret's JSON-escaped form,
because a tool call's arguments are raw JSON text in which a secret may appear escaped.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, AnyStr, Protocol

REDACTED = "[REDACTED]"
REDACTED_BYTES = REDACTED.encode()
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
        encoded = sorted({v.encode("utf-8", errors="surrogatepass") for v in values}, key=len, reverse=True)
        self._bytes_pattern = re.compile(b"|".join(re.escape(v) for v in encoded)) if encoded else None
        self._longest = len(encoded[0]) if encoded else 0
        self._json_plain = all(_json_plain(v) for v in values)
        self._values = tuple(ordered)
        self._encoded = tuple(encoded)

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

    def redact_bytes(self, data: bytes) -> bytes:
        if self._bytes_pattern is None or not data:
            return data
        return self._bytes_pattern.sub(REDACTED_BYTES, data)

    def redact_chunks(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """`redact_bytes` over a stream read in pieces (a saved output of hundreds of MB), in bounded memory:
        the last `longest secret - 1` bytes of each piece wait for the next, so a secret cut in two by a
        piece boundary is still found."""
        if self._bytes_pattern is None:
            yield from chunks
            return
        keep = self._longest - 1
        pending = b""
        for chunk in chunks:
            pending += chunk
            if len(pending) <= keep:
                continue
            cut = len(pending) - keep  # no secret that starts here or later can be complete yet
            out, start = [], 0
            for found in self._bytes_pattern.finditer(pending):
                if found.start() >= cut:
                    break
                out += [pending[start:found.start()], REDACTED_BYTES]
                start = found.end()
            start_of_rest = max(cut, start)
            out.append(pending[start:start_of_rest])
            yield b"".join(out)
            pending = pending[start_of_rest:]
        yield self.redact_bytes(pending)

    def may_be_in_json(self, text: str | bytes) -> bool:
        """Whether `redact_obj` could change the object `text` is the JSON encoding of (with `ensure_ascii`
        off, as the session's files are written). False is certain: JSON writes a plain secret (no quote,
        backslash, control character or surrogate: API keys and tokens are plain) as itself, so a string
        holding one puts it in the text, and text without any holds none. A secret JSON would escape
        cannot be ruled out this way: True then, and the caller redacts the object. This lets a line be
        encoded once and searched once instead of every string of it redacted one by one."""
        if not self._json_plain:
            return True
        if isinstance(text, bytes):
            return _holds_any(text, self._encoded)
        return _holds_any(text, self._values)

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


def _holds_any(text: AnyStr, values: tuple[AnyStr, ...]) -> bool:
    """`in` is a fast substring search (the alternation regex steps through the text); a loop, as a
    generator for `any` costs more than the searches of a short line."""
    for value in values:  # noqa: SIM110 (see the docstring)
        if value in text:
            return True
    return False


def _json_plain(secret: str) -> bool:
    """Whether JSON text (ensure_ascii off) writes `secret` as itself."""
    return not any(c in '"\\' or c < " " or "\ud800" <= c <= "\udfff" for c in secret)


NO_REDACTION = Redactor(())
