"""grep: regex search over the project, with ripgrep when installed and a pure-Python engine otherwise.

Both engines see the same files (walk.py's rules, which mirror ripgrep's flags below), visit them in
the same order (sorted by path) and feed the same collector, so the model gets identical output
whichever one ran. ripgrep runs only after ignorecheck.py has looked at every ignore file it would open: a
FIFO or a link to /dev/zero among them (which would hang it or fill the memory) sends the search to the
Python engine, and the output names the file.

The Python engine reads each file in CHUNK_BYTES pieces, as ripgrep does (a NUL byte in a piece ends the
file's search there, matches before it stand), so memory stays bounded whatever the file: it searches at
most MAX_FILE_BYTES of a file (the output names every file cut this way, with its size), and a line
longer than LONG_LINE_BYTES is matched on its first LONG_LINE_BYTES. ripgrep has no such limit: it
searches gigabytes in seconds.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, BinaryIO, Literal

from pydantic import BaseModel, Field

from swecli.errors import SwecliError
from swecli.lazy import regex
from swecli.llm.base import CancelToken
from swecli.records import datarecord
from swecli.tools.base import Tool, ToolContext, ToolError, ToolResult
from swecli.tools.facts import ToolFacts, declare, one_line
from swecli.tools.ignorecheck import RipgrepPlan, plan_ripgrep
from swecli.tools.own_process import helper_environment, trusted_program
from swecli.tools.paths import display_path, resolve_in_root
from swecli.tools.protected import secret_location
from swecli.tools.spool import Spool
from swecli.tools.text import (
    BINARY_SNIFF_BYTES,
    byte_order_mark,
    decode_line,
    detect_encoding,
    looks_binary,
    suggest_similar,
)
from swecli.tools.walk import ALWAYS_SKIP, GlobFilter, IgnoreRules, walk

MAX_MATCHES = 200
"""Matching lines shown to the model."""
COUNT_LIMIT = 100_000
"""Matching lines counted before giving up on an exact total."""
LINE_CHARS = 300
CHUNK_BYTES = 64 << 10
"""What the Python engine reads at a time (ripgrep's buffer size, so binary files end alike)."""
MAX_FILE_BYTES = 64 << 20
"""The Python engine searches this much of a file at most: Python reads ~50-100 MB/s, so a 2 GB log would
hold the call for half a minute. The output says which files were cut."""
LONG_LINE_BYTES = 1 << 20
"""A line longer than this (minified code, a data dump) is matched on its first LONG_LINE_BYTES."""

Engine = Literal["auto", "rg", "python"]


class GrepArgs(BaseModel):
    pattern: str = Field(min_length=1, description="Regular expression to search for (one line at a time).")
    path: str = Field(".", description="File or directory to search, relative to the project root.")
    glob: str | None = Field(None, description="Only search files matching this pattern, relative to `path` "
                                               "(e.g. `*.py`, `src/**/*.ts`, `*.{js,jsx}`).")
    case_insensitive: bool = Field(False, description="Match regardless of case.")


@datarecord
class Hit:
    """One matching line."""

    path: str
    line: int
    text: str


@datarecord
class Matches:
    """A search's hits and counts, and which engine found them."""

    hits: list[Hit] = field(default_factory=list)
    total: int = 0
    files: int = 0
    complete: bool = True
    """False when counting stopped early (COUNT_LIMIT or an interrupt), so `total` is a lower bound."""
    engine: str = ""
    cut_lines: int = 0
    """Shown matching lines cut at LINE_CHARS."""
    listing: Spool = field(default_factory=Spool)
    """Every matching line counted, in the grouped format `render` uses, with lines uncut: the whole
    output when the model is shown only part of it."""
    cut_files: list[tuple[str, int]] = field(default_factory=list)
    """(path, size) of files the Python engine searched only the first MAX_FILE_BYTES of."""
    unsafe_ignore_files: list[str] = field(default_factory=list)
    """Ignore files that would have stopped ripgrep (ignorecheck.py), so the Python engine searched instead."""
    _last_path: str = ""

    @property
    def full(self) -> bool:
        return self.total >= COUNT_LIMIT

    def add(self, path: str, line: int, text: str) -> None:
        self.total += 1
        if path != self._last_path:
            self.listing.write(f"\n{path}\n" if self.files else f"{path}\n")
            self.files += 1
            self._last_path = path
        self.listing.write(f"  {line}: {text}\n")
        if len(self.hits) < MAX_MATCHES:
            if len(text) > LINE_CHARS:
                text = f"{text[:LINE_CHARS]}… [+{len(text) - LINE_CHARS:,} chars]"
                self.cut_lines += 1
            self.hits.append(Hit(path, line, text))
        if self.full:
            self.complete = False


class RegexError(SwecliError):
    """ripgrep rejected the pattern; the Python engine may still accept it (look-around, backreferences)."""


def find_ripgrep(root: Path) -> str | None:
    """ripgrep from PATH, never one inside the project (see own_process.py)."""
    return trusted_program("rg", root)


def search(args: GrepArgs, ctx: ToolContext, engine: Engine = "auto") -> Matches:
    root = ctx.root.resolve()
    target = resolve_in_root(root, args.path)
    shown = display_path(root, target)
    if not target.exists():
        raise ToolError(f"Path not found: {shown}.{suggest_similar(target, shown)}")
    if not target.is_file() and not target.is_dir():
        raise ToolError(f"{shown} is not a regular file or directory.")
    if target.is_file() and _file_is_binary(target):
        raise ToolError(f"{shown} is a binary file; grep searches text files only.")
    # ripgrep matches bytes as UTF-8: a pattern with other characters would miss them in a file of another
    # encoding (`café` in Latin-1), where the Python engine reads each file in its own.
    rg = find_ripgrep(root) if engine == "rg" or (engine == "auto" and args.pattern.isascii()) else None
    if engine == "rg" and rg is None:
        raise ToolError("ripgrep (rg) is not installed.")
    # A FIFO or a link to /dev/zero among the ignore files ripgrep reads would hang it or eat all memory.
    plan = plan_ripgrep(root, target) if rg is not None and target.is_dir() else RipgrepPlan()
    if plan.unsafe:
        rg = None
    if rg is not None:
        try:
            return _search_rg(rg, root, target, args, ctx.cancel, plan)
        except RegexError:
            pass  # fall through: Python reports the error, or handles what ripgrep's engine lacks
    matches = _search_python(root, target, args, ctx.cancel)
    matches.unsafe_ignore_files = plan.unsafe
    return matches


def compile_pattern(args: GrepArgs, flags: int = 0) -> re.Pattern[str]:
    try:
        return re.compile(args.pattern, flags | (re.IGNORECASE if args.case_insensitive else 0))
    except re.error as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        raise ToolError(f"Invalid regex {args.pattern!r}: {exc.msg}{where}. Escape special characters "
                        r"(e.g. `\(`, `\.`, `\[`) to match them literally.") from None


# ------------------------------------------------------------------------------------------------ engines

# Constructs whose meaning changes when the pattern runs over a whole file instead of one line.
_LINE_SENSITIVE = regex(r"\\[AZz]|\(\?<?[=!]")


@datarecord(frozen=True)
class _PyMatcher:
    """The Python fallback's compiled patterns (when ripgrep is not installed)."""

    line: re.Pattern[str]
    file: re.Pattern[str] | None
    """A whole-file test that never misses a matching line: files that fail it are skipped unread."""


def _search_python(root: Path, target: Path, args: GrepArgs, cancel: CancelToken) -> Matches:
    line = compile_pattern(args)
    whole = None if _LINE_SENSITIVE.search(args.pattern) else compile_pattern(args, re.MULTILINE)
    matcher = _PyMatcher(line, whole)
    matches = Matches(engine="python")
    if target.is_file():
        files = iter([target])
    else:
        glob = GlobFilter(args.glob, target) if args.glob else None
        files = (e.path for e in walk(target, IgnoreRules(root), glob) if e.is_file)
    for path in files:
        if cancel.cancelled or matches.full:
            matches.complete = False
            break
        _search_file(path, display_path(root, path), matcher, matches)
    return matches


def _search_file(path: Path, shown: str, matcher: _PyMatcher, matches: Matches) -> None:
    try:
        with path.open("rb") as fh:
            _search_stream(fh, shown, matcher, matches)
            if fh.tell() >= MAX_FILE_BYTES and fh.read(1):
                matches.cut_files.append((shown, os.fstat(fh.fileno()).st_size))
    except OSError:
        return  # unreadable files are skipped, as ripgrep does


def _search_stream(fh: BinaryIO, shown: str, matcher: _PyMatcher, matches: Matches) -> None:
    """Search a file piece by piece: complete lines are matched as they arrive, the last partial line waits
    for the next piece (cut at LONG_LINE_BYTES), a piece holding a NUL byte ends the search (binary)."""
    lines = _Lines()
    first = True
    while not matches.full and (piece := fh.read(min(CHUNK_BYTES, MAX_FILE_BYTES - fh.tell()))):
        if first:
            first = False
            piece += fh.read(max(0, min(4, MAX_FILE_BYTES) - len(piece)))  # a whole byte-order mark (UTF-32's is 4)
            marked = byte_order_mark(piece)
            if marked is not None and marked[1] != "utf-8":  # UTF-16/32: NULs are text, lines are not b"\n"
                _match_lines(_wide_text(piece + fh.read(MAX_FILE_BYTES - fh.tell())), lines, shown, matcher, matches)
                return
            piece = piece.removeprefix(b"\xef\xbb\xbf")
        if b"\0" in piece:
            return
        _match_lines(lines.feed(piece), lines, shown, matcher, matches)
    if not matches.full:
        _match_lines(lines.rest(), lines, shown, matcher, matches)


@datarecord
class _Lines:
    """Splits a byte stream into whole lines, keeping at most LONG_LINE_BYTES of a line not yet ended."""

    number: int = 0
    """Lines handed out so far."""
    _partial: bytes = b""
    _skipping: bool = False
    """The current line passed LONG_LINE_BYTES: what remains of it is dropped."""

    def feed(self, piece: bytes) -> str | None:
        """The complete lines that `piece` ends, decoded and joined by "\n" (None when it ends none)."""
        end = piece.rfind(b"\n")
        if end < 0:
            self._keep(piece)
            return None
        head, self._partial, skipping = self._partial, b"", self._skipping
        self._skipping = False
        first_end = piece.find(b"\n")
        first = head + (b"" if skipping else piece[:first_end])
        block = first[:LONG_LINE_BYTES] + piece[first_end:end + 1]
        self._keep(piece[end + 1:])
        # Line ends as ripgrep's --crlf sees them: \r\n and \n.
        return _decode_lines(block).replace("\r\n", "\n")[:-1]

    def rest(self) -> str | None:
        """The last line, when the stream did not end with a newline (a lone \r at its very end dropped)."""
        tail, self._partial = self._partial, b""
        return _decode_lines(tail).removesuffix("\r") if tail else None

    def _keep(self, data: bytes) -> None:
        if self._skipping:
            return
        self._partial += data
        if len(self._partial) > LONG_LINE_BYTES:
            self._partial, self._skipping = self._partial[:LONG_LINE_BYTES], True


def _decode_lines(block: bytes) -> str:
    """Lines of a file without a byte-order mark, each in its own encoding: UTF-8, or (a line that is not
    valid UTF-8) cp1252/latin-1, as read_file reads such a file (`text.decode_line`)."""
    try:
        return block.decode("utf-8")
    except UnicodeDecodeError:
        return "\n".join(decode_line(line) for line in block.split(b"\n"))


def _wide_text(data: bytes) -> str:
    """A UTF-16/32 file's text (its byte-order mark says which), read whole up to MAX_FILE_BYTES."""
    codec, bom = detect_encoding(data, complete=False)
    return data[len(bom):].decode(codec, errors="replace").replace("\r\n", "\n").removesuffix("\n")


def _match_lines(text: str | None, lines: _Lines, shown: str, matcher: _PyMatcher, matches: Matches) -> None:
    """Match the lines of `text` (joined by "\n"); numbering continues from `lines.number`."""
    if text is None:
        return
    start = lines.number
    lines.number += text.count("\n") + 1
    if matcher.file is not None and not matcher.file.search(text):
        return
    for number, line in enumerate(text.split("\n"), start + 1):
        if matcher.line.search(line):
            matches.add(shown, number, line)
            if matches.full:
                return


# Flags that make ripgrep see exactly the files walk.py sees.
_RG_FLAGS = [
    "--no-config", "--hidden", "--no-require-git", "--no-ignore-dot", "--no-ignore-global", "--sort", "path",
    "--crlf",  # `$` matches before \r\n too: lines are matched without their CR, as in the Python engine
    # One `path\0LINE:text` record per matching line: cheaper to parse than --json, and raw bytes.
    "--no-heading", "--with-filename", "--line-number", "--null", "--color", "never",
]


def _search_rg(rg: str, root: Path, target: Path, args: GrepArgs, cancel: CancelToken,
               plan: RipgrepPlan) -> Matches:
    # Search a directory from inside it so `glob` is relative to it, as in the Python engine.
    cwd, where = (target, ".") if target.is_dir() else (target.parent, target.name)
    command = [rg, *_RG_FLAGS, *(["-i"] if args.case_insensitive else [])]
    if args.glob:
        command += ["--glob", args.glob]
    command += [arg for name in sorted(ALWAYS_SKIP) for arg in ("--glob", f"!{name}/")]
    command += plan.glob_args()  # the directories whose ignore files were not checked: never entered
    command += ["-e", args.pattern, "--", where]
    # In ripgrep a glob whitelists files even when they are gitignored; drop those so both engines agree.
    rules = IgnoreRules(root) if args.glob and target.is_dir() else None
    matches = Matches(engine="rg")
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors,
                                env=helper_environment())
        threading.Thread(target=_kill_on_cancel, args=(proc, cancel), daemon=True).start()
        try:
            _read_rg_stream(proc, cwd, root, rules, matches, cancel)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            errors.seek(0)
            stderr = errors.read().decode("utf-8", errors="replace")
    if cancel.cancelled:
        matches.complete = False
    if proc.returncode == 2 and matches.total == 0 and "regex" in stderr.lower():
        raise RegexError(stderr.strip())
    return matches


