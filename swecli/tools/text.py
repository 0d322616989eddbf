"""Text files as the editing tools see them: encoding, line endings, binary detection and diffs.

A file is read, searched and edited in its own encoding, and written back in it: UTF-8 when all of it is
valid UTF-8; UTF-8, UTF-16 or UTF-32 as its byte-order mark says; otherwise a legacy 8-bit file, read as
Windows-1252 (the Western encoding editors on Windows save; on top of Latin-1's letters it has curly
quotes, dashes and the euro sign), or as Latin-1 when a byte appears that cp1252 leaves undefined
(Latin-1 maps every byte, so the file still round-trips byte for byte). No detector guesses further: on
short Western text the maintained ones (charset-normalizer) call `café crème` cp1006 or big5, and a
wrong guess garbles every line, where this rule garbles only files in a non-Western legacy encoding.

Edits must not rewrite what they did not touch, so the encoding, the byte-order mark and CRLF line
endings are remembered on load and restored on save; a character the file's encoding cannot hold is
refused (the model is told which), never written in another encoding.
"""

from __future__ import annotations

import codecs
import contextlib
import difflib
import functools
import os
import stat
from pathlib import Path

from swecli.lazy import regex
from swecli.records import datarecord
from swecli.tools.base import ToolError
from swecli.tools.paths import SwappedPath, confined_folder, open_confined

BINARY_SNIFF_BYTES = 8192
LEGACY = "cp1252"
_CP1252_UNDEFINED = regex(rb"[\x81\x8d\x8f\x90\x9d]")
BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: it starts with the same two bytes
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def looks_binary(head: bytes) -> bool:
    """Git's and ripgrep's heuristic: a NUL byte near the start means binary (unless a UTF-16 or UTF-32
    byte-order mark says the NULs are half of every character)."""
    return b"\0" in head[:BINARY_SNIFF_BYTES] and byte_order_mark(head) is None


def byte_order_mark(data: bytes) -> tuple[bytes, str] | None:
    """(the mark, the codec of what follows it) for a file that starts with a byte-order mark."""
    return next(((bom, codec) for bom, codec in BOMS if data.startswith(bom)), None)


def legacy_encoding(data: bytes) -> str:
    """cp1252, or latin-1 when `data` holds a byte cp1252 leaves undefined."""
    return "latin-1" if _CP1252_UNDEFINED.search(data) else LEGACY


def detect_encoding(data: bytes, complete: bool = True) -> tuple[str, bytes]:
    """(codec, byte-order mark) of a file's bytes; `complete=False` for its first part only (a character
    cut at the end is no sign of another encoding)."""
    marked = byte_order_mark(data)
    if marked is not None:
        return marked[1], marked[0]
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=complete)
    except UnicodeDecodeError:
        return legacy_encoding(data), b""
    return "utf-8", b""


def decode_text(data: bytes, complete: bool = True) -> str:
    """The text of a file's bytes (or of its first part) in the file's own encoding."""
    codec, bom = detect_encoding(data, complete)
    body = data[len(bom):]
    if codec == "utf-8" and not complete:
        return codecs.getincrementaldecoder("utf-8")(errors="replace").decode(body, final=False)
    return body.decode(codec, errors="replace")


def decode_line(raw: bytes, codec: str = "utf-8") -> str:
    """One line of a file believed to be `codec`: a line of a UTF-8 file that is not valid UTF-8 (a file
    in a legacy encoding that was sniffed only in part, or a search result) is read as a legacy line."""
    if codec == "utf-8":
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw.decode(legacy_encoding(raw))
    return raw.decode(codec, errors="replace")


