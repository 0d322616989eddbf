"""Just-in-time context: before the first model call, attach what the task points at, and only that.

Every signal the text carries (signals.py) becomes evidence for a file of the project, with a reason a
person can check:

| evidence | weight | reason shown |
|---|---|---|
| a path written in the text (`x.py:40`) | 4 | "named in the task" |
| a traceback frame (innermost: +1) | 2.5 (3.5) | "named in the traceback" |
| an error message's fixed words found in the file | 2.5 / files | "contains the error message '...'" |
| a name the file defines (the map's symbol index) | by where it was written, how many files define it | "defines `f`" |
| a module the text imports or names | 1.2 | "module `a.b` named in the task" |
| a word of the title that is the file's name | 1.5 | "its name is in the title" |
| BM25 over paths, definitions and contents (supporting) | up to 1.2 | "lexical match (BM25 #n)" |
| imported by, importing or using names from a strong hit (supporting) | 0.3 x its score | "imports `x.py`" |

Tests, docs and examples count a fifth unless named outright. A file is attached (the excerpts that
matter: definitions, frames, matching lines; its outline otherwise) only when its score clears
`ATTACH_SCORE`, is close to the best one, and rests on more than supporting evidence; the next few are
listed with their reason, one line each, so the model can read them if it wants. `@path` mentions are
always attached whole (the person chose them).

The repository map and its BM25 index are built on background threads when a session opens; retrieval
waits for them at most until its deadline and then works with what it has, and says so.
"""

from __future__ import annotations

import builtins
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from swecli.lazy import regex
from swecli.messages import UserMessage
from swecli.records import datarecord
from swecli.retrieval.signals import SOURCE_WEIGHT, PathMention, Signals, extract

if TYPE_CHECKING:
    from swecli.repomap.lexical import Lexical
    from swecli.repomap.repomap import RepoMap
    from swecli.retrieval.attach import FileText

ATTACH_SCORE = 1.2
"""The confidence bar. With ATTACH_RATIO and MAX_ATTACHED it was chosen on two thirds of the SWE-bench
Lite dev set (bench/retrieval_bench.py; the other third held out) as the most selective setting whose hit
rate still beats BM25 alone: about half the attached files are the ones the fix edits."""
ATTACH_RATIO = 0.6
"""Attach only files within this fraction of the best score (the rest are listed)."""
MAX_ATTACHED = 2
MAX_LISTED = 6
MAX_PATHS = 40
"""Paths written in the task that are looked up (a pasted log can name hundreds)."""
LIST_SCORE = 0.8
MAX_DEFINERS = 6
"""A name defined in more files than this (`__init__`, `run`) points nowhere in particular."""
SECONDARY_ROLE = 0.2
"""Weight of implicit evidence for tests, docs and examples (they are rarely what a task changes)."""
_GENERIC_STEMS = frozenset({
    "__init__", "__main__", "init", "main", "core", "base", "utils", "util", "common", "misc", "helpers", "helper",
    "types", "type", "test", "tests", "conftest", "setup", "index", "api", "app", "config", "settings", "errors",
    "exceptions", "compat", "version", "constants"
})

_BUILTIN_NAMES = frozenset(dir(builtins)) | frozenset({
    "join", "split", "strip", "append", "extend", "update", "items", "keys", "values", "get", "pop", "copy",
    "format", "replace", "startswith", "endswith", "lower", "upper", "read", "write", "open", "close", "exists",
    "dirname", "basename", "abspath", "mkdir", "makedirs", "chdir", "getcwd", "rmtree", "remove", "main", "run",
    "test", "self", "cls", "args", "kwargs", "True", "False", "None", "Traceback", "Error", "Exception",
})
"""Names of Python builtins and the standard library's commonest calls: in a bug report they are the
reporter's scaffolding, not the project's code."""

RENDER_RESERVE = 0.25
"""Seconds of the time limit (at most a fifth of it) kept for reading and rendering what the search found."""

Count = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 3.5)


@datarecord(frozen=True)
class Evidence:
    """One reason a file matters to the task, with the lines it points at."""

    weight: float
    reason: str
    ranges: tuple[tuple[int, int], ...] = ()
    explicit: bool = False
    """Named outright (a path, a traceback frame): counts fully whatever the file's role."""
    supporting: bool = False
    """Lexical similarity or a graph neighbour: adds to a score, never enough to attach a file alone."""


