"""What a task's text says about where to look: every signal a bug report or request carries, nothing
checked against the disk yet (retrieval.py resolves them).

- `@path` mentions (the person attaches those files) and paths written out (`src/x.py`, `x.py:40-60`);
- traceback frames (`File "...", line N, in f`, `path.py:12: in f`), innermost last;
- error lines (`ValueError: Dimension of "v1" is ...`), whose fixed words can be grepped;
- modules (`from a.b import c, d`, `import a.b`, `a.b.c` in prose) and the names imported from them;
- identifiers, each with where it was found (the title, a code span, a call in code, prose): a name in
  the title or in backticks says more than one in a pasted REPL session;
- the title (the first line) and the whole text, for word matches against file names and for BM25.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import Literal

from swecli.lazy import regex
from swecli.records import datarecord

Source = Literal["title", "span", "code", "prose", "import"]
SOURCE_WEIGHT: dict[Source, float] = {"title": 1.0, "span": 0.9, "import": 0.8, "code": 0.6, "prose": 0.45}
"""How much a name found there says about where the change belongs (the strongest occurrence counts)."""

_URL = regex(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE, needs="://")
MENTION = regex(r"(?:^|(?<=\s))@([^\s@]+)", needs="@")
_PATH = regex(
    r"(?<![\w/.@-])((?:[A-Za-z]:)?(?:\.{1,2}[/\\])?(?:[\w.-]+[/\\])+[\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7}"
    r"|[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7})(?::(\d+)(?:-(\d+))?)?", needs="."
)
_FRAME = regex(r'File "([^"\n]+)", line (\d+)(?:, in ([\w<>.]+))?', needs='File "')
_PYTEST_FRAME = regex(r"^([\w./\\-]+\.\w+):(\d+): (?:in ([\w<>]+)|\w*(?:Error|Exception))", re.MULTILINE,
                      needs=": ")
_ERROR = regex(r"^\s*(?:E\s+)?([A-Z]\w*(?:\.\w+)*(?:Error|Exception|Warning|Exit|Failure)): (.{8,300})$",
                    re.MULTILINE, needs=": ")
_DIAGNOSTIC = regex(r"^\s*(?:[\w./\\-]+:\d+:(?:\d+:)?\s*|(?:WARNING|ERROR|Warning|Error|warning|error):\s+)"
                         r"(?:(?:WARNING|ERROR|warning|error):\s*)?([A-Za-z].{11,300})$", re.MULTILINE, needs=":")
"""Compiler, linter and build-tool style messages: `file:4: message`, `WARNING: message`."""
_FENCE = regex(r"^```[^\n]*\n(.*?)(?:^```|\Z)", re.MULTILINE | re.DOTALL, needs="```")
_SPAN = regex(r"`([^`\n]{1,160})`", needs="`")
_FROM_IMPORT = regex(r"^\s*(?:>>> |\.\.\. )?from\s+([\w.]+)\s+import\s+\(?([\w\s,*]+)", re.MULTILINE, needs="import")
_IMPORT = regex(r"^\s*(?:>>> |\.\.\. )?import\s+([\w.]+(?:\s*,\s*[\w.]+)*)", re.MULTILINE, needs="import")
_DOTTED = regex(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w(])", needs=".")
_NAME = regex(r"(?<![\w.])([A-Za-z_]\w{2,})")
_CALLED = regex(r"(?:(?<=\.)|(?<![\w.]))([A-Za-z_]\w{2,})\s*\(", needs="(")
_ATTRIBUTE = regex(r"\b([A-Z]\w+)\.(_{0,2}[A-Za-z]\w+)", needs=".")
_CAMEL = regex(r"(?<![\w./-])((?:[A-Z][a-z0-9]+){2,}|[A-Z][a-z0-9]+[A-Z]\w*|[a-z]+(?:[A-Z][a-z0-9]*)+)"
                    r"(?![\w/-])")
_SNAKE = regex(r"(?<![\w./-])(_{0,2}[a-z][a-z0-9]*(?:_[a-z0-9]+)+_{0,2})(?![\w/-])", needs="_")
_PROMPT_LINE = regex(r"^\s*(?:>>>|\.\.\.|In \[\d+\]:)\s?(.*)$", re.MULTILINE, needs=(">>>", "...", "In ["))
_SOURCE_SUFFIXES = frozenset({
    "py", "pyi", "js", "jsx", "mjs", "cjs", "ts", "tsx", "go", "rs", "java", "kt", "rb", "php", "c", "h", "cc",
    "cpp", "cxx", "hpp", "hh", "cs", "swift", "ex", "exs", "erl", "scala", "lua", "sh", "toml", "json", "yaml",
    "yml", "md", "rst", "txt", "cfg", "ini", "lock", "html", "css", "scss", "vue", "svelte", "sql"
})


@datarecord(frozen=True)
class PathMention:
    """A path named in the task (a mention, a path, a traceback frame), with lines if given."""

    raw: str
    start: int | None = None
    end: int | None = None
    function: str = ""
    kind: Literal["mention", "path", "frame"] = "path"
    innermost: bool = False
    """The last frame of a traceback: where the error was raised."""


@datarecord
class Signals:
    """What the task's text says about where to look."""

    title: str = ""
    text: str = ""
    mentions: list[str] = field(default_factory=list)
    """`@path` tokens: files the person attaches explicitly."""
    paths: list[PathMention] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    """(exception type, message) pairs."""
    modules: list[str] = field(default_factory=list)
    imported: dict[str, list[str]] = field(default_factory=dict)
    """Module -> names imported from it (`from a.b import c, d`)."""
    names: dict[str, Source] = field(default_factory=dict)
    """Identifier -> the strongest place it was found."""
    qualified: set[tuple[str, str]] = field(default_factory=set)
    """(Class, member) pairs written as `Class.member`."""

    def add_name(self, name: str, source: Source) -> None:
        name = name.strip()
        if len(name) < 3 or name.isdigit():
            return
        old = self.names.get(name)
        if old is None or SOURCE_WEIGHT[source] > SOURCE_WEIGHT[old]:
            self.names[name] = source


