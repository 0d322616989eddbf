from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from swecli.repomap.index import PARALLEL_FROM, cache_path, load_index
from tests.repomap.conftest import write


def test_second_run_reparses_only_changed_files(pyproject: Path) -> None:
    first = load_index(pyproject)
    assert first.parsed == len(first.facts) == 5 and "docs/guide.md" in first.files
    assert "docs/guide.md" not in first.stats  # only files with a grammar are stat()ed
    assert cache_path(pyproject).is_file()
    warm = load_index(pyproject)
    assert warm.parsed == 0 and warm.fingerprint == first.fingerprint
    assert [s.name for s in warm.facts["src/shop/money.py"].symbols] == ["Money", "add", "parse_amount"]
    money = pyproject / "src/shop/money.py"
    money.write_text(money.read_text() + "\ndef format_amount(m):\n    return str(m)\n")
    os.utime(money, ns=(money.stat().st_atime_ns, money.stat().st_mtime_ns + 1_000_000))
    write(pyproject, "src/shop/tax.py", "RATE = 0.2\n")
    (pyproject / "src/shop/cli.py").unlink()
    changed = load_index(pyproject)
    assert changed.parsed == 2
    assert "format_amount" in [s.name for s in changed.facts["src/shop/money.py"].symbols]
    assert "src/shop/cli.py" not in changed.facts and "src/shop/tax.py" in changed.facts
    assert changed.fingerprint != warm.fingerprint


def test_a_damaged_cache_is_rebuilt(pyproject: Path) -> None:
    load_index(pyproject)
    cache_path(pyproject).write_text("{not json")
    assert load_index(pyproject).parsed == 5
    payload = json.loads(cache_path(pyproject).read_text())
    payload["source"]["language"][1] = "python"  # a field of the wrong type: trust none of it
    cache_path(pyproject).write_text(json.dumps(payload))
    assert load_index(pyproject).parsed == 5


def test_a_large_cold_run_parses_in_workers_and_reports_progress(project: Path) -> None:
    for i in range(PARALLEL_FROM + 10):
        write(project, f"pkg/m{i}.py", f"from pkg import m{(i + 1) % 50}\n\ndef f{i}():\n    return {i}\n")
    seen: list[tuple[int, int]] = []
    index = load_index(project, progress=lambda done, total: seen.append((done, total)), workers=2)
    assert index.parsed == PARALLEL_FROM + 10
    assert [s.name for s in index.facts["pkg/m7.py"].symbols] == ["f7"]
    # Progress appears only after a second; when it does, it counts up to the total.
    assert all(total == PARALLEL_FROM + 10 and 0 < done <= total for done, total in seen)
    assert seen == sorted(seen)


def test_a_side_file_row_that_does_not_match_is_read_again(pyproject: Path) -> None:
    load_index(pyproject)
    symbols = cache_path(pyproject).with_name("symbols.json")
    payload = json.loads(symbols.read_text())
    payload["files"]["src/shop/money.py"] = [1, 2, "Wrong\tclass\t1\t1\t"]  # not the file's mtime and size
    symbols.write_text(json.dumps(payload))
    warm = load_index(pyproject)
    assert warm.parsed == 0
    assert [s.name for s in warm.facts["src/shop/money.py"].symbols] == ["Money", "add", "parse_amount"]
    symbols.unlink()
    links = cache_path(pyproject).with_name("links.json")
    links.unlink()
    again = load_index(pyproject)
    again.load_links()
    assert again.facts["src/shop/cart.py"].imports == ["shop.money", "shop.money.Money", "shop.money.parse_amount"]
    assert [s.name for s in again.facts["src/shop/cart.py"].symbols] == ["Cart", "total"]


def age(root: Path) -> None:
    """Every file and directory a minute old: past the window in which a snapshot is not trusted."""
    past = time.time_ns() - 60 * 10**9
    for directory, _, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(directory, name), ns=(past, past))
        os.utime(directory, ns=(past, past))


def settled(root: Path) -> None:
    """Age the tree, then run until a run needs no listing (one relisting records the snapshot)."""
    age(root)
    load_index(root)
    assert load_index(root).listed is False


def test_a_warm_run_lists_nothing_until_a_directory_or_an_ignore_file_changes(pyproject: Path) -> None:
    (pyproject / "src/shop/empty").mkdir()
    load_index(pyproject)
    settled(pyproject)
    write(pyproject, "src/shop/empty/new.py", "def fresh():\n    pass\n")  # in a directory with no files
    seen = load_index(pyproject)
    assert seen.listed and seen.parsed == 1 and "src/shop/empty/new.py" in seen.files
    settled(pyproject)
    (pyproject / ".gitignore").write_text("")  # build/ is no longer ignored
    again = load_index(pyproject)
    assert again.listed and "build/lib/shop/money.py" in again.files and again.parsed == 1
    settled(pyproject)
    write(pyproject, "build/lib/shop/money.py", "class Money:\n    cents = 0\n")  # an edit: no listing needed
    edited = load_index(pyproject)
    assert not edited.listed and edited.parsed == 1


def test_workers_that_cannot_start_leave_the_parse_to_this_process(project: Path) -> None:
    # A script piped into `python -` has no main file for spawned workers to import: every worker dies
    # at start, and the build must still finish.
    for i in range(PARALLEL_FROM + 10):
        write(project, f"pkg/m{i}.py", f"def f{i}():\n    return {i}\n")
    script = ("import sys\nfrom pathlib import Path\nfrom swecli.repomap.index import load_index\n"
              "index = load_index(Path(sys.argv[1]), workers=2)\n"
              "print(index.parsed, [s.name for s in index.facts['pkg/m7.py'].symbols])\n")
    done = subprocess.run([sys.executable, "-", str(project)], input=script, capture_output=True, text=True,
                          timeout=300, check=True)
    assert done.stdout.split("\n")[0] == f"{PARALLEL_FROM + 10} ['f7']"