def _kill_on_cancel(proc: subprocess.Popen[bytes], cancel: CancelToken) -> None:
    """An interrupt must stop a search that is busy but quiet (a huge tree with few matches)."""
    while proc.poll() is None:
        if cancel.wait(0.1):
            proc.kill()
            return


def _read_rg_stream(proc: subprocess.Popen[bytes], cwd: Path, root: Path, rules: IgnoreRules | None,
                    matches: Matches, cancel: CancelToken) -> None:
    assert proc.stdout is not None
    current, shown = b"", ""  # matches arrive grouped by file: resolve each file's path once
    for raw in proc.stdout:
        if cancel.cancelled or matches.full:
            matches.complete = False
            return
        # `path\0LINE:text\n`; anything else (e.g. a "binary file matches" notice) is not a match.
        name, null, rest = raw.partition(b"\0")
        number, colon, text = rest.partition(b":")
        if not null or not colon or not number.isdigit():
            continue
        if name != current:
            path = cwd / os.fsdecode(name)
            skipped = (rules is not None and rules.ignored(path, is_dir=False)) or bool(secret_location(path))
            current, shown = name, "" if skipped else display_path(root, path)
        if shown:
            # Drop the terminator ripgrep prints (\r\n in --crlf mode, added if the file's last line had none).
            line = decode_line(text.removesuffix(b"\n").removesuffix(b"\r").removesuffix(b"\r"))
            matches.add(shown, int(number), line)


