from __future__ import annotations

import json
import re
from typing import Any

import pytest

import swecli.retrieval.signals as signals
from swecli.lazy import regex
from swecli.retrieval.signals import extract, mentioned_paths
from swecli.testing.shared import TRAJECTORIES, trajectory_paths

REPORT = '''Wrong result from `parse_amount` in shop.money
Calling it on "1,5" gives 15:

```python
>>> from shop.money import parse_amount, Money
>>> parse_amount("1,5")
```

Traceback (most recent call last):
  File "/home/me/venv/lib/python3.11/site-packages/shop/cart.py", line 12, in total
    return parse_amount(text)
  File "/home/me/venv/lib/python3.11/site-packages/shop/money.py", line 40, in parse_amount
    raise ValueError(f"bad amount {text!r}: expected a decimal number")
ValueError: bad amount '1,5': expected a decimal number

See src/shop/money.py:40-44 and @docs/guide.md. Money.add looks fine. https://example.com/a/b.py
'''


def test_every_signal_of_a_bug_report() -> None:
    s = extract(REPORT)
    assert s.title == "Wrong result from `parse_amount` in shop.money"
    assert s.mentions == ["docs/guide.md"]
    frames = [p for p in s.paths if p.kind == "frame"]
    assert [(p.raw.rsplit("/", 2)[-2:], p.start, p.function, p.innermost) for p in frames] == [
        (["shop", "cart.py"], 12, "total", False), (["shop", "money.py"], 40, "parse_amount", True)]
    written = [(p.raw, p.start, p.end) for p in s.paths if p.kind == "path"]
    assert ("src/shop/money.py", 40, 44) in written and not any("example.com" in p for p, _, _ in written)
    assert s.errors == [("ValueError", "bad amount '1,5': expected a decimal number")]
    assert "shop.money" in s.modules and s.imported["shop.money"] == ["parse_amount", "Money"]
    assert s.names["parse_amount"] == "title" and s.names["Money"] == "import"
    assert ("Money", "add") in s.qualified


def test_names_keep_their_strongest_source() -> None:
    s = extract("Slow startup\nThe `load_config` call is slow; load_config() is called by run_app()")
    assert s.names["load_config"] == "span" and s.names["run_app"] == "prose"
    assert "Slow" not in s.names


def test_pytest_frames_and_mentions() -> None:
    s = extract("tests/test_a.py:33: in test_x\n    f()\nsrc/a.py:10: ValueError\n@a.py, @b.py. me@example.com")
    assert [(p.raw, p.start, p.function) for p in s.paths if p.kind == "frame"] == [
        ("tests/test_a.py", 33, "test_x"), ("src/a.py", 10, "")]
    assert mentioned_paths("look at @src/app.py, and @README.md. mail me@example.com @src/app.py") == \
        ["src/app.py", "README.md"]


def _tasks() -> list[str]:
    """The real tasks (each trajectory's first user message), a short one, this file's report and a console
    session (each of a prompt line's needed literals)."""
    session = "In [1]: import shop\nIn [2]: shop.total(\n   ...:     [1])\n>>> for x in y:\n...     print(x)\n"
    tasks = ["fix the greeting typo in greet", "add a --verbose flag", REPORT, session]
    for path in trajectory_paths():
        tasks.append(str(json.loads(path.read_text())["messages"][1]["content"]))
    return tasks


@pytest.mark.skipif(not TRAJECTORIES.is_dir(), reason="../shared/trajectories not present")
def test_each_patterns_needed_literal_is_in_every_match() -> None:
    """A pattern given `needs` answers "no match" for a text without it: it must never have matched one. On
    the real tasks, each with each needed literal taken out in turn, every method answers what re answers."""
    guarded = {name: value for name, value in vars(signals).items() if getattr(value, "_needs", ())}
    assert len(guarded) >= 15
    for name, value in guarded.items():
        pattern, flags = value._source
        compiled = re.compile(pattern, flags)
        for task in _tasks():
            stripped = task
            for literal in value._needs:
                stripped = stripped.replace(literal, "")
            assert compiled.search(stripped) is None, name  # none of them: no match
            for text in [task, stripped, *(task.replace(literal, "") for literal in value._needs)]:
                fresh: Any = regex(pattern, flags, needs=value._needs)  # uncompiled: its guard answers
                assert fresh.findall(text) == compiled.findall(text), name
                assert fresh.sub(" ", text) == compiled.sub(" ", text), name
                assert (fresh.search(text) is None) == (compiled.search(text) is None), name