@datarecord
class Candidate:
    """A file that may be attached, and the evidence for it."""

    rel: str
    role: str = "source"
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def score(self) -> float:
        """Strongest evidence first, each further piece counting half as much as the one before."""
        weights = sorted((e.weight * (1.0 if e.explicit or self.role in ("source", "entry", "config")
                                      else SECONDARY_ROLE) for e in self.evidence), reverse=True)
        return float(sum(w / (2 ** i) for i, w in enumerate(weights)))

    @property
    def attachable(self) -> bool:
        return any(not e.supporting for e in self.evidence)

    @property
    def why(self) -> str:
        reasons = [e.reason for e in sorted(self.evidence, key=lambda e: -e.weight)]
        return "; ".join(dict.fromkeys(reasons[:3]))


@datarecord(frozen=True)
class Attachment:
    """What retrieval adds to the task: a whole file or its excerpts, and why."""

    kind: Literal["file", "excerpt"]
    """`file`: attached whole (an `@path` mention); `excerpt`: the parts that matter."""
    path: str
    text: str
    tokens: int
    why: str = ""
    truncated: bool = False
    lines: int = 0


@datarecord
class Retrieval:
    """What retrieval found for one task: attached, listed, and what went wrong."""

    attachments: list[Attachment] = field(default_factory=list)
    listed: list[tuple[str, str]] = field(default_factory=list)
    """(path, why) of files below the bar, best first."""
    problems: list[str] = field(default_factory=list)
    """One sentence per `@path` mention that could not be attached."""
    notes: list[str] = field(default_factory=list)
    timed_out: bool = False
    seconds: float = 0.0
    ranking: list[tuple[str, float, str]] = field(default_factory=list)
    """The best candidates (path, score, why), attached or not: for logs and benchmarks."""

    @property
    def tokens(self) -> int:
        return sum(a.tokens for a in self.attachments)

    @property
    def attached_paths(self) -> list[str]:
        return [a.path for a in self.attachments]

    def message(self) -> UserMessage | None:
        """One context message placed before the prompt (None when there is nothing to say)."""
        if not self.attachments and not self.listed:
            return None
        parts = []
        mentioned = [a for a in self.attachments if a.kind == "file"]
        found = [a for a in self.attachments if a.kind == "excerpt"]
        if mentioned:
            parts.append("Files the user attached to the next message (with @ mentions):")
            parts += [a.text for a in mentioned]
        if found:
            parts.append("Context swecli found for the task (excerpts; read_file for more):")
            parts += [a.text for a in found]
        if self.listed:
            parts.append("Other files that may be relevant (not attached; read them if useful):\n"
                         + "\n".join(f"- {path}: {why}" for path, why in self.listed))
        return UserMessage(content="\n\n".join(parts), kind="context")

    def summary(self) -> str:
        """The notice: what was attached and why, what was only listed, and whether time ran out."""
        attached = [a for a in self.attachments if a.kind == "excerpt"]
        if attached:
            line = "just-in-time context: attached " + "; ".join(f"{a.path} ({a.why})" for a in attached)
            line += f" ({sum(a.tokens for a in attached):,} tokens)"
        else:
            line = "just-in-time context: nothing clear enough to attach"
        if self.listed:
            more = f" (+{len(self.listed) - 4})" if len(self.listed) > 4 else ""
            line += f"; listed {', '.join(p for p, _ in self.listed[:4])}{more}"
        for note in self.notes:
            line += f"; {note}"
        return line


def retrieve(
    prompt: str,
    root: Path,
    budget_tokens: int = 4_000,
    count_tokens: Count | None = None,
    time_limit: float = 2.0,
    *,
    just_in_time: bool = True,
    repo_map: RepoMap | None = None,
    lexical: Lexical | None = None,
) -> Retrieval:
    """Attach the task's `@path` mentions, then (when `just_in_time`) what the text points at.

    `repo_map` and `lexical` are taken from the background builds when not given, waiting at most until
    the deadline (`time_limit` seconds from the call). Every step of the search checks the deadline and the
    search stops early enough to leave time for rendering: what was found by then is attached, `@path`
    mentions always, and the notice says the search was cut short."""
    start = time.monotonic()
    deadline = start + time_limit
    search_until = deadline - min(RENDER_RESERVE, 0.2 * time_limit)
    root = Path(root).resolve()
    result = Retrieval()
    count = _immediate(count_tokens)
    signals = extract(prompt)
    _attach_mentions(root, signals.mentions, count, result)
    if just_in_time and budget_tokens > 0:
        finder = _Finder(root, signals, result, count, search_until)
        finder.run(repo_map, lexical, budget_tokens)
    result.seconds = time.monotonic() - start
    return result