@datarecord(frozen=True)
class TextFile:
    """A text file as read, with what writing it back must keep (encoding, newlines, BOM)."""

    text: str
    """The content with `\\n` line breaks when the file uses CRLF throughout, otherwise as stored."""
    encoding: str = "utf-8"
    newline: str = "\n"
    bom: bytes = b""

    def encode(self, text: str) -> bytes:
        if self.newline == "\r\n":
            text = text.replace("\r\n", "\n").replace("\n", "\r\n")
        try:
            return self.bom + text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start:exc.end]
            names = ", ".join(f"{c!r} (U+{ord(c):04X})" for c in dict.fromkeys(bad))
            raise ToolError(f"The file is encoded in {self.encoding}, which cannot hold {names}; it is kept in its "
                            "encoding. Use characters it has (e.g. ASCII), or convert the whole file to UTF-8 "
                            "first if that is wanted (e.g. `iconv` through bash).") from None


def decode(data: bytes) -> TextFile:
    encoding, bom = detect_encoding(data)
    text = data[len(bom):].decode(encoding, errors="replace")
    crlf = text.count("\r\n")
    if crlf and crlf == text.count("\n"):
        return TextFile(text.replace("\r\n", "\n"), encoding, "\r\n", bom)
    return TextFile(text, encoding, bom=bom)


def load_text(path: Path, shown: str, root: Path | None = None) -> TextFile:
    """Read a text file for editing; ToolError (with what to do instead) for anything else."""
    data = read_bytes(path, shown, root)
    if looks_binary(data):
        raise ToolError(f"{shown} is a binary file ({len(data):,} bytes); only text files can be edited.")
    return decode(data)


def read_bytes(path: Path, shown: str, root: Path | None = None) -> bytes:
    """The bytes of `path`; with `root`, opened through it without following a link (`paths.open_confined`)."""
    try:
        if root is None:
            return path.read_bytes()
        with open_confined(root, path) as fh:
            return fh.read()
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


def write_atomically(path: Path, data: bytes, shown: str, new_mode: int | None = None, root: Path | None = None,
                     ) -> None:
    """Write via a temporary file and rename, so a crash never leaves a half-written file. A new file
    gets the mode any program of the user's would (0666 less the umask) unless `new_mode` says otherwise;
    an edited one keeps its own. With `root`, the folders from it are opened without following links."""
    try:
        replace_file(path, data, new_mode, root)
    except SwappedPath:
        raise ToolError(f"Nothing was written: a folder on the way to {shown} became a symlink while swecli was "
                        "writing (a command running beside this call?); the file tools never write through "
                        "one.") from None
    except (FileExistsError, NotADirectoryError):
        raise ToolError(f"Cannot create {shown}: a parent path exists and is not a directory.") from None
    except PermissionError:
        raise ToolError(f"Permission denied writing {shown}.") from None


def replace_file(path: Path, data: bytes, new_mode: int | None = None, root: Path | None = None) -> None:
    """Write `data` to `path` through a temporary file renamed over it (OSError on failure), in the folder
    reached from `root` without following links (`paths.confined_folder`; by default its own parent).

    The mode is the old file's (executable bits and all); a new file gets `new_mode`, by default 0666
    less the umask, as `open()` would give it: `mkstemp` alone makes every file 0600, unreadable to
    the other users and tools that read a page, a script or a config."""
    if root is None:
        path.parent.mkdir(parents=True, exist_ok=True)
    with confined_folder(path.parent if root is None else root, path.parent, create=True) as folder:
        tmp = f".{path.name}.{os.urandom(4).hex()}.swecli-tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                os.fchmod(fh.fileno(), _kept_mode(folder, path.name, new_mode))
            os.replace(tmp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder)
            raise


def _kept_mode(folder: int, name: str, new_mode: int | None) -> int:
    """The mode of `name` in `folder` (keep the executable bit; never setuid, setgid or sticky), or a new file's."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        if stat.S_ISREG(info.st_mode):
            return info.st_mode & 0o777
    except FileNotFoundError:
        pass
    return ((0o666 & ~umask()) if new_mode is None else new_mode) & 0o777


@functools.cache
def umask() -> int:
    """The process's umask, read without changing it where Linux says it (`os.umask` can only set it, and
    setting it even for an instant would give another thread's new files the wrong mode)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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
