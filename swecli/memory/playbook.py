"""The learned playbook (ACE): short strategy bullets that grow from finished tasks.

`.swecli/playbook.json` holds bullets, each with an id made of a section prefix and a counter
(`fil-00042`), the section, the advice, helpful/harmful counters and timestamps. The reflector
(`swecli.memory.reflector`) proposes deltas after each completed task: add a bullet, tag one
helpful or harmful, remove one. Near-duplicates are merged instead of added, so the playbook
grows in knowledge, not in repetition. `as_context` renders the best bullets (helpful minus
harmful) grouped by section within a token budget, for the session-stable memory block.

The file is replaced atomically (write a temporary file, then rename), so a crash never leaves a
half-written playbook; a file that cannot be read is moved aside, never overwritten.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, field
from pathlib import Path
from typing import Any, Literal

from swecli.errors import SwecliError
from swecli.records import datarecord
from swecli.session.private import make_private_dir

PLAYBOOK_FILE = Path(".swecli") / "playbook.json"
FORMAT_VERSION = 1
MAX_CONTENT_CHARS = 400
MAX_BULLETS = 300
"""Beyond this the lowest-scoring, least recently updated bullets are dropped."""

Tag = Literal["helpful", "harmful"]


class PlaybookError(SwecliError):
    """A bad delta or an unusable playbook file; `str()` says what and how to fix it."""


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@datarecord
class Bullet:
    """One lesson of the playbook and how often it helped or hurt."""

    id: str
    section: str
    content: str
    helpful: int = 0
    harmful: int = 0
    created: str = field(default_factory=_now)
    updated: str = field(default_factory=_now)

    @property
    def score(self) -> int:
        return self.helpful - self.harmful


@datarecord(frozen=True)
class Change:
    """What one delta did: `added`, `merged` (into an existing near-duplicate), `tagged`, `removed`."""

    action: Literal["added", "merged", "tagged", "removed"]
    bullet: Bullet
    detail: str = ""


def section_prefix(section: str) -> str:
    """`files` -> `fil`, `test_strategy` -> `tes`: the first three letters, padded with `x`."""
    letters = re.sub(r"[^a-z]", "", section.lower())
    return (letters + "xxx")[:3]


def normalize_section(section: str) -> str:
    name = re.sub(r"[^a-z0-9]+", "_", section.strip().lower()).strip("_")
    if not name:
        raise PlaybookError("a playbook bullet needs a section name (e.g. 'files', 'commands', 'testing').")
    return name[:40]


def similarity(a: str, b: str) -> float:
    """How alike two bullets are: the larger of word-set Jaccard and difflib's character ratio."""
    wa, wb = set(_words(a)), set(_words(b))
    jaccard = len(wa & wb) / len(wa | wb) if wa | wb else 1.0
    ratio = difflib.SequenceMatcher(None, " ".join(_words(a)), " ".join(_words(b))).ratio()
    return max(jaccard, ratio)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_]+(?:[./-][a-z0-9_]+)*", text.lower())  # keeps src/x.py, drops a final "."