def _immediate(count: Count | None) -> Count:
    """The caller's counter, unless it is a tokenizer whose vocabulary is not in memory yet: loading it
    takes a second or more and holds the interpreter, so this request's attachments are estimated."""
    from swecli.context.tokens import Tokenizer

    if count is None or (isinstance(count, Tokenizer) and not count.ready):
        return estimate_tokens
    return count


def _attach_mentions(root: Path, mentions: list[str], count: Count, result: Retrieval) -> None:
    from swecli.tools.images import is_image_path

    for raw in mentions:
        if is_image_path(raw):
            continue  # images go with the prompt itself (AgentSession.run, swecli.tools.images)
        from swecli.retrieval.attach import AttachError, read, render_whole, resolve  # a file is named: read it

        try:
            file = read(root, resolve(root, raw))
        except AttachError as exc:
            result.problems.append(str(exc))
            continue
        if file.rel in result.attached_paths:
            continue
        element, tokens, truncated = render_whole(file, count)
        result.attachments.append(Attachment("file", file.rel, element, tokens, "attached with @", truncated,
                                             file.line_count))


class _Finder:
    """Gathers evidence per file, then attaches what clears the bar within the budget."""

    def __init__(self, root: Path, signals: Signals, result: Retrieval, count: Count, deadline: float) -> None:
        self.root = root
        self.signals = signals
        self.result = result
        self.count = count
        self.deadline = deadline
        self.candidates: dict[str, Candidate] = {}
        self.rmap: RepoMap | None = None

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def expired(self) -> bool:
        if time.monotonic() > self.deadline:
            self.result.timed_out = True
        return self.result.timed_out

    def run(self, repo_map: RepoMap | None, lexical: Lexical | None, budget: int) -> None:
        self.rmap = repo_map or self._wait_for_map()
        indexed = self.rmap is not None and self._wait_for_indexes(self.rmap)
        self._paths(indexed)  # even past the deadline: written paths are few, cheap and the strongest evidence
        steps = [self._errors]
        if indexed:
            steps += [self._modules, self._names, self._stems, lambda: self._bm25(lexical), self._neighbours]
        for step in steps:
            if self.expired():
                break
            step()
        if self.expired() and not any("time limit" in note for note in self.result.notes):
            self.result.notes.append("stopped at the time limit; the search was cut short")
        self._decide(budget)
        if repo_map is None:
            from swecli.repomap.lexical import lexical_background

            lexical_background(self.root)  # refresh the map and index for the next task, off this one's clock

    # --- waiting for the indexes ----------------------------------------------------------------

    def _wait_for_map(self) -> RepoMap | None:
        from swecli.repomap.repomap import background, latest

        ready = latest(self.root)
        if ready is not None:
            return ready
        pending = background(self.root)
        rmap = pending.wait(self.remaining())
        if rmap is None:
            why = pending.error or "not ready within the time limit; it keeps building for the next task"
            self.result.notes.append(f"repository map unavailable ({why}): used only paths and error messages")
            if not pending.error:
                self.result.timed_out = True
        return rmap

    def _wait_for_indexes(self, rmap: RepoMap) -> bool:
        """The map's name, module and path indexes, built on a thread if a session has not built them yet."""
        if rmap.prepared(self.remaining()):
            return True
        self.result.notes.append("the repository map's indexes were still building at the time limit: used "
                                 "only paths and error messages")
        self.result.timed_out = True
        return False

    def _wait_for_lexical(self) -> Lexical | None:
        from swecli.repomap.lexical import latest_lexical, lexical_background

        ready = latest_lexical(self.root)
        if ready is not None:
            return ready
        pending = lexical_background(self.root)
        found = pending.wait(self.remaining())
        if found is None:
            self.result.notes.append("BM25 index not ready in time (building for the next task)"
                                     if not pending.error else f"BM25 index unavailable ({pending.error})")
        return found

    # --- evidence -------------------------------------------------------------------------------

    def add(self, rel: str, evidence: Evidence) -> None:
        candidate = self.candidates.get(rel)
        if candidate is None:
            role = self.rmap.role(rel) if self.rmap is not None and rel in self.rmap.graph.roles else _role(rel)
            candidate = self.candidates[rel] = Candidate(rel, role)
        if any(e.reason == evidence.reason for e in candidate.evidence):
            return
        candidate.evidence.append(evidence)

    def _paths(self, indexed: bool) -> None:
        index: _SuffixIndex | _UnderRoot = (_SuffixIndex(self.rmap.path_suffixes)
                                            if indexed and self.rmap is not None else _UnderRoot(self.root))
        for mention in self.signals.paths[:MAX_PATHS]:
            rel = index.find(mention.raw, allow_bare=mention.kind == "path")
            if rel is None:
                continue
            evidence = _path_evidence(mention, self._function_range(rel, mention))
            bare = "/" not in mention.raw.replace("\\", "/").strip("./")
            if bare and mention.kind == "path" and rel != mention.raw:
                # `a.py` in a bug report is often the reporter's own file: a namesake deep in the tree
                # is a guess, not a reference.
                evidence = Evidence(2.0, "its file name is in the task", evidence.ranges,
                                    explicit=_role(rel) == "source")
            self.add(rel, evidence)

    def _function_range(self, rel: str, mention: PathMention) -> tuple[int, int] | None:
        if mention.start is None:
            return None
        if mention.kind == "frame" and self.rmap is not None:
            enclosing = [s for s in self.rmap.symbols(rel) if s.line <= mention.start <= s.end
                         and s.kind in ("function", "method")]
            if enclosing:
                symbol = max(enclosing, key=lambda s: s.line)
                return (max(symbol.line, mention.start - 25), min(symbol.end, mention.start + 12))
        end = mention.end or mention.start
        return (mention.start - 10, end + 10)

    def _errors(self) -> None:
        for _, message in self.signals.errors[:4]:
            for literal in _literals(message)[:2]:
                if self.expired():
                    return
                hits = _grep(self.root, literal, self.remaining())
                hits = [h for h in hits if _role(h[0]) == "source"]
                if 0 < len({h[0] for h in hits}) <= 3:
                    files = {h[0] for h in hits}
                    for rel, line in hits:
                        self.add(rel, Evidence(2.5 / len(files), f"contains the error message '{literal}'",
                                               ((line - 8, line + 8),)))

    def _modules(self) -> None:
        assert self.rmap is not None
        modules = self.rmap.python_modules
        for name in dict.fromkeys(self.signals.modules):
            rel = modules.get(name)
            if rel is not None and name.count(".") >= 1:
                self.add(rel, Evidence(1.2, f"module `{name}` named in the task"))
        for module, names in self.signals.imported.items():
            package = modules.get(module)
            if package is None:
                continue
            base = package.rsplit("/", 1)[0]
            for name in names:
                if not self.expired():
                    self._definition(name, "import", within=base)

    def _names(self) -> None:
        undefined = []
        for name, source in self.signals.names.items():
            if self.expired():
                return
            if not self._definition(name, source) and source in ("title", "span") and _distinctive(name):
                undefined.append(name)
        for name in undefined[:3]:
            self._mentions_of(name)

    def _mentions_of(self, name: str) -> None:
        """A distinctive name nothing defines (a setting, an option, a key) leads to the files that use it."""
        if self.expired():
            return
        hits = [h for h in _grep(self.root, name, self.remaining()) if _role(h[0]) == "source"]
        files = {rel for rel, _ in hits}
        if 0 < len(files) <= 3:
            for rel, line in hits:
                self.add(rel, Evidence(1.2 / len(files), f"uses `{name}`", ((line - 6, line + 6),)))

    def _definition(self, name: str, source: str, within: str = "") -> bool:
        """Evidence for the files defining `name`; False when nothing in the project defines it."""
        assert self.rmap is not None
        if name in _BUILTIN_NAMES:
            return True  # `str`, `list`, `join`: a project's own `str` is rarely what a task means
        found = [(rel, s) for rel, s in self.rmap.definitions(name)
                 if s.kind not in ("variable",) or not s.parent]
        if within:
            found = [(rel, s) for rel, s in found if rel.startswith(within + "/")]
        if not found:
            return False
        owners = {o for o, member in self.signals.qualified if member == name}
        if owners:
            qualified = [(rel, s) for rel, s in found if s.parent in owners]
            found = qualified or found
        files = {rel for rel, _ in found}
        if len(files) > MAX_DEFINERS:
            return True
        weight = 3.0 * SOURCE_WEIGHT[source] / len(files) ** 0.75  # type: ignore[index]
        if len(name) <= 4:
            weight *= 0.6
        for rel, symbol in found[:8]:
            member = symbol.parent in owners if owners else False
            span = (symbol.line, min(symbol.end, symbol.line + 60))
            label = f"{symbol.parent}.{name}" if member else name
            self.add(rel, Evidence(weight * (1.0 if not symbol.parent or member else 0.6),
                                   f"defines `{label}`", (span,)))
        return True

    def _stems(self) -> None:
        """Files whose name is a word of the title (or of the text), the weight shared among namesakes."""
        assert self.rmap is not None
        title = {w.lower() for w in re.findall(r"[A-Za-z]\w{3,}", self.signals.title)}
        title |= {w.lower() for w in re.findall(r"[A-Za-z][a-z0-9]{3,}", self.signals.title)}  # snake pieces
        body = {w.lower() for w in re.findall(r"[A-Za-z_]\w{3,}", self.signals.text)}
        in_title: dict[str, list[str]] = {}
        in_body: dict[str, list[str]] = {}
        if self.expired():
            return
        for rel in self.rmap.index.facts:
            stem = _stem(rel)
            if len(stem) < 4 or stem in _GENERIC_STEMS:
                continue
            if stem in title or stem.rstrip("s") in title:
                in_title.setdefault(stem, []).append(rel)
            elif stem in body:
                in_body.setdefault(stem, []).append(rel)
        for found, weight, reason in ((in_title, 1.5, "its name is in the title"),
                                      (in_body, 0.4, "its name is in the task")):
            for files in found.values():
                for rel in files:
                    self.add(rel, Evidence(weight / len(files) ** 0.75, reason))

    def _bm25(self, given: Lexical | None) -> None:
        from swecli.repomap.lexical import terms

        lexical = given or self._wait_for_lexical()
        if lexical is None or self.expired():
            return
        query = terms(self.signals.title) * 2 + terms(self.signals.text)
        scores = lexical.scores(query)
        ranked = sorted(scores.items(), key=lambda kv: -kv[1])[:10]
        if not ranked:
            return
        top = ranked[0][1]
        for position, (rel, value) in enumerate(ranked, start=1):
            self.add(rel, Evidence(1.2 * value / top / math.sqrt(position), f"lexical match (BM25 #{position})",
                                   supporting=True))

    def _neighbours(self) -> None:
        """Files next to a strong hit in the dependency graph, each with the edge as it runs: an import
        (`imports x.py`, `imported by x.py`) or a name used (`uses names from x.py`). A name a test,
        doc or example defines that another file happens to call is a coincidence, not an edge."""
        assert self.rmap is not None
        strong = [c for c in self.candidates.values() if c.score >= ATTACH_SCORE]
        for candidate in sorted(strong, key=lambda c: -c.score)[:3]:
            imports, users = self.rmap.neighbours(candidate.rel)
            base = candidate.rel.rsplit("/", 1)[-1]
            weight = 0.3 * min(candidate.score, 5.0)
            imported = self.rmap.import_targets(candidate.rel)
            for rel in imports[:8]:  # candidate -> rel
                if rel in self.candidates:
                    reason = self._edge_reason(candidate.rel, rel, imported, f"imported by {base}",
                                               f"defines names {base} uses")
                    if reason:
                        self.add(rel, Evidence(weight, reason, supporting=True))
            for rel in users[:8]:  # rel -> candidate
                if rel in self.candidates:
                    reason = self._edge_reason(rel, candidate.rel, self.rmap.import_targets(rel), f"imports {base}",
                                               f"uses names from {base}")
                    if reason:
                        self.add(rel, Evidence(weight, reason, supporting=True))

    def _edge_reason(self, user: str, used: str, imported: set[str], by_import: str, by_name: str) -> str:
        """The reason for the edge `user` -> `used`; empty for a coincidental one (see `_neighbours`)."""
        assert self.rmap is not None
        if used in imported:
            return by_import
        if self.rmap.role(used) in ("test", "docs", "example") and self.rmap.role(user) != self.rmap.role(used):
            return ""
        return by_name

    # --- deciding and rendering ---------------------------------------------------------------

    def ranked(self) -> list[Candidate]:
        return sorted(self.candidates.values(), key=lambda c: (-c.score, c.rel))

    def _decide(self, budget: int) -> None:
        ranked = [c for c in self.ranked() if c.rel not in self.result.attached_paths]
        self.result.ranking = [(c.rel, round(c.score, 2), c.why) for c in ranked[:10]]
        if not ranked:
            return
        best = ranked[0].score
        chosen = [c for c in ranked if c.score >= max(ATTACH_SCORE, ATTACH_RATIO * best) and c.attachable]
        chosen = chosen[:MAX_ATTACHED]
        left = budget
        for i, candidate in enumerate(chosen):
            share = left // (len(chosen) - i)
            attachment = self._excerpt(candidate, share)
            if attachment is None:
                continue
            self.result.attachments.append(attachment)
            left -= attachment.tokens
        attached = set(self.result.attached_paths)
        listed = [c for c in ranked if c.rel not in attached and c.score >= LIST_SCORE][:MAX_LISTED]
        self.result.listed = [(c.rel, c.why) for c in listed]

    def _excerpt(self, candidate: Candidate, share: int) -> Attachment | None:
        from swecli.retrieval.attach import AttachError, read

        try:
            file = read(self.root, self.root / candidate.rel)
        except AttachError as exc:
            self.result.notes.append(str(exc))
            return None
        ranges = [r for e in candidate.evidence for r in e.ranges]
        if not ranges:
            ranges = [(1, 40)]
        outline = self._outline(candidate.rel)
        scale = 1.0
        while True:
            text = self._render(file, ranges, scale, candidate.why, outline)
            tokens = self.count(text)
            if tokens <= share or scale < 0.1:
                break
            scale /= 2
        if tokens > share:
            return None
        return Attachment("excerpt", candidate.rel, text, tokens, candidate.why, lines=file.line_count)

    def _render(self, file: FileText, ranges: list[tuple[int, int]], scale: float, why: str,
                outline: str) -> str:
        from swecli.retrieval.attach import render_ranges

        shrunk = [_shrink(r, scale) for r in ranges]
        body = render_ranges(file, shrunk, why)
        if outline and scale >= 0.5:
            head, rest = body.split("\n", 1)
            body = f"{head}\n{outline}\n{rest}"
        return body

    def _outline(self, rel: str) -> str:
        if self.rmap is None:
            return ""
        lines = self.rmap.outline(rel)
        return "  defines: " + " · ".join(lines[:12]) if lines else ""


