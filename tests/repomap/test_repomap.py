from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from swecli.messages import ToolCall
from swecli.repomap.repomap import RepoMap, background
from swecli.repomap.tool import REPO_MAP
from swecli.tools.base import ToolContext, ToolRegistry
from tests.repomap.conftest import write


def test_json_shape_sorted_by_rank(pyproject: Path) -> None:
    document = RepoMap.build(pyproject).to_json()
    files = document["files"]
    assert list(document) == ["files"]
    assert all(list(f) == ["path", "rank", "symbols", "imports", "imported_by"] for f in files)
    assert [f["rank"] for f in files] == sorted((f["rank"] for f in files), reverse=True)
    money = next(f for f in files if f["path"] == "src/shop/money.py")
    assert money["symbols"][:2] == [{"name": "Money", "kind": "class", "line": 1},
                                    {"name": "add", "kind": "method", "line": 2, "parent": "Money"}]
    assert money["imports"] == [] and money["imported_by"] == ["src/shop/cart.py"]


def test_render_fits_the_budget_and_starts_with_the_top_file(pyproject: Path) -> None:
    rmap = RepoMap.build(pyproject)
    full = rmap.render(10_000)
    assert full.splitlines()[0] == rmap.ranked()[0]
    assert "  class Money:1 (add)" in full and "  def parse_amount:5" in full
    small = rmap.render(40, count=len)
    assert 0 < len(small) <= 40 and full.startswith(small) and len(small.splitlines()) >= 2
    assert rmap.render(10_000, under="tests").splitlines()[0] == "tests/test_cart.py  [test]"


def test_symbol_index_and_neighbours(pyproject: Path) -> None:
    rmap = RepoMap.build(pyproject)
    [(path, symbol)] = rmap.definitions("parse_amount")
    assert (path, symbol.line, symbol.end) == ("src/shop/money.py", 5, 6)
    imports, users = rmap.neighbours("src/shop/cart.py")
    assert imports == ["src/shop/money.py"]
    assert set(users) == {"src/shop/__init__.py", "src/shop/cli.py", "tests/test_cart.py"}


def test_background_build_is_shared_and_restarts_when_stale(pyproject: Path) -> None:
    first = background(pyproject)
    assert background(pyproject) is first
    rmap = first.wait(60)
    assert rmap is not None and "src/shop/cart.py" in rmap.graph.ranks
    assert background(pyproject, max_age=0.0) is not first


def run_tool(root: Path, path: str) -> tuple[str, bool]:
    registry = ToolRegistry([REPO_MAP])
    result = registry.run(ToolCall(id="1", name="repo_map", arguments=json.dumps({"path": path})),
                          ToolContext(root=root))
    return result.content, result.is_error


def test_repo_map_tool_for_a_directory_and_a_file(pyproject: Path) -> None:
    text, error = run_tool(pyproject, ".")
    assert not error and text.startswith("Repository map: ") and "src/shop/money.py" in text
    text, error = run_tool(pyproject, "src/shop/cart.py")
    assert not error and "imports (1):\n  src/shop/money.py" in text and "class Cart:4 (total)" in text
    text, error = run_tool(pyproject, "docs")
    assert not error and text == "No mapped source files under docs/."
    for bad, expected in (("nope.py", "Path not found"), ("docs/guide.md", "not a source file"),
                          ("../elsewhere", "outside the project root")):
        text, error = run_tool(pyproject, bad)
        assert error and expected in text


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "swecli", "repomap", *args], cwd=root, text=True,
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL)


def test_cli_on_its_own_keeps_its_cache_out_of_git_status(pyproject: Path) -> None:
    import shutil

    if shutil.which("git") is None:
        pytest.skip("needs git")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=pyproject, check=True)
    subprocess.run([*git, "add", "-A"], cwd=pyproject, check=True)
    subprocess.run([*git, "commit", "-qm", "start"], cwd=pyproject, check=True)
    assert cli(pyproject).returncode == 0
    assert (pyproject / ".swecli" / "repomap").is_dir()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=pyproject,
                            capture_output=True, text=True, check=True).stdout
    assert status == ""


def cli_here(root: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> subprocess.CompletedProcess[str]:
    """`swecli repomap ARGS` run by typer's test runner in this process: the same command and option parsing
    without a Python start (~0.6 s of CPU each); `cli` keeps the real entry point covered."""
    from typer.testing import CliRunner

    from swecli.cli import app

    monkeypatch.chdir(root)
    result = CliRunner().invoke(app, ["repomap", *args])
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def test_cli_table_json_symbols_and_deps(pyproject: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = cli(pyproject)
    assert table.returncode == 0 and table.stdout.splitlines()[0].split() == ["rank", "used", "by", "path"]
    assert "files mapped" in table.stderr
    document = json.loads(cli_here(pyproject, monkeypatch, "--json").stdout)
    assert {f["path"] for f in document["files"]} >= {"src/shop/money.py", "pyproject.toml"}
    assert "class Money:1 (add)" in cli_here(pyproject, monkeypatch, "--symbols").stdout
    deps = cli_here(pyproject, monkeypatch, "--deps", "cart.py")
    assert deps.returncode == 0 and deps.stdout.startswith("src/shop/cart.py  [source")
    one = json.loads(cli_here(pyproject, monkeypatch, "--deps", "src/shop/cart.py", "--json").stdout)
    assert [f["path"] for f in one["files"]] == ["src/shop/cart.py"]
    missing = cli(pyproject, "--deps", "nope.py")  # a process: an error ends it with a sentence, no traceback
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.startswith("swecli: nope.py is not a file of this project's map")
    write(pyproject, "src/other/cart.py", "")
    ambiguous = cli_here(pyproject, monkeypatch, "--deps", "cart.py")
    assert ambiguous.returncode == 2 and "matches 2 files" in ambiguous.stderr
