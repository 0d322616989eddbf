"""Where compacted history stays reachable: `.swecli/compactions/` under the project root.

Before a compaction rewrites the history, the full pre-compaction history is written there as JSONL
(one message per line, the `swecli.messages` JSON shape), and oversized texts that compaction
shortens (a huge pasted prompt, a giant tool result) get their own plain-text file. The summary
names these paths, relative to the root, so the model can read or grep them with its usual tools.
An index (`<stamp>-index-<digest>.txt`) lists every saved output the compacted history pointed to
(offloaded tool results, shortened texts, earlier transcripts), carried over from one compaction to
the next: whatever was saved stays one read away from the summary in the prompt.
(Session transcripts live apart, under `.swecli/sessions/`, owned by the session module.) Like the
transcript, an archive has secrets masked (the environment's keys) and is written 0600.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from dataclasses import field
from pathlib import Path
from typing import Protocol

from swecli.errors import SwecliError
from swecli.messages import Message
from swecli.records import datarecord
from swecli.session.private import make_private_dir, write_private
from swecli.session.secrets import Redactor

ARCHIVE_DIR = Path(".swecli") / "compactions"


class ArchiveError(SwecliError):
    """The archive could not be written; compaction goes on and says so."""


class Archive(Protocol):
    def save_history(self, history: Sequence[Message]) -> str:
        """Store the full history; return the path (relative to the root) that names it."""
        ...

    def save_text(self, label: str, text: str) -> str:
        """Store one oversized text; return its path."""
        ...

    def read_text(self, path: str) -> str | None:
        """A text saved earlier (by this archive or another over the same root), or None."""
        ...


@datarecord
class DiskArchive:
    """Writes under `<root>/.swecli/compactions/`, one stamp per compaction."""

    root: Path
    stamp: str = field(default_factory=lambda: time.strftime("%Y%m%d-%H%M%S", time.gmtime()))
    written: list[Path] = field(default_factory=list)
    redactor: Redactor = field(default_factory=Redactor.from_environment)

    def _path(self, name: str) -> Path:
        folder = self.root / ARCHIVE_DIR
        try:
            make_private_dir(folder)
        except OSError as exc:
            raise ArchiveError(f"cannot create {folder}: {exc.strerror or exc}") from None
        return folder / name

    def _write(self, name: str, text: str) -> str:
        path = self._path(name)
        try:
            write_private(path, self.redactor.redact(text).encode("utf-8", errors="surrogatepass"))
        except OSError as exc:
            raise ArchiveError(f"cannot write {path}: {exc.strerror or exc}") from None
        self.written.append(path)
        return path.relative_to(self.root).as_posix()

    def save_history(self, history: Sequence[Message]) -> str:
        body = "".join(m.model_dump_json() + "\n" for m in history)
        digest = hashlib.sha1(body.encode("utf-8")).hexdigest()[:8]
        return self._write(f"{self.stamp}-{digest}.jsonl", body)

    def save_text(self, label: str, text: str) -> str:
        digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]
        safe = re.sub(r"[^\w.-]+", "_", label)[:60] or "text"
        return self._write(f"{self.stamp}-{safe}-{digest}.txt", text)

    def read_text(self, path: str) -> str | None:
        target = (self.root / path).resolve()
        if not target.is_relative_to((self.root / ARCHIVE_DIR).resolve()):
            return None  # only what compactions wrote
        try:
            return target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None


@datarecord
class MemoryArchive:
    """Keeps everything in memory: for tests and for library use without a project root."""

    histories: list[tuple[Message, ...]] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)

    def save_history(self, history: Sequence[Message]) -> str:
        self.histories.append(tuple(history))
        return f"memory://compaction-{len(self.histories)}.jsonl"

    def save_text(self, label: str, text: str) -> str:
        name = f"memory://{label}-{len(self.texts) + 1}.txt"
        self.texts[name] = text
        return name

    def read_text(self, path: str) -> str | None:
        return self.texts.get(path)
