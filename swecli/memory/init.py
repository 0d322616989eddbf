"""`/init` and `swecli init`: have the model write OPENCLI.md from the template and a project scan.

    request = prepare_init_request(root)            # template + scan (+ the existing OPENCLI.md)
    answer = <run request through the provider>     # one response, no tools
    result = prepare_init_result(root, answer)
    if result.existing is None: result.write()      # created
    elif result.changed: show result.diff, ask, then result.write()
    else: nothing to do

An existing OPENCLI.md is never overwritten without the person seeing the diff: the model is asked to
update it (keeping human edits), and the caller decides whether to write the result. An answer that
does not have the template's sections (a model that answered `OK.`) is refused with InitError, so it
never replaces a real file.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from swecli.errors import SwecliError
from swecli.llm.base import ModelRequest
from swecli.memory.notes import write_atomically
from swecli.memory.opencli import project_text
from swecli.memory.scan import ScanLimits, render_scan, scan_project
from swecli.messages import SystemBlock, UserMessage
from swecli.records import datarecord

TEMPLATE_FILE = "OPENCLI.md.template"
OUTPUT_FILE = "OPENCLI.md"
MAP_WAIT_SECONDS = 30.0
"""How long /init waits for a cold repository map (a 10k-file project takes a few seconds)."""
INIT_MAX_TOKENS = 8_192
"""Output tokens for the answer: the file targets 2-3k, and reasoning models think before writing."""

INIT_SYSTEM = """You write OPENCLI.md, the memory file a coding agent loads at the start of every session \
in this repository. A later session will rely on it without re-reading the codebase, so every statement \
must be true of the repository as the scan shows it.

Rules:
- Fill the template: keep its section headings and order; replace each "swecli:" guidance comment with \
content and remove the comments.
- Target 2,000-3,000 tokens in total. Prefer specific facts (paths, commands, names) over prose.
- Write locations as `path` or `path:line`, copied from the scan; never invent a path, command or dependency. \
Where the scan does not tell, write "unknown" (or leave a short TODO) instead of guessing.
- Answer with the complete file content only: Markdown, no code fence around it, no commentary before or after."""

UPDATE_RULES = """An OPENCLI.md already exists (below). Update it instead of starting over:
- keep everything a person wrote that is still true, in their wording, including extra sections and notes;
- correct what the scan shows to be out of date, and fill sections that are missing or empty;
- do not drop a human-written section; if something looks obsolete but you cannot tell, keep it."""

_GUIDANCE_COMMENT = re.compile(r"[ \t]*<!--\s*swecli:.*?-->[ \t]*\n?", re.DOTALL)
_THINK_BLOCK = re.compile(r"<think>.*?</think>\s*", re.DOTALL)
_FENCE_OPEN = re.compile(r"^```[ \t]*(?:markdown|md)?[ \t]*$", re.IGNORECASE)


class InitError(SwecliError):
    """/init cannot go on (no template, an empty answer); `str()` says why and what to do."""


def template_candidates(root: Path) -> list[Path]:
    """Where the template is looked for: the project's own (to customize /init), then swecli's copy."""
    import swecli

    package = Path(swecli.__file__).resolve().parent
    return [root / TEMPLATE_FILE, package / "templates" / TEMPLATE_FILE, package.parent / TEMPLATE_FILE]


def load_template(root: Path) -> str:
    project, *packaged = template_candidates(root)
    text = project_text(root, project)
    if text is not None:
        return text
    for path in packaged:
        if path.is_file():
            return path.read_text(encoding="utf-8")
    looked = ", ".join(str(p) for p in template_candidates(root))
    raise InitError(f"cannot find {TEMPLATE_FILE} (looked in {looked}); reinstall swecli or put one in the project.")


def read_existing(root: Path) -> str | None:
    return project_text(root, root / OUTPUT_FILE)


def init_prompt(root: Path, template_text: str, scan_text: str, existing: str | None) -> str:
    """The user message of the /init request (usable on its own to run /init through the agent loop)."""
    parts = [
        f"Write {OUTPUT_FILE} for the project `{root.resolve().name}` by filling the template below with "
        "facts from the project scan.",
        f"<template>\n{template_text.strip()}\n</template>",
        f"<scan>\n{scan_text.strip()}\n</scan>",
    ]
    if existing is not None:
        parts += [UPDATE_RULES, f'<existing path="{OUTPUT_FILE}">\n{existing.strip()}\n</existing>']
    parts.append(f"Answer with the complete content of {OUTPUT_FILE} only.")
    return "\n\n".join(parts)


def build_init_request(root: Path, template_text: str, scan_text: str, existing: str | None,
                       max_tokens: int = INIT_MAX_TOKENS) -> ModelRequest:
    return ModelRequest(
        system=(SystemBlock(text=INIT_SYSTEM),),
        messages=(UserMessage(content=init_prompt(root, template_text, scan_text, existing), kind="context"),),
        tools=(),
        max_tokens=max_tokens,
    )


def prepare_init_request(root: Path, limits: ScanLimits | None = None,
                         max_tokens: int = INIT_MAX_TOKENS) -> ModelRequest:
    """Template + bounded scan + the repository map's central files + existing OPENCLI.md, as one request."""
    scan_text = render_scan(scan_project(root, limits), limits) + map_section(root)
    return build_init_request(root, load_template(root), scan_text, read_existing(root), max_tokens)


