"""Package surfaces (`swecli.lazy.exports`): each package's `__init__` maps its modules and re-exports what
other packages may use, and importing a package imports none of its modules."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import swecli

PACKAGES = ["context", "llm", "tools", "retrieval", "repomap", "models"]


def _init(package: str) -> Path:
    return Path(swecli.__file__).parent / package / "__init__.py"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_resolves_to_its_module(package: str) -> None:
    module = importlib.import_module(f"swecli.{package}")
    for name in module.__all__:
        value = getattr(module, name)
        assert getattr(importlib.import_module(f"swecli.{package}.{module._EXPORTS[name]}"), name) is value
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        module.nothing_here  # noqa: B018


@pytest.mark.parametrize("package", PACKAGES)
def test_the_map_names_every_module(package: str) -> None:
    doc = ast.get_docstring(ast.parse(_init(package).read_text(encoding="utf-8"))) or ""
    modules = [p.name for p in _init(package).parent.glob("*.py") if p.name != "__init__.py"]
    assert [m for m in modules if f"    {m} " not in doc] == []


@pytest.mark.parametrize("package", PACKAGES)
def test_the_typed_imports_match_the_exports(package: str) -> None:
    tree = ast.parse(_init(package).read_text(encoding="utf-8"))
    typed = {alias.name: node.module.rsplit(".", 1)[1] for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(f"swecli.{package}.")
             for alias in node.names}
    assert typed == importlib.import_module(f"swecli.{package}")._EXPORTS


def test_importing_the_packages_imports_none_of_their_modules() -> None:
    code = ("import sys; import " + ", ".join(f"swecli.{p}" for p in PACKAGES) +
            "; print(sorted(m for m in sys.modules if m.startswith(('swecli.context.', 'swecli.llm.', "
            "'swecli.tools.', 'swecli.retrieval.', 'swecli.repomap.', 'swecli.models.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_exported_name_is_also_a_module_name(package: str) -> None:
    """Importing `swecli.tools.walk` sets the package's `walk` to the module, hiding a function of that name."""
    modules = {p.stem for p in _init(package).parent.glob("*.py")}
    assert modules & set(importlib.import_module(f"swecli.{package}").__all__) == set()


def test_compile_patterns_compiles_a_modules_lazy_patterns_once() -> None:
    import types

    from swecli.lazy import compile_patterns, regex

    module = types.ModuleType("patterns_here")
    module.WORD = regex(r"\bword_(\d+)\b")  # type: ignore[attr-defined]
    module.OTHER = "not a pattern"  # type: ignore[attr-defined]
    assert "search" not in vars(module.WORD)
    assert compile_patterns(module) == 1 and "search" in vars(module.WORD)
    assert compile_patterns(module) == 0  # compiled already
    assert module.WORD.search("a word_12 here").group(1) == "12"


def test_the_repls_commands_load_no_markdown_renderer() -> None:
    """`/notes` draws markdown and `/init` a diff; building the REPL's registry at start must not import
    rich.markdown (markdown-it) or pygments for them: ~120 M instructions on every REPL start before. Nor
    rich.table (`/help`, `/context`, the running turn's spinner), which the prompt does not need either."""
    code = ("import sys; from rich.console import Console; from swecli.ui.commands import default_registry; "
            "from swecli.ui.render import Renderer; default_registry(); Renderer(Console()); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('markdown_it', 'pygments') "
            "or m in ('rich.markdown', 'rich.syntax', 'rich.table', 'rich.spinner')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_fresh_small_project_is_mapped_and_indexed_without_numpy_bm25s_or_pathspec(tmp_path: Path) -> None:
    """Every e2e test's project, and a user's first run in a new one: the map's thread ranked and indexed
    two files with numpy and bm25s (~260 M instructions) and read `git init`'s comment-only
    `.git/info/exclude` with pathspec (~40 M). Neither is needed for a small project."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "greet.py").write_text("def greet(name):\n    return 'Hello, ' + name\n")
    (tmp_path / "src" / "mod0.py").write_text("from greet import greet\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    assert (tmp_path / ".git" / "info" / "exclude").read_text().startswith("#")
    code = ("import sys; from pathlib import Path; from swecli.repomap.lexical import Lexical, terms; "
            "from swecli.repomap.repomap import RepoMap; rmap = RepoMap.build(Path(sys.argv[1])); "
            "scores = Lexical.build(rmap).scores(terms('greet')); assert rmap.ranked() and scores, scores; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'bm25s', 'pathspec')))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_pattern_that_needs_a_literal_answers_without_it_uncompiled() -> None:
    """`regex(..., needs=...)`: a string without the literal gets re's own no-match answer from every method,
    and the pattern stays uncompiled (a short task pays nothing for the traceback and code-fence patterns);
    a string with it compiles the pattern and gets re's answer."""
    import re

    from swecli.lazy import regex

    plain = re.compile(r"(\w+)\(")
    call = regex(r"(\w+)\(", needs="(")
    text = "no call in here"
    assert call.search(text) is None and call.match(text) is None and call.fullmatch(text) is None
    assert call.findall(text) == [] and list(call.finditer(text)) == []
    assert call.sub("X", text) == plain.sub("X", text) and call.subn(lambda m: "X", string=text) == (text, 0)
    assert call.split(text) == plain.split(text) == [text]
    assert "pattern" not in vars(call)  # nothing compiled
    assert call.findall("f(x) + g(y)") == ["f", "g"] and "pattern" in vars(call)
    prompt = regex(r"^>>> (.*)$", re.MULTILINE, needs=(">>>", "In ["))
    assert prompt.findall("a\n>>> x = 1\n") == ["x = 1"] and prompt.findall("In [") == []


def test_a_needed_literal_with_letters_is_refused_under_ignorecase() -> None:
    import re

    from swecli.lazy import regex

    with pytest.raises(ValueError, match="IGNORECASE"):
        regex(r"file://\S+", re.IGNORECASE, needs="file")
    assert regex(r"\w+://\S+", re.IGNORECASE, needs="://").search("See HTTPS://x.org") is not None
