"""Text files as the editing tools see them: encoding, line endings, binary detection and diffs.

Edits must not rewrite what they did not touch, so a file's encoding (UTF-8, UTF-8 with BOM, or a
legacy 8-bit encoding kept byte-exact through latin-1) and its CRLF line endings are remembered on
load and restored on save.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from swecli.tools.base import ToolError

BINARY_SNIFF_BYTES = 8192


def looks_binary(head: bytes) -> bool:
    """Git's and ripgrep's heuristic: a NUL byte near the start means binary."""
    return b"\0" in head[:BINARY_SNIFF_BYTES]


@dataclass(frozen=True)
class TextFile:
    text: str
    """The content with `\\n` line breaks when the file uses CRLF throughout, otherwise as stored."""
    encoding: str = "utf-8"
    newline: str = "\n"

    def encode(self, text: str) -> bytes:
        if self.newline == "\r\n":
            text = text.replace("\r\n", "\n").replace("\n", "\r\n")
        try:
            return text.encode(self.encoding)
        except UnicodeEncodeError:
            return text.encode("utf-8")  # new characters the legacy encoding cannot hold


def decode(data: bytes) -> TextFile:
    if data.startswith(b"\xef\xbb\xbf"):
        text, encoding = data[3:].decode("utf-8", errors="replace"), "utf-8-sig"
    else:
        try:
            text, encoding = data.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            text, encoding = data.decode("latin-1"), "latin-1"  # round-trips every byte unchanged
    crlf = text.count("\r\n")
    if crlf and crlf == text.count("\n"):
        return TextFile(text.replace("\r\n", "\n"), encoding, "\r\n")
    return TextFile(text, encoding)


def load_text(path: Path, shown: str) -> TextFile:
    """Read a text file for editing; ToolError (with what to do instead) for anything else."""
    data = read_bytes(path, shown)
    if looks_binary(data):
        raise ToolError(f"{shown} is a binary file ({len(data):,} bytes); only text files can be edited.")
    return decode(data)


def read_bytes(path: Path, shown: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise file_error(exc, path, shown) from None


def file_error(exc: OSError, path: Path, shown: str) -> ToolError:
    """A message the model can act on for a file that could not be opened."""
    if isinstance(exc, FileNotFoundError):
        return ToolError(f"File not found: {shown}.{suggest_similar(path, shown)}")
    if isinstance(exc, IsADirectoryError):
        return ToolError(f"{shown} is a directory, not a file; use list_files to see what it contains.")
    if isinstance(exc, PermissionError):
        return ToolError(f"Permission denied reading {shown}.")
    return ToolError(f"Cannot read {shown}: {exc.strerror or exc}.")


def write_atomically(path: Path, data: bytes, shown: str) -> None:
    """Write via a temporary file and rename, so a crash never leaves a half-written file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".swecli-tmp")
    except (FileExistsError, NotADirectoryError):
        raise ToolError(f"Cannot create {shown}: a parent path exists and is not a directory.") from None
    except PermissionError:
        raise ToolError(f"Permission denied writing {shown}.") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)  # keep the executable bit; never setuid, setgid or sticky
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def unified_diff(old: str | None, new: str, shown: str) -> str:
    """A git-style unified diff; `old=None` means the file is new."""
    before = old.splitlines(keepends=True) if old else []
    after = new.splitlines(keepends=True)
    lines = difflib.unified_diff(before, after, "/dev/null" if old is None else f"a/{shown}", f"b/{shown}")
    out: list[str] = []
    for line in lines:
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


def diff_stat(diff: str) -> tuple[int, int]:
    """(lines added, lines removed) in a unified diff."""
    added = removed = 0
    in_hunk = False
    for line in diff.splitlines():
        if line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            added += 1
        elif in_hunk and line.startswith("-"):
            removed += 1
    return added, removed


def count_lines(text: str) -> int:
    return len(text.splitlines())


def suggest_similar(path: Path, shown: str) -> str:
    """` Did you mean: src/a.py?` from the names next to a missing path, or ""."""
    try:
        names = [p.name for p in path.parent.iterdir()] if path.parent.is_dir() else []
    except OSError:
        return ""
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    parent = Path(shown).parent
    return f" Did you mean: {', '.join((parent / name).as_posix() for name in close)}?" if close else ""
