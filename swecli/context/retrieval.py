"""Just-in-time context: the files and symbols a prompt names, resolved before the first model call.

When someone writes "the bug is in `parse_header` in src/http/headers.py", the model's first steps
would be to find and read exactly that. Resolving it up front saves those round trips:

- path mentions (`src/x.py`, `@src/x.py`, `src/x.py:40-60`, a directory) and bare file names that
  exist in the project (`headers.py`) are read, bounded;
- identifiers (in backticks, CamelCase or snake_case, `name()`) are looked up as definitions
  (`def name`, `class Name`, `function name`, `fn name`, ...), a few lines each.

Everything stays inside the project root, respects .gitignore (the same rules as `list_files` and
`grep`, from `swecli.tools.walk`), skips binary files, fits a small token budget and stops at a time
limit. The result is one text the loop attaches as `UserMessage(kind="context")`, or None.
"""

from __future__ import annotations

import math
import re
import sys
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

from swecli.tools.text import looks_binary
from swecli.tools.walk import ALWAYS_SKIP, IgnoreRules, scan, walk

MAX_READ_BYTES = 512_000
"""Only this much of a mentioned file is read: the context shows its head anyway."""
MAX_SCAN_BYTES = 1_000_000
"""Files larger than this are not searched for definitions (generated code, data)."""
_SUFFIX_TEXT = (
    ".py .pyi .js .jsx .mjs .cjs .ts .tsx .go .rs .java .kt .kts .scala .rb .php .c .h .cc .cpp .cxx .hpp .hh "
    ".cs .swift .m .mm .lua .sh .bash .zsh .ex .exs .erl .hs .ml .mli .clj .dart .r .jl .vue .svelte .sol .zig "
    ".nim .pl .pm .groovy .fs .fsx"
)
SOURCE_SUFFIXES = frozenset(_SUFFIX_TEXT.split())

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
_PATH = re.compile(
    r"(?<![\w/.@-])@?((?:\.{1,2}/)?(?:[\w.-]+/)+[\w.-]*|[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7})"
    r"(?::(\d+)(?:-(\d+))?)?"
)
_BACKTICK = re.compile(r"`([^`\n]{1,120})`")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?$")
# A symbol is not part of a path or a dotted name: `x_y.py` is a file, `a.b_c` a module path.
_CAMEL = re.compile(r"(?<![\w./-])((?:[A-Z][a-z0-9]+|[a-z][a-z0-9]+)(?:[A-Z][a-z0-9]*)+)(?![\w/-]|\.\w)")
_SNAKE = re.compile(r"(?<![\w./-])(_?[a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w/-]|\.\w)")
_DOTTED = re.compile(r"(?<![\w./-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(\))?(?![\w/-]|\.\w)")
_CALL = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]{2,})\(\)")
_DEF_KEYWORDS = (r"def|class|function|func|fn|struct|enum|interface|trait|type|impl|module|object|"
                 r"record|protocol|macro|defmodule|defp?|sub")

Kind = Literal["file", "directory", "symbol"]
T = TypeVar("T")


@dataclass(frozen=True)
class Attachment:
    kind: Kind
    label: str
    """The path (relative to the root) or the symbol name."""
    text: str
    tokens: int
    truncated: bool = False