def _file_is_binary(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return looks_binary(fh.read(BINARY_SNIFF_BYTES))
    except OSError:
        return False


# ------------------------------------------------------------------------------------------------ output


def render(matches: Matches, max_chars: int) -> tuple[str, int]:
    """The grouped listing (`path` then `  line: text` lines) within `max_chars`; returns it and hits shown."""
    lines: list[str] = []
    size = 0
    shown = 0
    last_path = ""
    for hit in matches.hits:
        block = []
        if hit.path != last_path:
            block = ["", hit.path] if lines else [hit.path]
        block.append(f"  {hit.line}: {hit.text}")
        cost = sum(len(line) + 1 for line in block)
        if shown and size + cost > max_chars:
            break
        lines.extend(block)
        size += cost
        shown += 1
        last_path = hit.path
    return "\n".join(lines), shown


def summarize(matches: Matches) -> str:
    if matches.total == 0:
        return "No matches" if matches.complete else "Search interrupted"
    total = f"{matches.total:,}{'' if matches.complete else '+'}"
    noun = "match" if matches.total == 1 else "matches"
    files = f"{matches.files:,} file{'' if matches.files == 1 else 's'}"
    return f"Found {total} {noun} {'in' if matches.files == 1 else 'across'} {files}"


def grep(args: GrepArgs, ctx: ToolContext) -> ToolResult:
    matches = search(args, ctx)
    summary = summarize(matches)
    meta = {"pattern": args.pattern, "path": args.path, "matches": matches.total, "files": matches.files,
            "engine": matches.engine, "complete": matches.complete}
    cut = _cut_files_note(matches) + _unsafe_ignore_note(matches)
    if matches.unsafe_ignore_files:
        meta["unsafe_ignore_files"] = matches.unsafe_ignore_files
    if matches.cut_files:
        meta["cut_files"] = [path for path, _ in matches.cut_files]
    if matches.total == 0:
        matches.listing.discard()
        where = f" in files matching {args.glob!r}" if args.glob else ""
        return ToolResult(f"No matches for {args.pattern!r} under {args.path}{where}.{cut}", summary=summary,
                          meta=meta)
    body, shown = render(matches, ctx.max_output_chars)
    content = f"{summary}\n\n{body}"
    if shown < matches.total:
        content += (f"\n\n(Showing the first {shown} of {matches.total:,}{'' if matches.complete else '+'} matching "
                    "lines. Narrow the search with path, glob or a more specific pattern.)")
    content += cut
    full = None
    if shown < matches.total or matches.cut_lines:  # the model sees part of it: the whole listing is kept
        full = matches.listing.finish()
        full.status = summary
    else:
        matches.listing.discard()
    meta["shown"] = shown
    return ToolResult(content, summary=summary, meta=meta, full=full)


def _cut_files_note(matches: Matches) -> str:
    """Says which files were searched only in part (the Python engine's size limit), "" when none were."""
    if not matches.cut_files:
        return ""
    shown = ", ".join(f"{path} ({size / (1 << 20):,.0f} MiB)" for path, size in matches.cut_files[:5])
    more = f" and {len(matches.cut_files) - 5} more" if len(matches.cut_files) > 5 else ""
    return (f"\n\n(Only the first {MAX_FILE_BYTES >> 20} MiB of {shown}{more} were searched: without ripgrep, grep "
            "reads at most that much of a file. Search the rest with bash (`grep -n PATTERN FILE`) or page it with "
            "read_file.)")


def _unsafe_ignore_note(matches: Matches) -> str:
    """Says which ignore files were read as empty (not plain files), "" when none were."""
    if not matches.unsafe_ignore_files:
        return ""
    shown = ", ".join(matches.unsafe_ignore_files[:5])
    more = f" and {len(matches.unsafe_ignore_files) - 5} more" if len(matches.unsafe_ignore_files) > 5 else ""
    return (f"\n\n(Ignore files that are not plain files were read as empty: {shown}{more}. ripgrep would wait "
            "on them forever or read them until memory ran out, so the slower built-in search ran instead.)")


def describe_grep(args: Mapping[str, Any]) -> str:
    """`'login' src/ (*.py)`."""
    parts = [f"'{one_line(args.get('pattern', ''))}'"]
    if args.get("path") not in (None, "", "."):
        parts.append(str(args["path"]))
    if args.get("glob"):
        parts.append(f"({args['glob']})")
    return " ".join(parts)


GREP_FACTS = ToolFacts(kind="search", icon="🔍", verb="grep", describe=describe_grep, key_args=("pattern", "path"),
                       fold_after=1)
"""Cheap to run again: its result folds as soon as it leaves the newest part of the history."""

GREP = Tool(
    name="grep",
    description=(
        "Search file contents with a regular expression (Python/ripgrep syntax, matched line by line). "
        "Results are grouped by file with line numbers, sorted by path; at most "
        f"{MAX_MATCHES} lines are shown, with the total count. Respects .gitignore and skips binary files. "
        "Narrow with `path` (a directory or file) and `glob` (e.g. `*.py`)."
    ),
    args=GrepArgs,
    fn=grep,
    facts=GREP_FACTS,
)
declare(GREP.name, GREP.facts)
