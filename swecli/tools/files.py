"""The file tools: list_files, read_file, write_file and edit_file, all confined to the project root."""

from __future__ import annotations

import io
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, Field

from swecli.lazy import regex
from swecli.records import datarecord
from swecli.tools.base import Tool, ToolContext, ToolError, ToolResult
from swecli.tools.facts import ToolFacts, declare
from swecli.tools.images import is_image_path, load_image
from swecli.tools.paths import display_path, open_confined, resolve_in_root, resolve_readable, shown_path
from swecli.tools.spool import Spool
from swecli.tools.text import (
    TextFile,
    count_lines,
    decode,
    decode_line,
    detect_encoding,
    diff_stat,
    file_error,
    load_text,
    looks_binary,
    read_bytes,
    suggest_similar,
    unified_diff,
    write_atomically,
)
from swecli.tools.visible import invisible
from swecli.tools.walk import Entry, GlobFilter, IgnoreRules, scan, walk

LIST_LIMIT = 500
READ_LIMIT = 2000
LINE_CHARS = 2000
READ_CHAR_BUDGET = 100_000
ENCODING_SNIFF_BYTES = 1 << 20
"""read_file decides a file's encoding from this much of its start (a later line that is not UTF-8 is
still read in the legacy encoding, line by line)."""
"""read_file stops early (with a note on how to go on) when a page of long lines gets this big."""
RESULT_DIFF_CHARS = 4000
"""How much of an edit's diff the model gets back to check its work."""
MAX_EDIT_BYTES = 10_000_000
"""edit_file works on files up to this size (its diff and its copy in memory grow with the file); write_file
replaces a bigger file without reading it."""
_LINE_BYTES = LINE_CHARS * 4
"""read_file reads at most this much of a line (its first LINE_CHARS characters in any UTF-8), skipping the rest
in chunks: a one-line file of gigabytes costs no more memory than a short one."""


def _pluralize(count: int, word: str, plural: str = "") -> str:
    return f"{count:,} {word if count == 1 else plural or word + 's'}"


# ---------------------------------------------------------------------------------------------- list_files


class ListFilesArgs(BaseModel):
    path: str = Field(".", description="Directory to list, relative to the project root.")
    glob: str | None = Field(
        None, description="Only list files matching this pattern, relative to `path` (gitignore-style: `*.py` "
                          "matches at any depth, `src/*.py` only directly in src, `*.{ts,tsx}` either).")
    max_depth: int | None = Field(None, ge=1, le=50, description="How many directory levels to show.")


@datarecord
class _Tree:
    """Whole directory levels, breadth first, as many as fit in the entry limit."""

    children: dict[Path, list[Entry]] = field(default_factory=dict)
    levels: int = 0
    shown: int = 0
    ignored: int = 0
    more: int = 0
    """Entries of the first level beyond the limit (only when even one level does not fit)."""
    cut: dict[Path, int] = field(default_factory=dict)
    """Directories whose contents are not shown, with how many entries they hold."""
    stop_reason: str = ""


def list_files(args: ListFilesArgs, ctx: ToolContext) -> ToolResult:
    start = resolve_in_root(ctx.root, args.path)
    shown = display_path(ctx.root, start)
    if not start.exists():
        raise ToolError(f"Directory not found: {shown}.{suggest_similar(start, shown)}")
    if not start.is_dir():
        return ToolResult(shown, summary="1 file", meta={"path": shown, "entries": 1})
    rules = IgnoreRules(ctx.root)
    if args.glob:
        return _list_glob(start, shown, args.glob, rules, ctx)
    tree = _build_tree(start, rules, args.max_depth, ctx)
    lines = [f"{shown}/", *_render_tree(tree, start, 1)]
    lines += _tree_notes(tree, args.max_depth)
    meta = {"path": shown, "entries": tree.shown, "levels": tree.levels, "truncated": bool(tree.cut or tree.more)}
    return ToolResult("\n".join(lines), summary=_pluralize(tree.shown, "entry", "entries"), meta=meta)