@dataclass
class Retrieval:
    attachments: list[Attachment] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Mentions that were not attached, each with why (ignored, binary, budget, not found...)."""
    timed_out: bool = False

    @property
    def tokens(self) -> int:
        return sum(a.tokens for a in self.attachments)

    @property
    def text(self) -> str:
        head = ("Context attached by swecli for the files and symbols named in the prompt "
                "(use read_file or grep for more):")
        return "\n\n".join([head, *(a.text for a in self.attachments)])

    def summary(self) -> str:
        """One line for the log and `/context`."""
        counts: dict[str, int] = {}
        for a in self.attachments:
            counts[a.kind] = counts.get(a.kind, 0) + 1
        parts = [f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in counts.items()]
        line = f"just-in-time context: {', '.join(parts) or 'nothing'} ({self.tokens} tokens)"
        if self.skipped:
            line += "; skipped " + "; ".join(self.skipped[:5])
        return line + ("; stopped at the time limit" if self.timed_out else "")


@dataclass(frozen=True)
class Mentions:
    paths: list[tuple[str, int | None, int | None]]
    """(path as written, first line, last line) in order of mention."""
    symbols: list[str]


def mentions(prompt: str) -> Mentions:
    """Path-like and symbol-like words of a prompt (nothing is checked against the disk here)."""
    text = _URL.sub(" ", prompt)
    paths: list[tuple[str, int | None, int | None]] = []
    symbols: list[str] = []
    for quoted in _BACKTICK.findall(text):
        quoted = quoted.strip()
        if _IDENT.match(quoted) and not _looks_like_file(quoted):
            symbols.append(quoted.removesuffix("()").rsplit(".", 1)[-1])
    for match in _PATH.finditer(text):
        raw = match.group(1).rstrip(".")
        if raw and raw not in (".", "..") and ("/" in raw or _plausible_file_name(raw)):
            start = int(match.group(2)) if match.group(2) else None
            end = int(match.group(3)) if match.group(3) else start
            paths.append((raw, start, end))
    for dotted in _DOTTED.findall(text):
        if not _looks_like_file(dotted):  # `ContextManager.prepare`: look up both names
            symbols.extend(part for part in dotted.split(".") if _CAMEL.fullmatch(part) or _SNAKE.fullmatch(part))
            symbols.append(dotted.rsplit(".", 1)[-1])
    for pattern in (_CALL, _CAMEL, _SNAKE):
        symbols.extend(pattern.findall(text))
    return Mentions(_unique(paths, key=lambda p: p[0]), _unique(symbols, key=lambda s: s))


def _plausible_file_name(word: str) -> bool:
    """A bare `name.ext` worth looking up: a short lowercase extension (not `ContextManager.prepare`)."""
    ext = word.rpartition(".")[2]
    return _looks_like_file(word) or (ext.islower() and ext.isalnum() and len(ext) <= 5)


def _looks_like_file(word: str) -> bool:
    """`config.toml`, `setup.py`: a dotted word whose last part is a short lowercase extension."""
    head, _, ext = word.rpartition(".")
    return bool(head) and ext.islower() and ext.isalnum() and len(ext) <= 5 and "(" not in word and (
        "." + ext in SOURCE_SUFFIXES or ext in {"toml", "json", "yaml", "yml", "md", "txt", "cfg", "ini", "lock"})


def _unique(items: list[T], key: Callable[[T], object]) -> list[T]:
    seen: set[object] = set()
    out: list[T] = []
    for item in items:
        k = key(item)
        if k not in seen:
            seen.add(k)
            out.append(item)
    return out


def retrieve(
    prompt: str,
    root: Path,
    budget_tokens: int = 4_000,
    count_tokens: Callable[[str], int] | None = None,
    time_limit: float = 2.0,
    max_files_scanned: int = 20_000,
    already_attached: Collection[str] = (),
) -> Retrieval | None:
    """Resolve the prompt's mentions into bounded context; None when nothing was named or found.

    `already_attached`: root-relative paths whose full text is already in the context (the REPL's
    `@path` attachments); they are not attached again, nor are definitions inside them."""
    found = mentions(prompt)
    if not found.paths and not found.symbols:
        return None
    finder = _Finder(Path(root).resolve(), budget_tokens, count_tokens or _estimate,
                     time.monotonic() + time_limit, max_files_scanned)
    finder.shown.update((Path(p).as_posix().removeprefix("./"), (1, sys.maxsize)) for p in already_attached)
    # One named file may use the whole budget; with more mentions, one file gets at most 60% of it.
    finder.attach_paths(found.paths, share=1.0 if len(found.paths) == 1 and not found.symbols else 0.6)
    finder.attach_symbols(found.symbols)
    result = finder.result
    return result if result.attachments else None


def _estimate(text: str) -> int:
    return math.ceil(len(text) / 3)


class _Finder:
    def __init__(self, root: Path, budget: int, count: Callable[[str], int], deadline: float, max_files: int) -> None:
        self.root = root
        self.budget = budget
        self.count = count
        self.deadline = deadline
        self.max_files = max_files
        self.rules = IgnoreRules(root)
        self.result = Retrieval()
        self.shown: dict[str, tuple[int, int]] = {}
        self._index: list[Path] | None = None

    @property
    def remaining(self) -> int:
        return self.budget - self.result.tokens

    def expired(self) -> bool:
        if time.monotonic() > self.deadline:
            self.result.timed_out = True
        return self.result.timed_out

    # --- paths ------------------------------------------------------------------------------

    def attach_paths(self, paths: list[tuple[str, int | None, int | None]], share: float) -> None:
        for raw, start, end in paths:
            if self.expired():
                return
            target = self._resolve(raw)
            if target is None:
                continue
            if target.is_dir():
                self._attach_directory(target)
            else:
                self._attach_file(target, start, end, share)

    def _resolve(self, raw: str) -> Path | None:
        """The file or directory a mention names, or None (silently: most words are not paths)."""
        direct = (self.root / raw).resolve()
        if direct.exists():
            if not direct.is_relative_to(self.root):
                self.result.skipped.append(f"{raw}: outside the project")
                return None
            if not self._visible(direct):
                self.result.skipped.append(f"{raw}: ignored by .gitignore")
                return None
            return direct
        if "/" in raw.strip("/"):
            return None
        matches = [p for p in self._files() if p.name == raw]
        if len(matches) > 3:
            self.result.skipped.append(f"{raw}: {len(matches)} files have that name")
            return None
        return min(matches, key=lambda p: (len(p.parts), str(p))) if matches else None

    def _visible(self, path: Path) -> bool:
        rel = path.relative_to(self.root)
        current = self.root
        for i, part in enumerate(rel.parts):
            current = current / part
            is_dir = i < len(rel.parts) - 1 or current.is_dir()
            if (is_dir and part in ALWAYS_SKIP) or self.rules.ignored(current, is_dir):
                return False
        return True

    def _attach_file(self, path: Path, start: int | None, end: int | None, share: float) -> None:
        rel = self._rel(path)
        if rel in self.shown:
            return
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_READ_BYTES)
        except OSError as exc:
            self.result.skipped.append(f"{rel}: cannot read ({exc.strerror or exc})")
            return
        if looks_binary(data):
            self.result.skipped.append(f"{rel}: binary")
            return
        lines = data.decode("utf-8", errors="replace").splitlines()
        total = f"{len(lines)}" + ("+" if len(data) == MAX_READ_BYTES else "")
        first = max(1, (start or 1) - (10 if start else 0))
        last = min(len(lines), (end or start or len(lines)) + (10 if start else 0))
        cap = max(self.remaining if share >= 1 else int(self.budget * share), 0)
        block = self._fit(lambda n: _file_block(rel, lines, first, min(last, first + n - 1), total),
                          last - first + 1, min(cap, self.remaining))
        if block is None:
            self.result.skipped.append(f"{rel}: over the context budget")
            return
        text, shown_last = block
        self._add(Attachment("file", rel, text, self.count(text), shown_last < last or last < len(lines)))
        self.shown[rel] = (first, shown_last)

    def _attach_directory(self, path: Path) -> None:
        rel = self._rel(path)
        children, hidden = scan(path, self.rules)
        names = [c.path.name + ("/" if c.is_dir else "") for c in children[:60]]
        if len(children) > 60:
            names.append(f"… and {len(children) - 60} more")
        note = f" ({hidden} ignored by .gitignore)" if hidden else ""
        text = f"### Directory {rel}/{note}\n" + ("\n".join(names) or "(empty)")
        tokens = self.count(text)
        if tokens <= self.remaining:
            self._add(Attachment("directory", rel, text, tokens))
        else:
            self.result.skipped.append(f"{rel}/: over the context budget")

    def _fit(self, render: Callable[[int], tuple[str, int]], lines: int, budget: int) -> tuple[str, int] | None:
        """The largest rendering (by halving the line count) that fits `budget` tokens."""
        n = max(1, min(lines, 400))
        while True:
            text, last = render(n)
            if self.count(text) <= budget:
                return text, last
            if n <= 8:
                return None
            n //= 2

    # --- symbols ----------------------------------------------------------------------------

    def attach_symbols(self, symbols: list[str], per_symbol: int = 2) -> None:
        wanted = [s for s in symbols if len(s) >= 3][:8]
        if not wanted or self.remaining < 50:
            return
        pattern = _definition_pattern(wanted)
        hits: dict[str, list[tuple[Path, int]]] = {s: [] for s in wanted}
        for path, text in self._source_texts(wanted):
            for match in pattern.finditer(text):
                name = match.group("name") or match.group("assigned")
                if name in hits and len(hits[name]) < per_symbol:
                    hits[name].append((path, text.count("\n", 0, match.start()) + 1))
            if all(len(v) >= per_symbol for v in hits.values()):
                break
        for name in wanted:
            for path, line in hits[name]:
                self._attach_definition(name, path, line)
            if not hits[name] and self.result.timed_out:
                self.result.skipped.append(f"{name}: search stopped at the time limit")

    def _source_texts(self, symbols: list[str]) -> Iterator[tuple[Path, str]]:
        for path in self._files():
            if self.expired():
                return
            if path.suffix.lower() not in SOURCE_SUFFIXES:
                continue
            try:
                if path.stat().st_size > MAX_SCAN_BYTES:
                    continue
                data = path.read_bytes()
            except OSError:
                continue
            if looks_binary(data):
                continue
            text = data.decode("utf-8", errors="replace")
            if any(s in text for s in symbols):
                yield path, text

    def _attach_definition(self, name: str, path: Path, line: int) -> None:
        rel = self._rel(path)
        shown = self.shown.get(rel)
        if shown and shown[0] <= line <= shown[1]:
            return  # already visible in an attached file
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        end = _block_end(lines, line)
        block = self._fit(lambda n: _symbol_block(name, rel, lines, line, min(end, line + n - 1)),
                          end - line + 1, min(self.remaining, max(self.budget // 4, 200)))
        if block is None:
            self.result.skipped.append(f"{name}: over the context budget")
            return
        text, _ = block
        self._add(Attachment("symbol", name, text, self.count(text), truncated=False))

    # --- shared -----------------------------------------------------------------------------

    def _files(self) -> list[Path]:
        """Every visible file of the project (once, bounded by count and time)."""
        if self._index is None:
            self._index = []
            for entry in walk(self.root, self.rules):
                if len(self._index) >= self.max_files or self.expired():
                    break
                if not entry.is_dir and not entry.is_symlink:
                    self._index.append(entry.path)
        return self._index

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."

    def _add(self, attachment: Attachment) -> None:
        self.result.attachments.append(attachment)


def _definition_pattern(names: list[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True))
    return re.compile(
        r"^[ \t]*(?:(?:export|default|pub(?:\([^)]*\))?|public|private|protected|internal|static|abstract|final|"
        r"async|unsafe|extern|inline|override|open|data|sealed|case)\s+)*"
        r"(?:(?:" + _DEF_KEYWORDS + r")\s+\*?\s*(?:\([^)]*\)\s*)?(?P<name>" + alternatives + r")\b"
        r"|(?:const|let|var)\s+(?P<assigned>" + alternatives + r")\s*=\s*(?:async\s+)?(?:function\b|\())",
        re.MULTILINE,
    )


def _block_end(lines: list[str], line: int, limit: int = 40) -> int:
    """The last line of the definition starting at `line` (1-based): until the indentation returns."""
    indent = len(lines[line - 1]) - len(lines[line - 1].lstrip())
    end = line
    for i in range(line, min(len(lines), line - 1 + limit)):
        text = lines[i]
        if text.strip() and len(text) - len(text.lstrip()) <= indent and not text.lstrip().startswith((")", "}", "]")):
            break
        end = i + 1
    return max(end, min(len(lines), line + 2))


def _fence(lines: list[str]) -> str:
    longest = max((len(m) for line in lines for m in re.findall(r"`+", line)), default=0)
    return "`" * max(3, longest + 1)


def _numbered(lines: list[str], first: int, last: int) -> tuple[str, str]:
    chosen = lines[first - 1:last]
    fence = _fence(chosen)
    body = "\n".join(f"{n:>5}  {text}" for n, text in enumerate(chosen, start=first))
    return fence, body


def _file_block(rel: str, lines: list[str], first: int, last: int, total: str) -> tuple[str, int]:
    fence, body = _numbered(lines, first, last)
    head = f"### File {rel} (lines {first}-{last} of {total})" if lines else f"### File {rel} (empty)"
    return f"{head}\n{fence}\n{body}\n{fence}", last


def _symbol_block(name: str, rel: str, lines: list[str], first: int, last: int) -> tuple[str, int]:
    fence, body = _numbered(lines, first, last)
    return f"### Symbol {name}: defined at {rel}:{first}\n{fence}\n{body}\n{fence}", last
