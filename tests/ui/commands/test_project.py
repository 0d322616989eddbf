"""`/repomap` on an in-process REPL: what the command shows (a REPL in a terminal is test_repl.py's)."""

from __future__ import annotations

from pathlib import Path

from swecli.testing.server import ScriptedLLM
from tests.ui.commands.test_registry import llm, make_repl, output

__all__ = ["llm"]  # the fixture


def test_repomap_command_shows_the_map_and_a_files_neighbours(project: Path, llm: ScriptedLLM) -> None:
    (project / "shop").mkdir()
    (project / "shop" / "money.py").write_text("class Money:\n    def add(self, other):\n        return self\n")
    (project / "shop" / "cart.py").write_text("from shop.money import Money\n\n\nclass Cart:\n    pass\n")
    repl = make_repl(project, llm)
    try:
        shown = []
        for line in ("/repomap", "/repomap symbols", "/repomap deps cart.py", "/repomap deps nothing.py",
                     "/repomap sideways"):
            before = len(output(repl))
            repl.submit(line)
            shown.append(output(repl)[before:])
    finally:
        repl.close()
    table, symbols, deps, unknown, usage = shown
    assert table.index("shop/money.py") < table.index("files mapped")
    assert "class Money:1 (add)" in symbols
    assert deps.index("imports (1):") < deps.index("shop/money.py")
    assert "nothing.py is not a file of this project's map" in unknown
    assert usage.strip() == "Usage: /repomap [symbols|deps FILE]"
    assert not llm.requests  # the map is the project's, not the model's