class Playbook:
    def __init__(self, path: Path | None = None, merge_threshold: float = 0.8, max_bullets: int = MAX_BULLETS) -> None:
        self.path = path
        self.merge_threshold = merge_threshold
        self.max_bullets = max_bullets
        self.bullets: dict[str, Bullet] = {}
        self.next_id = 1
        self.warnings: list[str] = []

    # --- persistence ------------------------------------------------------------------------

    @classmethod
    def for_project(cls, root: Path, **kwargs: Any) -> Playbook:
        return cls.load(Path(root) / PLAYBOOK_FILE, **kwargs)

    @classmethod
    def load(cls, path: Path, **kwargs: Any) -> Playbook:
        """The playbook at `path` (empty if missing). An unreadable file is renamed to
        `playbook.json.corrupt-<time>` and an empty playbook is returned, with a warning."""
        book = cls(path, **kwargs)
        if not path.exists():
            return book
        try:
            raw = path.read_bytes()
        except OSError as exc:
            # Unreadable is not corrupt: leave the file alone and do not save over it this session.
            book.path = None
            book.warnings.append(f"{path} could not be read ({exc}); the playbook is not used or saved this session.")
            return book
        try:
            book._read(json.loads(raw.decode("utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError, PlaybookError, TypeError, ValueError) as exc:
            book._set_aside(path, exc)
        return book

    def _read(self, data: object) -> None:
        if not isinstance(data, dict) or not isinstance(data.get("bullets"), list):
            raise PlaybookError("expected an object with a 'bullets' list")
        for raw in data["bullets"]:
            bullet = _bullet_from(raw)
            self.bullets[bullet.id] = bullet
        self.next_id = max([int(data.get("next_id", 1)), *(self._counter(b.id) + 1 for b in self.bullets.values())])

    def _set_aside(self, path: Path, exc: Exception) -> None:
        aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        try:
            path.replace(aside)
            where = f"moved to {aside}"
        except OSError:
            where = "left in place"
        self.bullets.clear()
        self.warnings.append(f"{path} could not be read ({exc}); it was {where} and a new playbook was started.")

    @staticmethod
    def _counter(bullet_id: str) -> int:
        tail = bullet_id.rsplit("-", 1)[-1]
        return int(tail) if tail.isdigit() else 0

    def to_json(self) -> str:
        data = {"version": FORMAT_VERSION, "next_id": self.next_id,
                "bullets": [asdict(b) for b in self.bullets.values()]}
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

    def save(self) -> None:
        """Replace the file atomically. Raises PlaybookError if it cannot be written."""
        if self.path is None:
            return
        try:
            make_private_dir(self.path.parent)
            fd, tmp = tempfile.mkstemp(prefix=".playbook-", suffix=".tmp", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    out.write(self.to_json())
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise PlaybookError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    # --- deltas -----------------------------------------------------------------------------

    def add(self, section: str, content: str, helpful: int = 0, harmful: int = 0) -> Change:
        """Add a bullet, or merge it into a near-duplicate (whose helpful count it then raises)."""
        section = normalize_section(section)
        content = " ".join(content.split())
        if not content:
            raise PlaybookError("a playbook bullet needs content.")
        if len(content) > MAX_CONTENT_CHARS:
            raise PlaybookError(f"a playbook bullet must be at most {MAX_CONTENT_CHARS} characters; shorten it.")
        twin = self.find_similar(content)
        if twin is not None:
            twin.helpful += max(helpful, 1)
            twin.harmful += harmful
            twin.updated = _now()
            return Change("merged", twin, f"similar to {twin.id}")
        bullet = Bullet(f"{section_prefix(section)}-{self.next_id:05d}", section, content, helpful, harmful)
        self.next_id += 1
        self.bullets[bullet.id] = bullet
        self._enforce_cap()
        return Change("added", bullet)

    def tag(self, bullet_id: str, tag: str, count: int = 1) -> Change:
        bullet = self.get(bullet_id)
        if tag not in ("helpful", "harmful"):
            raise PlaybookError(f"unknown tag {tag!r}; use 'helpful' or 'harmful'.")
        if tag == "helpful":
            bullet.helpful += count
        else:
            bullet.harmful += count
        bullet.updated = _now()
        return Change("tagged", bullet, tag)

    def remove(self, bullet_id: str) -> Change:
        bullet = self.get(bullet_id)
        del self.bullets[bullet_id]
        return Change("removed", bullet)

    def get(self, bullet_id: str) -> Bullet:
        bullet = self.bullets.get(bullet_id)
        if bullet is None:
            known = ", ".join(list(self.bullets)[:10]) or "none yet"
            raise PlaybookError(f"no playbook bullet {bullet_id!r} (known ids: {known}).")
        return bullet

    def find_similar(self, content: str) -> Bullet | None:
        best, best_score = None, self.merge_threshold
        for bullet in self.bullets.values():
            score = similarity(content, bullet.content)
            if score >= best_score:
                best, best_score = bullet, score
        return best

    def merge_duplicates(self) -> list[Change]:
        """Fold existing near-duplicates together (older id kept, counters summed)."""
        changes: list[Change] = []
        for bullet in list(self.bullets.values()):
            if bullet.id not in self.bullets:
                continue
            for other in list(self.bullets.values()):
                if other.id != bullet.id and similarity(bullet.content, other.content) >= self.merge_threshold:
                    bullet.helpful += other.helpful
                    bullet.harmful += other.harmful
                    bullet.updated = max(bullet.updated, other.updated)
                    del self.bullets[other.id]
                    changes.append(Change("merged", bullet, f"absorbed {other.id}"))
        return changes

    def _enforce_cap(self) -> None:
        if len(self.bullets) <= self.max_bullets:
            return
        ranked = sorted(self.bullets.values(), key=lambda b: (b.score, b.updated))
        for bullet in ranked[: len(self.bullets) - self.max_bullets]:
            del self.bullets[bullet.id]

    # --- rendering --------------------------------------------------------------------------

    def ranked(self) -> list[Bullet]:
        """Best first: helpful minus harmful, then most recently updated, then id (stable sorts)."""
        out = sorted(self.bullets.values(), key=lambda b: b.id)
        out.sort(key=lambda b: b.updated, reverse=True)
        out.sort(key=lambda b: b.score, reverse=True)
        return out

    def as_context(self, budget_tokens: int, count_tokens: Callable[[str], int]) -> str:
        """The best bullets that fit `budget_tokens`, grouped by section; "" when none do.

        Bullets with more harmful than helpful votes are left out: the model should not be
        steered by advice that has been seen to hurt."""
        header = "## Playbook (strategies learned in this project; ids for reference)"
        used = count_tokens(header) + 1
        chosen: list[Bullet] = []
        sections_seen: set[str] = set()
        for bullet in self.ranked():
            if bullet.score < 0:
                continue
            cost = count_tokens(_line(bullet)) + 1
            if bullet.section not in sections_seen:
                cost += count_tokens(f"### {bullet.section}") + 1
            if used + cost > budget_tokens:
                continue  # a shorter, lower-ranked bullet may still fit
            used += cost
            sections_seen.add(bullet.section)
            chosen.append(bullet)
        if not chosen:
            return ""
        return header + "\n" + _grouped(chosen, _line)


def _bullet_from(raw: object) -> Bullet:
    if not isinstance(raw, dict):
        raise PlaybookError("every bullet must be an object")
    for key in ("id", "section", "content"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise PlaybookError(f"bullet field {key!r} must be a non-empty string")
    for key in ("helpful", "harmful"):
        if not isinstance(raw.get(key, 0), int):
            raise PlaybookError(f"bullet field {key!r} must be an integer")
    stamps = {k: str(raw[k]) for k in ("created", "updated") if k in raw}
    return Bullet(raw["id"], raw["section"], raw["content"], raw.get("helpful", 0), raw.get("harmful", 0), **stamps)


def _line(bullet: Bullet) -> str:
    return f"- [{bullet.id}] {bullet.content}"


def _grouped(bullets: Iterable[Bullet], line: Callable[[Bullet], str], heading: str = "### ") -> str:
    """Sections in the order their best bullet ranks; bullets keep their rank inside a section."""
    groups: dict[str, list[str]] = {}
    for bullet in bullets:
        groups.setdefault(bullet.section, []).append(line(bullet))
    return "\n".join(heading + section + "\n" + "\n".join(lines) for section, lines in groups.items())


def format_playbook(pb: Playbook) -> str:
    """The `/playbook` listing: every bullet with its counters, grouped by section."""
    where = f" ({pb.path})" if pb.path is not None else ""
    if not pb.bullets:
        return f"No playbook bullets yet{where}. They are learned after completed tasks."
    total = len(pb.bullets)
    head = f"Playbook{where}: {total} bullet{'s' if total != 1 else ''}, best first"

    def line(b: Bullet) -> str:
        return f"  {b.id}  +{b.helpful}/-{b.harmful}  {b.content}"

    return head + "\n" + _grouped(pb.ranked(), line, heading="")
