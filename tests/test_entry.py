"""`swecli.entry`: the dataclass code kept between runs (`keep_dataclass_code`) gives classes that behave
exactly as compiled ones, is read back without compiling, and survives a damaged file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CLASSES = r"""
import json, sys
if sys.argv[1] != "-":
    from swecli.entry import keep_dataclass_code
    keep_dataclass_code(sys.argv[1])
from dataclasses import FrozenInstanceError, dataclass, field

@dataclass(frozen=True)
class Point:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()

@dataclass(order=True)
class Job:
    priority: int
    names: list[str] = field(default_factory=list)

p, job = Point(1, 2, ("a",)), Job(3)
job.names.append("n")
try:
    p.x = 5
    frozen = False
except FrozenInstanceError:
    frozen = True
same = Point(1, 2, ("a",))
print(json.dumps({"repr": [repr(p), repr(job)], "eq": p == same, "hash": hash(p) == hash(same),
                  "order": Job(1) < Job(2), "frozen": frozen, "default": Job(1).names,
                  "init": repr(Point.__init__.__annotations__), "code": Point.__init__.__code__.co_filename}))
"""


def _run(cache: Path | str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", CLASSES, str(cache)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_kept_code_builds_the_same_classes_and_is_read_back_without_compiling(tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "dataclasses.marshal"
    plain = _run("-")
    assert _run(cache) == plain  # first run: compiled, then kept at exit
    kept = cache.read_bytes()
    assert len(kept) > 1000
    assert _run(cache) == plain  # second run: every function came from the file...
    assert cache.read_bytes() == kept  # ...so nothing new was written


def test_a_damaged_file_is_an_empty_cache(tmp_path: Path) -> None:
    cache = tmp_path / "dataclasses.marshal"
    cache.write_bytes(b"\x00not marshal")
    assert _run(cache) == _run("-")
    assert cache.read_bytes() != b"\x00not marshal"  # rewritten with what this run compiled
    second = cache.read_bytes()
    _run(cache)
    assert cache.read_bytes() == second