def _build_tree(start: Path, rules: IgnoreRules, max_depth: int | None, ctx: ToolContext) -> _Tree:
    tree = _Tree()
    first, tree.ignored = scan(start, rules)
    if len(first) > LIST_LIMIT:
        tree.children[start], tree.more = first[:LIST_LIMIT], len(first) - LIST_LIMIT
        tree.shown, tree.levels, tree.stop_reason = LIST_LIMIT, 1, "limit"
        return tree
    tree.children[start], tree.shown, tree.levels = first, len(first), 1
    frontier = [e.path for e in first if e.is_dir]
    while frontier:
        if ctx.cancel.cancelled:
            tree.stop_reason = "cancelled"
            break
        level = {d: scan(d, rules) for d in frontier}
        size = sum(len(children) for children, _ in level.values())
        depth_reached = max_depth is not None and tree.levels >= max_depth
        if depth_reached or tree.shown + size > LIST_LIMIT:
            tree.cut = {d: len(children) for d, (children, _) in level.items() if children}
            tree.stop_reason = "depth" if depth_reached else "limit"
            break
        for directory, (children, ignored) in level.items():
            tree.children[directory] = children
            tree.ignored += ignored
        tree.shown += size
        tree.levels += 1
        frontier = [e.path for children, _ in level.values() for e in children if e.is_dir]
    return tree


def _render_tree(tree: _Tree, directory: Path, depth: int) -> list[str]:
    lines: list[str] = []
    indent = "  " * depth
    for entry in tree.children.get(directory, []):
        name = entry.path.name
        if entry.is_symlink:
            lines.append(f"{indent}{name}@")
        elif not entry.is_dir:
            lines.append(f"{indent}{name}")
        elif entry.path in tree.cut:
            lines.append(f"{indent}{name}/ ({_pluralize(tree.cut[entry.path], 'entry', 'entries')})")
        else:
            lines.append(f"{indent}{name}/")
            lines.extend(_render_tree(tree, entry.path, depth + 1))
    return lines


def _tree_notes(tree: _Tree, max_depth: int | None) -> list[str]:
    notes: list[str] = []
    if tree.more:
        notes.append(f"... {tree.more:,} more entries not shown (limit {LIST_LIMIT}). Use glob to filter, "
                     "or list a subdirectory.")
    elif tree.cut and tree.stop_reason == "limit":
        notes.append(f"(Showing {tree.levels} level(s); the next level would pass the {LIST_LIMIT}-entry limit, so "
                     "directories marked (N entries) are not expanded. List one of them, or use glob, to see more.)")
    elif tree.cut:
        notes.append(f"(Stopped at max_depth={max_depth}; directories marked (N entries) are not expanded.)")
    elif tree.stop_reason == "cancelled":
        notes.append("(Listing interrupted.)")
    if tree.ignored:
        notes.append(f"({tree.ignored:,} gitignored entries not shown.)")
    if tree.shown == 0:
        notes.append("(empty directory)")
    return notes


def _list_glob(start: Path, shown: str, glob: str, rules: IgnoreRules, ctx: ToolContext) -> ToolResult:
    matcher = GlobFilter(glob, start)
    found: list[str] = []
    every = Spool()  # the whole list, kept when the model is shown only the first LIST_LIMIT
    total = 0
    for entry in walk(start, rules, matcher):
        if entry.is_dir:
            continue
        if ctx.cancel.cancelled:
            break
        total += 1
        path = display_path(ctx.root, entry.path)
        every.write(path + "\n")
        if len(found) < LIST_LIMIT:
            found.append(path)
    meta = {"path": shown, "glob": glob, "entries": len(found), "total": total}
    if not found:
        return ToolResult(f"No files match {glob!r} under {shown}/ (gitignored files are skipped).",
                          summary="no matches", meta=meta)
    full = None
    if total > len(found):
        found.append(f"... {total - len(found):,} more matching files not shown (limit {LIST_LIMIT}). "
                     "Narrow the glob or the path.")
        full = every.finish()
        full.status = f"{total:,} matching files"
    else:
        every.discard()
    return ToolResult("\n".join(found), summary=_pluralize(total, "file"), meta=meta, full=full)


def describe_listing(args: Mapping[str, Any]) -> str:
    """`src '*.py'`."""
    parts = [str(args.get("path") or ".")]
    if args.get("glob") or args.get("pattern"):
        parts.append(f"'{args.get('glob') or args.get('pattern')}'")
    return " ".join(parts)


LIST_FILES_FACTS = ToolFacts(kind="list", icon="📁", verb="list", describe=describe_listing, key_args=("path", "glob"),
                             fold_after=1)