# --- helpers ---------------------------------------------------------------------------------------


def _path_evidence(mention: PathMention, span: tuple[int, int] | None) -> Evidence:
    ranges = (span,) if span else ()
    if mention.kind == "frame":
        weight = 3.5 if mention.innermost else 2.5
        where = f"line {mention.start}" + (f", in {mention.function}" if mention.function else "")
        return Evidence(weight, f"named in the traceback ({where})", ranges, explicit=True)
    return Evidence(4.0, "named in the task", ranges, explicit=True)


def _distinctive(name: str) -> bool:
    """Long and compound (`autodoc_typehints`, `maxLineLength`): unlikely to occur by chance."""
    return len(name) >= 8 and ("_" in name.strip("_") or (not name.isupper() and not name.islower()))


def _stem(rel: str) -> str:
    """`pkg/viewcode.py` -> `viewcode`; a package's `__init__.py` (or `index.ts`, `mod.rs`) -> `pkg`."""
    parts = rel.split("/")
    stem = parts[-1].rsplit(".", 1)[0].lower()
    if stem in ("__init__", "index", "mod") and len(parts) > 1:
        return parts[-2].lower()
    return stem


def _shrink(span: tuple[int, int], scale: float) -> tuple[int, int]:
    first, last = span
    if scale >= 1.0:
        return span
    return first, first + max(2, int((last - first) * scale))