def map_section(root: Path, wait: float = MAP_WAIT_SECONDS) -> str:
    """Entry points and the most central files with their definitions ("" if the map is not ready in time)."""
    from swecli.repomap.repomap import background
    from swecli.repomap.views import init_section

    rmap = background(root).wait(wait)
    return "\n" + init_section(rmap) + "\n" if rmap is not None and rmap.graph.ranks else ""


def render_result(answer_text: str) -> str:
    """The file content from the model's answer: no think block, no fence around it, no preface
    before the title, no leftover template guidance comments, one trailing newline."""
    text = _THINK_BLOCK.sub("", answer_text).strip()
    lines = text.splitlines()
    opening = next((i for i, line in enumerate(lines) if _FENCE_OPEN.match(line.strip())), None)
    # A fence wraps the whole file when it opens before any heading and the answer ends by closing it.
    if opening is not None and lines[-1].strip() == "```" and not any(
            line.startswith("#") for line in lines[:opening]):
        text = "\n".join(lines[opening + 1: -1])
    text = _drop_preface(_GUIDANCE_COMMENT.sub("", text))
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    if not text:
        raise InitError(f"the model's answer had no content for {OUTPUT_FILE}; nothing was written (try /init again).")
    return text + "\n"


def _drop_preface(text: str) -> str:
    """Drop a short chatty preface ("Here is the file:") before the title heading."""
    lines = text.strip().splitlines()
    title = next((i for i, line in enumerate(lines[:5]) if line.startswith("# ")), None)
    return "\n".join(lines[title:]) if title else text


def diff_for_update(old: str, new: str, path: str = OUTPUT_FILE) -> str:
    """A unified diff from the current file to the proposed one ("" when they are the same)."""
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=f"a/{path}", tofile=f"b/{path}")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@datarecord(frozen=True)
class InitResult:
    path: Path
    text: str
    """The proposed OPENCLI.md."""
    existing: str | None
    """The current file, or None when /init creates it."""

    @property
    def changed(self) -> bool:
        return self.existing != self.text

    @property
    def diff(self) -> str:
        return diff_for_update(self.existing or "", self.text)

    def write(self) -> Path:
        """Write the proposed file (atomically). For an update, call it only once the diff is approved."""
        write_atomically(self.path, self.text)
        return self.path


def prepare_init_result(root: Path, answer_text: str) -> InitResult:
    """The proposed file; InitError when the answer is not an OPENCLI.md (see `check_sections`)."""
    text, existing = render_result(answer_text), read_existing(root)
    check_sections(text, load_template(root), existing)
    return InitResult(root / OUTPUT_FILE, text, existing)


def section_headings(text: str) -> list[str]:
    """The `## ` headings of a Markdown text (outside code fences), as written."""
    headings: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not in_fence and line.startswith("## "):
            headings.append(line[3:].strip())
    return headings


def check_sections(text: str, template: str, existing: str | None) -> None:
    """Raise InitError unless `text` has the template's sections (those the existing file has, when it
    is an update of a file a person shaped differently); one section in four may be missing or renamed."""
    required = section_headings(template)
    if existing is not None:
        kept = {_normalize(h) for h in section_headings(existing)}
        required = [h for h in required if _normalize(h) in kept]
    present = {_normalize(h) for h in section_headings(text)}
    missing = [h for h in required if _normalize(h) not in present]
    if len(missing) > len(required) // 4:
        outcome = f"kept the existing {OUTPUT_FILE}" if existing is not None else "nothing was written"
        raise InitError(f"the model's answer does not look like {OUTPUT_FILE}: it lacks the sections "
                        f"{', '.join(missing)} ({_first_words(text)}); {outcome} (try /init again).")


def _normalize(heading: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", heading.lower()).split())


def _first_words(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return f"it begins {flat[:limit]!r}" if len(flat) > limit else f"it is {flat!r}"
