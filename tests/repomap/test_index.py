from __future__ import annotations

import json
import os
from pathlib import Path

from swecli.repomap.index import PARALLEL_FROM, cache_path, load_index
from tests.repomap.conftest import write


def test_second_run_reparses_only_changed_files(pyproject: Path) -> None:
    first = load_index(pyproject)
    assert first.parsed == len(first.facts) == 5 and "docs/guide.md" in first.stats
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
    payload["files"]["src/shop/money.py"][5] = 42  # a field of the wrong type: trust none of it
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
