from __future__ import annotations

from pathlib import Path

import pytest


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def pyproject(project: Path) -> Path:
    """A small Python package with a src layout, a test, a doc page and a gitignored build copy."""
    write(project, ".gitignore", "build/\n")
    write(project, "pyproject.toml", "[project]\nname = 'shop'\n")
    write(project, "src/shop/__init__.py", "from .cart import Cart\n")
    write(project, "src/shop/money.py", "class Money:\n    def add(self, other):\n        return self\n\n"
                                         "def parse_amount(text):\n    return Money()\n")
    write(project, "src/shop/cart.py", "from shop.money import Money, parse_amount\n\n\nclass Cart:\n"
                                        "    def total(self):\n        return parse_amount('0')\n")
    write(project, "src/shop/cli.py", "from . import cart\nfrom .cart import Cart\n\ndef main():\n    Cart()\n")
    write(project, "tests/test_cart.py", "from shop.cart import Cart\n\ndef test_total():\n    Cart().total()\n")
    write(project, "docs/guide.md", "# Guide\n")
    write(project, "build/lib/shop/money.py", "class Money:\n    pass\n")
    return project