LIST_FILES = Tool(
    name="list_files",
    description=(
        "List the project's files. Without `glob`: a tree of `path`, as many whole levels as fit in "
        f"{LIST_LIMIT} entries (directories not expanded show their entry count; `name@` is a symlink). "
        "With `glob`: every matching file path (e.g. `**/*.py`, `tests/test_*.py`), up to "
        f"{LIST_LIMIT}. Respects .gitignore; skips .git. Paths are relative to the project root."
    ),
    args=ListFilesArgs,
    fn=list_files,
    facts=LIST_FILES_FACTS,
)
declare(LIST_FILES.name, LIST_FILES.facts)


# ---------------------------------------------------------------------------------------------- read_file


class ReadFileArgs(BaseModel):
    path: str = Field(description="File to read, relative to the project root.")
    offset: int = Field(1, ge=1, description="First line to show (1-based).")
    limit: int = Field(READ_LIMIT, ge=1, le=READ_LIMIT, description="How many lines to show.")


@datarecord
class _Page:
    """The lines of a file one read_file call shows, and where it stopped."""

    lines: list[str] = field(default_factory=list)
    last: int = 0
    total: int = 0
    long_lines: int = 0


def read_file(args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
    target = resolve_readable(ctx.root, args.path, ctx.read_roots)
    shown = shown_path(ctx.root, target)
    if target.exists() and not target.is_file() and not target.is_dir():
        raise ToolError(f"{shown} is not a regular file (a FIFO, socket or device); read_file only reads files.")
    base = _confining_root(target, ctx)
    if is_image_path(target) and target.is_file() and (image := _read_image(target, shown, ctx, base)) is not None:
        return image
    try:
        with open_confined(base, target) as fh:  # never through a folder swapped for a link since the check
            head = fh.read(ENCODING_SNIFF_BYTES)
            if looks_binary(head):
                size = target.stat().st_size
                raise ToolError(f"{shown} is a binary file ({size:,} bytes); read_file only shows text. "
                                "Use bash (e.g. `file`, `xxd | head`) to inspect it.")
            fh.seek(0)
            page = _read_encoded_page(fh, head, args.offset, args.limit)
    except OSError as exc:
        raise file_error(exc, target, shown) from None
    meta = {"path": shown, "lines": len(page.lines), "total_lines": page.total, "offset": args.offset,
            "end": page.last}
    if page.total == 0:
        return ToolResult("(empty file)", summary="0 lines", meta=meta)
    if args.offset > page.total:
        raise ToolError(f"offset {args.offset} is past the end of {shown}, which has {page.total:,} lines.")
    whole = args.offset == 1 and page.last == page.total
    summary = _pluralize(page.total, "line") if whole else f"lines {args.offset}-{page.last} of {page.total:,}"
    return ToolResult("\n".join(page.lines + _page_notes(page)), summary=summary, meta=meta)


def _confining_root(target: Path, ctx: ToolContext) -> Path:
    """The folder `target` was allowed in (the project, a user skill's folder, an attached file's folder), from
    which it is opened without following links (`open_confined`)."""
    for top in (ctx.root, *ctx.read_roots):
        real = top.resolve()
        if target.is_relative_to(real):
            return real if real != target else real.parent  # an attached file is its own read root
    return ctx.root


def _read_image(target: Path, shown: str, ctx: ToolContext, base: Path) -> ToolResult | None:
    """The image as the model sees it; None when the file is not a readable image (read as any file)."""
    if not ctx.images:
        raise ToolError(f"{shown} is an image, and the current model does not accept images, so read_file cannot "
                        "show it. Work from its name and context, or ask the user to describe it.")
    try:
        image = load_image(target, shown, "read with read_file", ctx.image_max_edge, root=base)
    except ToolError:
        return None
    kind = image.media_type.removeprefix("image/").upper()
    return ToolResult(f"Image {shown} ({image.width}×{image.height} {kind}) is attached.", images=(image,),
                      summary=f"image {image.width}×{image.height}",
                      meta={"path": shown, "width": image.width, "height": image.height})


def _read_encoded_page(fh: BinaryIO, head: bytes, offset: int, limit: int) -> _Page:
    """A page of the file in its own encoding (text.py), sniffed from `head`, its first bytes."""
    codec, bom = detect_encoding(head, complete=len(head) < ENCODING_SNIFF_BYTES)
    if bom and codec != "utf-8":  # UTF-16/32: a line does not end at a b"\n" byte; such files are small
        return _read_page(io.BytesIO(decode(fh.read()).text.encode("utf-8")), offset, limit)
    return _read_page(fh, offset, limit, codec)


def _read_page(fh: BinaryIO, offset: int, limit: int, codec: str = "utf-8") -> _Page:
    page = _Page()
    chars = 0
    number = 0
    for number, (raw, extra) in enumerate(_lines(fh), 1):
        if number < offset:
            continue
        if len(page.lines) >= limit or chars >= READ_CHAR_BUDGET:
            page.total = number + _count_rest(fh)
            return page
        line = decode_line(raw, codec).rstrip("\r\n")
        if number == 1:
            line = line.removeprefix("\ufeff")
        if len(line) > LINE_CHARS or extra:
            line = f"{line[:LINE_CHARS]}… [{len(line) - LINE_CHARS + extra:,} more characters on this line]"
            page.long_lines += 1
        page.lines.append(f"{number:6}\t{line}")
        chars += len(line) + 8
        page.last = number
    page.total = number
    return page


def _lines(fh: BinaryIO) -> Iterator[tuple[bytes, int]]:
    """The file's lines as (at most _LINE_BYTES + 1 bytes of the line, how many bytes of it were skipped)."""
    while head := fh.readline(_LINE_BYTES + 1):
        skipped = 0
        if len(head) > _LINE_BYTES and not head.endswith(b"\n"):
            while chunk := fh.readline(1 << 20):
                skipped += len(chunk.rstrip(b"\r\n"))
                if chunk.endswith(b"\n"):
                    break
        yield head, skipped


def _count_rest(fh: BinaryIO) -> int:
    """Lines left in the file, counted in big chunks (fast even for huge logs)."""
    count = 0
    last = b"\n"
    while chunk := fh.read(1 << 20):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (0 if last == b"\n" else 1)


def _page_notes(page: _Page) -> list[str]:
    notes: list[str] = []
    if page.long_lines:
        notes.append(f"({page.long_lines:,} line(s) longer than {LINE_CHARS:,} characters were cut; use grep or "
                     "bash to see them in full.)")
    if page.last < page.total:
        notes.append(f"... {page.total - page.last:,} more lines; call read_file with offset={page.last + 1} "
                     "to continue.")
    return notes


def describe_read(args: Mapping[str, Any]) -> str:
    """`src/app.py:10-29`: the path and the lines asked for."""
    offset, limit = args.get("offset"), args.get("limit")
    lines = ""
    if isinstance(offset, int) and isinstance(limit, int) and limit > 0:
        lines = f":{offset}-{offset + limit - 1}"
    elif isinstance(offset, int) and offset > 1:
        lines = f":{offset}-"
    elif isinstance(limit, int) and limit > 0:
        lines = f":1-{limit}"
    return str(args.get("path", "")) + lines


READ_FILE_FACTS = ToolFacts(kind="read", icon="📖", verb="read", describe=describe_read, key_args=("path",),
                            preview="none", fold_after=1)
"""The file's text is for the model; the person sees the action line. Read again when needed."""

READ_FILE = Tool(
    name="read_file",
    description=(
        "Read a text file, with line numbers (`     1<TAB>text`). Shows up to "
        f"{READ_LIMIT} lines from `offset` (1-based); longer files end with a note giving the offset to "
        f"continue from. Lines over {LINE_CHARS} characters are cut. An image file (png, jpg, gif, webp) is "
        "returned as an image you can see. Other binary files are refused. "
        "The line-number prefix is not part of the file: never copy it into edit_file."
    ),
    args=ReadFileArgs,
    fn=read_file,
    facts=READ_FILE_FACTS,
)
declare(READ_FILE.name, READ_FILE.facts)


# ---------------------------------------------------------------------------------------------- write_file


class WriteFileArgs(BaseModel):
    path: str = Field(description="File to create or overwrite, relative to the project root.")
    content: str = Field(description="The complete new content of the file.")


@datarecord(frozen=True)
class _Change:
    """A planned write: where, what it does to the file, and the bytes that will be stored."""

    target: Path
    shown: str
    diff: str
    data: bytes
    created: bool
    new_text: str


def _plan_write(args: WriteFileArgs, ctx: ToolContext) -> _Change:
    target = resolve_in_root(ctx.root, args.path)
    shown = display_path(ctx.root, target)
    if target.is_dir():
        raise ToolError(f"{shown} is a directory; give the path of a file to write.")
    if not target.exists():
        data = args.content.encode("utf-8")
        return _Change(target, shown, unified_diff(None, args.content, shown), data, True, args.content)
    size = _regular_size(target, shown, "write_file")
    if size > MAX_EDIT_BYTES:
        diff = f"{shown} ({size:,} bytes) will be replaced; it is too big to show what changes.\n"
        return _Change(target, shown, diff + unified_diff("", args.content, shown), args.content.encode(), False,
                       args.content)
    raw = read_bytes(target, shown, ctx.root)
    if looks_binary(raw):
        diff = f"Binary file {shown} ({len(raw):,} bytes) will be replaced by text.\n"
        return _Change(target, shown, diff + unified_diff("", args.content, shown), args.content.encode(), False,
                       args.content)
    old = decode(raw)
    new_text = args.content.replace("\r\n", "\n") if old.newline == "\r\n" else args.content
    return _Change(target, shown, unified_diff(old.text, new_text, shown), old.encode(new_text), False, new_text)


def _regular_size(target: Path, shown: str, tool: str) -> int:
    """The size of the existing `target`; ToolError when it is not a regular file (a FIFO would block the read,
    a device would never end)."""
    try:
        info = target.stat()
    except OSError as exc:
        raise file_error(exc, target, shown) from None
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{shown} is not a regular file (a FIFO, socket or device); {tool} only changes files.")
    return info.st_size


def write_file(args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
    change = _plan_write(args, ctx)
    write_atomically(change.target, change.data, change.shown, root=ctx.root)
    lines = count_lines(change.new_text)
    added, removed = diff_stat(change.diff)
    what = "new file" if change.created else f"+{added} -{removed}"
    meta = {"path": change.shown, "lines": lines, "created": change.created, "added": added, "removed": removed}
    return ToolResult(f"Wrote {_pluralize(lines, 'line')} to {change.shown} ({what}).",
                      summary=f"wrote {_pluralize(lines, 'line')}", diff=change.diff, meta=meta)


def preview_write(args: WriteFileArgs, ctx: ToolContext) -> str:
    change = _plan_write(args, ctx)
    return change.diff or f"(no changes: {change.shown} already has this content)"


WRITE_FILE_FACTS = ToolFacts(kind="write", icon="📝", verb="write", key_args=("path",), preview="none",
                             fold_after=20)
"""The diff is shown on its own; it says what changed, so it stays verbatim long."""

WRITE_FILE = Tool(
    name="write_file",
    description=(
        "Create a file, or replace a file's entire content (parent directories are created). "
        "To change part of an existing file prefer edit_file; read a file before overwriting it. "
        "Returns a diff against the previous content."
    ),
    args=WriteFileArgs,
    fn=write_file,
    mutating=True,
    preview=preview_write,
    facts=WRITE_FILE_FACTS,
)
declare(WRITE_FILE.name, WRITE_FILE.facts)


# ---------------------------------------------------------------------------------------------- edit_file


class EditFileArgs(BaseModel):
    path: str = Field(description="File to edit, relative to the project root.")
    old_string: str = Field(min_length=1, description="Exact text to replace, including whitespace and "
                                                      "indentation, without read_file's line-number prefixes.")
    new_string: str = Field(description="Text to put in its place.")
    replace_all: bool = Field(False, description="Replace every occurrence instead of exactly one.")


_LINE_NUMBER_PREFIX = regex(r"^\s*\d+\t", re.MULTILINE)


def _plan_edit(args: EditFileArgs, ctx: ToolContext) -> tuple[_Change, int]:
    target = resolve_in_root(ctx.root, args.path)
    shown = display_path(ctx.root, target)
    if not target.exists():
        raise ToolError(f"File not found: {shown}.{suggest_similar(target, shown)} To create a file use write_file.")
    size = _regular_size(target, shown, "edit_file")
    if size > MAX_EDIT_BYTES:
        raise ToolError(f"{shown} is {size:,} bytes, more than edit_file handles ({MAX_EDIT_BYTES:,}); change it with "
                        "bash (e.g. `sed -i`), or write a smaller file.")
    source = load_text(target, shown, ctx.root)
    old, new = _match_newlines(args.old_string, source), _match_newlines(args.new_string, source)
    if old == new:
        raise ToolError("old_string and new_string are identical; there is nothing to change.")
    count = source.text.count(old)
    if count == 0 and invisible(old) != old and invisible(old) in source.text:
        # The model copied a line holding control characters as read_file showed them (tools.visible).
        old, new = invisible(old), invisible(new)
        count = source.text.count(old)
    if count == 0:
        raise ToolError(_not_found_message(source.text, old, shown))
    if count > 1 and not args.replace_all:
        lines = _occurrence_lines(source.text, old)
        raise ToolError(f"old_string matches {count} times in {shown} (at lines {', '.join(map(str, lines))}). "
                        "Include more surrounding lines to make it unique, or set replace_all=true to replace "
                        "every occurrence.")
    new_text = source.text.replace(old, new) if args.replace_all else source.text.replace(old, new, 1)
    diff = unified_diff(source.text, new_text, shown)
    return _Change(target, shown, diff, source.encode(new_text), False, new_text), count


def _match_newlines(text: str, source: TextFile) -> str:
    # CRLF files are held with \n internally, so a model that copied \r\n still matches.
    return text.replace("\r\n", "\n") if source.newline == "\r\n" else text


def _occurrence_lines(text: str, old: str, limit: int = 10) -> list[int]:
    lines: list[int] = []
    start = text.find(old)
    while start >= 0 and len(lines) < limit:
        lines.append(text.count("\n", 0, start) + 1)
        start = text.find(old, start + len(old))
    return lines


def _not_found_message(text: str, old: str, shown: str) -> str:
    message = f"old_string was not found in {shown}."
    if _LINE_NUMBER_PREFIX.search(old):
        return (f"{message} It seems to contain read_file line-number prefixes (`   12<TAB>`); those are not part "
                "of the file. Remove them and copy only the text after the tab.")
    near = _whitespace_insensitive_match(text, old)
    if near:
        return (f"{message} A match exists when whitespace is ignored (at line {near}): check indentation, tabs vs "
                "spaces and trailing spaces, and copy the text exactly as read_file shows it.")
    return f"{message} Read the file with read_file and copy the exact text to replace, including whitespace."


def _whitespace_insensitive_match(text: str, old: str) -> int:
    """The 1-based line where `old` matches if all whitespace runs are treated alike, or 0."""
    wanted = [" ".join(line.split()) for line in old.strip("\n").split("\n")]
    lines = [" ".join(line.split()) for line in text.split("\n")]
    size = len(wanted)
    for start in range(len(lines) - size + 1):
        window = lines[start:start + size]
        if size == 1:
            if wanted[0] and wanted[0] in window[0]:
                return start + 1
        elif window[0].endswith(wanted[0]) and window[-1].startswith(wanted[-1]) and window[1:-1] == wanted[1:-1]:
            return start + 1
    return 0


def edit_file(args: EditFileArgs, ctx: ToolContext) -> ToolResult:
    change, count = _plan_edit(args, ctx)
    write_atomically(change.target, change.data, change.shown, root=ctx.root)
    added, removed = diff_stat(change.diff)
    replaced = _pluralize(count if args.replace_all else 1, "occurrence")
    shown_diff = change.diff if len(change.diff) <= RESULT_DIFF_CHARS else (
        change.diff[:RESULT_DIFF_CHARS] + "\n... (diff cut; read the file to see the rest)\n")
    meta = {"path": change.shown, "replacements": count if args.replace_all else 1, "added": added,
            "removed": removed, "lines": count_lines(change.new_text)}
    return ToolResult(f"Edited {change.shown}: replaced {replaced}.\n{shown_diff}".rstrip("\n"),
                      summary=f"replaced {replaced} · +{added} -{removed}", diff=change.diff, meta=meta)


def preview_edit(args: EditFileArgs, ctx: ToolContext) -> str:
    return _plan_edit(args, ctx)[0].diff


EDIT_FILE_FACTS = ToolFacts(kind="edit", icon="✏️", verb="edit", key_args=("path",), preview="none", fold_after=20)

EDIT_FILE = Tool(
    name="edit_file",
    description=(
        "Replace an exact string in a file. `old_string` must match the file exactly (whitespace and "
        "indentation included, no line-number prefixes) and exactly once: add surrounding lines to make it "
        "unique, or set replace_all=true to change every occurrence. Read the file first. Returns the diff."
    ),
    args=EditFileArgs,
    fn=edit_file,
    mutating=True,
    preview=preview_edit,
    facts=EDIT_FILE_FACTS,
)
declare(EDIT_FILE.name, EDIT_FILE.facts)