_ROLE_PATTERNS = (
    ("test", regex(r"(^|/)(tests?|testing|__tests__)/|(^|/)test_[^/]*$|_test\.\w+$|(^|/)conftest\.py$")),
    ("docs", regex(r"(^|/)(docs?|doc_src)/")),
    ("example", regex(r"(^|/)(examples?|bench|benchmarks?)/")),
)


def _role(rel: str) -> str:
    return next((role for role, pattern in _ROLE_PATTERNS if pattern.search(rel)), "source")


class _UnderRoot:
    """Without the map's indexes: a written path is tried as it is, then by each shorter tail, under the root
    (a stat per try, where listing the project could take longer than the time limit)."""

    def __init__(self, root: Path) -> None:
        from swecli.tools.walk import IgnoreRules

        self.root = root
        self.rules = IgnoreRules(root)

    def find(self, raw: str, allow_bare: bool) -> str | None:
        from swecli.retrieval.attach import AttachError, resolve

        parts = _path_parts(raw)
        for k in range(len(parts)):
            if len(parts) - k == 1 and not allow_bare:
                return None
            rel = "/".join(parts[k:])
            try:
                resolve(self.root, rel, self.rules)
            except AttachError:
                continue
            return rel
        return None


def _path_parts(raw: str) -> list[str]:
    text = re.sub(r"^(?:\./)+", "", raw.replace("\\", "/").strip().lstrip("@"))
    return [p for p in text.split("/") if p not in ("", ".", "..")]