def mentioned_paths(text: str) -> list[str]:
    """The `@path` tokens in a prompt, in order, without duplicates (trailing punctuation dropped)."""
    seen: list[str] = []
    for raw in MENTION.findall(text):
        path = raw.rstrip(".,;:!?)\"'")
        if path and path not in seen:
            seen.append(path)
    return seen


def extract(prompt: str) -> Signals:
    text = _URL.sub(" ", prompt)
    lines = [line for line in text.splitlines() if line.strip()]
    found = Signals(title=lines[0].strip() if lines else "", text=text)
    found.mentions = mentioned_paths(text)
    _frames(text, found)
    _paths(text, found)
    for kind, message in _ERROR.findall(text):
        found.errors.append((kind, message.strip()))
    for message in _DIAGNOSTIC.findall(text):
        if not any(message.strip() == m for _, m in found.errors):
            found.errors.append(("message", message.strip()))
    code = _code_regions(text)
    _imports("\n".join(code), found)
    for region in code:
        _code_names(region, found)
    for span in _SPAN.findall(text):
        _span(span, found)
    _prose(_without_code(text), found)
    _title(found)
    return found


def _frames(text: str, found: Signals) -> None:
    frames = [PathMention(m.group(1), int(m.group(2)), None, m.group(3) or "", "frame")
              for m in _FRAME.finditer(text)]
    frames += [PathMention(m.group(1), int(m.group(2)), None, m.group(3) or "", "frame")
               for m in _PYTEST_FRAME.finditer(text)]
    for i, frame in enumerate(frames):
        found.paths.append(PathMention(frame.raw, frame.start, None, frame.function, "frame", i == len(frames) - 1))
        if frame.function and frame.function[0] != "<":
            found.add_name(frame.function, "code")


def _paths(text: str, found: Signals) -> None:
    framed = {p.raw for p in found.paths}
    for match in _PATH.finditer(text):
        raw = match.group(1).rstrip(".")
        suffix = raw.rpartition(".")[2]
        if raw in framed or suffix.lower() not in _SOURCE_SUFFIXES or suffix != suffix.lower():
            continue
        start = int(match.group(2)) if match.group(2) else None
        end = int(match.group(3)) if match.group(3) else start
        found.paths.append(PathMention(raw.lstrip("@"), start, end))


def _code_regions(text: str) -> list[str]:
    regions = [m.group(1) for m in _FENCE.finditer(text)]
    prompts = [m.group(1) for m in _PROMPT_LINE.finditer(_FENCE.sub("", text))]
    if prompts:
        regions.append("\n".join(prompts))
    return regions


def _without_code(text: str) -> str:
    return _PROMPT_LINE.sub("", _FENCE.sub("", text))


def _imports(code: str, found: Signals) -> None:
    for module, names in _FROM_IMPORT.findall(code):
        found.modules.append(module)
        imported = [n for n in re.split(r"[\s,()]+", names) if n and n != "*" and n != "as"]
        found.imported.setdefault(module, []).extend(imported)
        for name in imported:
            found.add_name(name, "import")
    for group in _IMPORT.findall(code):
        found.modules.extend(m.strip() for m in group.split(","))


def _code_names(code: str, found: Signals) -> None:
    for name in _CALLED.findall(code):
        found.add_name(name, "code")
    for owner, member in _ATTRIBUTE.findall(code):
        found.qualified.add((owner, member))
        found.add_name(member, "code")
    for name in _CAMEL.findall(code):
        found.add_name(name, "code")


def _span(span: str, found: Signals) -> None:
    span = span.strip()
    for dotted in _DOTTED.findall(span):
        parts = dotted.split(".")
        if parts[0].islower() and len(parts) > 2:
            found.modules.append(dotted)
        if len(parts) >= 2 and parts[-2][:1].isupper():
            found.qualified.add((parts[-2], parts[-1]))
    names = _NAME.findall(span)
    if len(names) <= 3:  # a name or a short expression; a pasted statement is code
        for name in names:
            found.add_name(name, "span")
    else:
        _code_names(span, found)


def _prose(text: str, found: Signals) -> None:
    for dotted in _DOTTED.findall(text):
        parts = dotted.split(".")
        if all(p.islower() or "_" in p for p in parts) and len(parts) >= 2 and not _is_file_like(dotted):
            found.modules.append(dotted)
        if len(parts) == 2 and parts[0][:1].isupper():
            found.qualified.add((parts[0], parts[1]))
            found.add_name(parts[1], "prose")
    for pattern in (_CAMEL, _SNAKE):
        for name in pattern.findall(text):
            found.add_name(name, "prose")
    for name in _CALLED.findall(text):
        found.add_name(name, "prose")


def _title(found: Signals) -> None:
    for name in list(found.names):
        if re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", found.title):
            found.names[name] = "title"
    for pattern in (_CAMEL, _SNAKE, _CALLED):
        for name in pattern.findall(found.title):
            found.add_name(name, "title")
    for span in _SPAN.findall(found.title):
        for name in _NAME.findall(span):
            found.add_name(name, "title")


def _is_file_like(word: str) -> bool:
    return word.rpartition(".")[2] in _SOURCE_SUFFIXES
