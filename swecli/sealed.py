"""Files swecli keeps per user between runs (decoded vocabularies, compiled code): written whole, a temporary
file renamed over the old one, behind a digest of their body; read back whole or not at all.

The digest finds a damaged or torn file, not a forged one: who may write the file is the caller's question
(`read(owned=True)` refuses one that is not the user's own or that others may write)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import threading
from collections.abc import Mapping

DIGEST_SIZE = 16


def cache_home(env: Mapping[str, str] | None = None) -> str | None:
    """`$XDG_CACHE_HOME/swecli` (default `~/.cache/swecli`), where these files live; None when neither
    `$XDG_CACHE_HOME` nor `$HOME` is an absolute path: a relative one would name a place in the directory swecli
    starts in, the project, whose files are not the user's to vouch for (the XDG spec says to ignore a
    relative one), and which sandboxed commands may write."""
    env = os.environ if env is None else env
    cache = env.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(cache):
        home = env.get("HOME", "")
        if not os.path.isabs(home):
            return None
        cache = os.path.join(home, ".cache")
    return os.path.join(cache, "swecli")


def write(path: str, body: bytes) -> None:
    """Write `path` atomically, private to the user (a cache that cannot be written just stays cold)."""
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as handle:
            handle.write(hashlib.blake2b(body, digest_size=DIGEST_SIZE).digest() + body)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def read(path: str, *, owned: bool = False) -> bytes | None:
    """The body `write` wrote, or None (missing, damaged; with `owned`, someone else's or writable by others)."""
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if owned and (info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
                return None
            blob = handle.read()
    except OSError:
        return None
    digest, body = blob[:DIGEST_SIZE], blob[DIGEST_SIZE:]
    return body if hashlib.blake2b(body, digest_size=DIGEST_SIZE).digest() == digest else None