class _SuffixIndex:
    """Files by every trailing part of their path: `/home/e/site-packages/sympy/core/mul.py` finds
    `sympy/core/mul.py`."""

    def __init__(self, by_suffix: dict[str, list[str]]) -> None:
        self.by_suffix = by_suffix

    def find(self, raw: str, allow_bare: bool) -> str | None:
        parts = _path_parts(raw)
        written = "/".join(parts)
        if written in self.by_suffix.get(written, ()):
            return written  # a file at the path as written, even when others end the same way
        for k in range(len(parts)):
            suffix = "/".join(parts[k:])
            hits = self.by_suffix.get(suffix, [])
            if len(parts) - k == 1 and not allow_bare:
                return None
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1:
                return None
        return None


def _literals(message: str) -> list[str]:
    """The fixed words of an error message: runs of plain words between quoted or computed values."""
    pieces = re.split(r"\"[^\"]*\"|'[^']*'|\S*[0-9()\[\]{}*=<>/\\]\S*", message)
    chunks = [" ".join(p.split()).strip(" ,.:;") for p in pieces]
    good = [c for c in chunks if len(c) >= 12 and len(c.split()) >= 3]
    return sorted(good, key=len, reverse=True)


_SOURCE_GLOB = "*.{py,pyx,js,ts,tsx,go,rs,java,c,h,cc,cpp,hpp,rb,ex}"
_HITS_PER_FILE = 3
_MAX_HITS = 50


def _grep(root: Path, literal: str, seconds: float) -> list[tuple[str, int]]:
    """(path, line) of source lines containing `literal`, at most a few per file, within `seconds`.

    Runs the grep tool's search, so it works as the tool does: ripgrep when installed, the Python engine
    otherwise, over the same files (the project's ignore rules)."""
    from swecli.llm.base import CancelToken
    from swecli.tools.base import ToolContext, ToolError
    from swecli.tools.grep import GrepArgs, search

    if seconds <= 0:
        return []
    cancel = CancelToken()
    timer = threading.Timer(seconds, cancel.cancel)
    timer.daemon = True
    timer.start()
    try:
        matches = search(GrepArgs(pattern=re.escape(literal), glob=_SOURCE_GLOB), ToolContext(root, cancel))
    except (ToolError, OSError):
        return []
    finally:
        timer.cancel()
    matches.listing.discard()
    hits: list[tuple[str, int]] = []
    per_file: dict[str, int] = {}
    for hit in matches.hits:
        per_file[hit.path] = per_file.get(hit.path, 0) + 1
        if per_file[hit.path] <= _HITS_PER_FILE:
            hits.append((hit.path, hit.line))
    return hits[:_MAX_HITS]
