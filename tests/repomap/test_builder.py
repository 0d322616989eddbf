"""The builder process: cold builds of the map and its BM25 index, off the session's interpreter."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from swecli.repomap.builder import build_elsewhere, build_lock, lock_path
from swecli.repomap.index import CACHE_DIR, PARALLEL_FROM, TooMuchToParse, cache_path
from swecli.repomap.lexical import Lexical
from swecli.repomap.repomap import RepoMap, background
from tests.repomap.conftest import write


def many_files(root: Path, count: int = PARALLEL_FROM + 20) -> Path:
    for i in range(count):
        write(root, f"pkg/m{i}.py", f"from pkg.m{(i + 1) % count} import f{(i + 1) % count}\n\n"
                                    f"def f{i}():\n    return {i}\n")
    return root


def test_a_session_never_parses_a_cold_project_itself(project: Path) -> None:
    many_files(project)
    with pytest.raises(TooMuchToParse):
        RepoMap.build(project, max_parse=PARALLEL_FROM - 1)
    assert not cache_path(project).exists()  # nothing parsed, nothing written


def test_the_builder_saves_the_map_and_the_bm25_index_for_the_next_run(project: Path) -> None:
    many_files(project)
    assert build_elsewhere(project)
    assert (project / CACHE_DIR / "bm25.json").is_file()
    warm = RepoMap.build(project, max_parse=0)  # nothing left to parse
    assert warm.index.parsed == 0 and len(warm.graph.ranks) == PARALLEL_FROM + 20
    assert warm.definitions("f7")[0][0] == "pkg/m7.py"


def test_a_session_build_of_a_cold_project_goes_through_the_builder(project: Path) -> None:
    many_files(project)
    rmap = background(project).wait(300)
    assert rmap is not None and rmap.definitions("f3")[0][0] == "pkg/m3.py"
    assert (project / CACHE_DIR / "bm25.json").is_file()  # only the builder makes the index with the map


def blocked_on(lock: Path) -> int:
    """How many processes wait for `lock`'s flock, as the kernel lists them (the `->` lines of /proc/locks)."""
    inode = f":{lock.stat().st_ino} "
    with open("/proc/locks", encoding="ascii") as locks:
        return sum(1 for line in locks if "-> FLOCK" in line and inode in line)


def saved_files(root: Path) -> dict[str, tuple[int, int]]:
    """What a build writes when it parses or indexes (index.json alone may be rewritten by a warm run that
    re-lists the files): each file's inode and mtime, which every rewrite changes (they are replaced)."""
    return {name: (stat.st_ino, stat.st_mtime_ns) for name in ("symbols.json", "links.json", "bm25.json")
            for stat in [(root / CACHE_DIR / name).stat()]}


def test_one_builder_at_a_time_the_second_finds_the_work_done(project: Path) -> None:
    many_files(project)
    finished: list[bool] = []
    with build_lock(project):  # the first builder at work: this test, holding the lock
        waiting = threading.Thread(target=lambda: finished.append(build_elsewhere(project)))
        waiting.start()
        deadline = time.monotonic() + 120
        while not blocked_on(lock_path(project)):  # the second builder is a process waiting for the lock
            assert waiting.is_alive() and time.monotonic() < deadline, "the second builder did not wait"
            time.sleep(0.02)
        assert not cache_path(project).exists()
        Lexical.build(RepoMap.build(project, workers=1))  # the first builder's work, done while it waits
        saved = saved_files(project)
    waiting.join(300)
    assert finished == [True] and saved_files(project) == saved  # it parsed and indexed nothing again
    assert RepoMap.build(project, max_parse=0).index.parsed == 0


def test_the_builder_never_imports_code_from_the_project(project: Path) -> None:
    many_files(project)
    marker = project.parent / "imported"
    payload = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for shadow in ("swecli/__init__.py", "swecli/repomap/__init__.py", "tree_sitter.py", "multiprocessing/__init__.py",
                   "json/__init__.py", "bm25s.py", "numpy.py"):
        write(project, shadow, payload)
    assert build_elsewhere(project)
    assert not marker.exists()
    assert RepoMap.build(project, max_parse=0).index.parsed == 0
