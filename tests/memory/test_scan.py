from __future__ import annotations

import json
from pathlib import Path

from swecli.memory.scan import ScanLimits, manifest_dependencies, pattern_hits, render_scan, scan_project


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def sample_project(root: Path) -> Path:
    write(root, "README.md", "# Shop\nA small web shop.\n")
    write(root, ".gitignore", "*.log\nsecret_dir/\n/local.txt\n")
    write(root, "pyproject.toml", """
[project]
name = "shop"
dependencies = ["fastapi>=0.110", "sqlalchemy[asyncio]~=2.0", "pydantic"]
[project.optional-dependencies]
dev = ["pytest>=8", "ruff"]
[project.scripts]
shop = "shop.cli:main"
[tool.pytest.ini_options]
testpaths = ["tests"]
""")
    write(root, "requirements.txt", "# pinned\nuvicorn==0.30\n-r base.txt\nhttpx>=0.27 ; python_version>'3.8'\n")
    write(root, "web/package.json", json.dumps({"dependencies": {"react": "^18"}, "devDependencies": {"vite": "5"},
                                                "scripts": {"test": "vitest"}}))
    write(root, "Makefile", "install:\n\tpip install -e .\n\ntest:\n\tpytest -q\n")
    write(root, ".github/workflows/ci.yml", "jobs:\n  test:\n    steps:\n      - run: pytest -q --cov\n")
    write(root, "shop/__init__.py", "")
    write(root, "shop/cli.py", "import argparse\n\ndef main():\n    p = argparse.ArgumentParser()\n\n"
                               "if __name__ == \"__main__\":\n    main()\n")
    write(root, "shop/api/routes.py", "from fastapi import APIRouter\nrouter = APIRouter()\n\n\n"
                                      "@router.get(\"/items\")\ndef items():\n    return []\n")
    write(root, "shop/models.py", "from sqlalchemy.orm import DeclarativeBase\n\nclass Base(DeclarativeBase):\n"
                                  "    pass\n\nclass Item(Base):\n    __tablename__ = 'items'\n")
    write(root, "shop/errors.py", "class ShopError(Exception):\n    pass\n")
    write(root, "tests/test_items.py", "def test_items():\n    assert True\n")
    write(root, "tests/conftest.py", "")
    write(root, "debug.log", "noise")
    write(root, "local.txt", "ignored at the root only")
    write(root, "shop/local.txt", "kept: the pattern is anchored")
    write(root, "secret_dir/keys.py", "API = 'x'")
    write(root, "node_modules/left-pad/index.js", "module.exports = 1")
    write(root, ".venv/lib/site.py", "")
    write(root, "env2/pyvenv.cfg", "home = /usr")
    write(root, "env2/lib/x.py", "")
    write(root, "web/.gitignore", "dist-web/\n")
    write(root, "web/dist-web/bundle.js", "")
    write(root, "web/src/server.js", "app.get('/health', (req, res) => res.send('ok'))\n")
    return root


def test_scan_respects_gitignore_and_skips_vendored_dirs(project: Path) -> None:
    scan = scan_project(sample_project(project))
    files = set(scan.files)
    assert {"README.md", "shop/cli.py", "shop/local.txt", ".github/workflows/ci.yml", "web/src/server.js"} <= files
    for ignored in ("debug.log", "local.txt", "secret_dir/keys.py", "node_modules/left-pad/index.js",
                    ".venv/lib/site.py", "env2/lib/x.py", "web/dist-web/bundle.js"):
        assert ignored not in files, ignored
    assert scan.stopped == ""


def test_scan_facts(project: Path) -> None:
    scan = scan_project(sample_project(project))
    assert scan.languages["Python"] == 7 and scan.languages["JavaScript"] == 1
    assert {"README.md", "pyproject.toml", "requirements.txt", "Makefile", ".github/workflows/ci.yml",
            "web/package.json", "tests/conftest.py"} <= set(scan.key_files)
    assert "console script `shop` -> shop.cli:main" in scan.entry_points and "shop/cli.py" in scan.entry_points
    deps = {(path, group): names for path, group, names in scan.dependencies}
    assert deps[("pyproject.toml", "main")] == ["fastapi", "sqlalchemy", "pydantic"]
    assert deps[("pyproject.toml", "dev")] == ["pytest", "ruff"]
    assert deps[("requirements.txt", "main")] == ["uvicorn", "httpx"]
    assert deps[("web/package.json", "main")] == ["react"] and deps[("web/package.json", "dev")] == ["vite"]
    assert scan.test_commands[:2] == ["make test", "pytest"]
    assert "pytest -q --cov  (CI: .github/workflows/ci.yml)" in scan.test_commands
    assert scan.patterns["routes"] == ['shop/api/routes.py:5  @router.get("/items")',
                                       "web/src/server.js:1  app.get('/health', (req, res) => res.send('ok'))"]
    assert "shop/models.py:3  class Base(DeclarativeBase):" in scan.patterns["models"]
    assert "shop/models.py:6  class Item(Base):" in scan.patterns["models"]
    assert scan.patterns["cli"] == ["shop/cli.py:4  p = argparse.ArgumentParser()"]
    assert scan.patterns["main guards"] == ['shop/cli.py:6  if __name__ == "__main__":']
    assert scan.patterns["errors"] == ["shop/errors.py:1  class ShopError(Exception):"]
    assert scan.test_dirs == {"tests": 1}


def test_render_is_compact_and_has_path_line_references(project: Path) -> None:
    text = render_scan(scan_project(sample_project(project)))
    assert "## Tree (respecting .gitignore)" in text and "shop/ (" in text and "secret_dir" not in text
    assert "routes.py:5" in text and "- pyproject.toml [main]: fastapi, sqlalchemy, pydantic" in text
    assert "- make test" in text and "- tests: tests/ (1 files)" in text
    assert len(text) < 4_000


def test_a_large_tree_is_cut_by_the_file_limit_and_stays_small(project: Path) -> None:
    for d in range(30):
        for f in range(40):
            write(project, f"pkg{d:02}/sub/module_{f:03}.py", "class Thing(BaseModel):\n    pass\n")
    limits = ScanLimits(max_files=500)
    scan = scan_project(project, limits)
    assert len(scan.files) == 500 and "file limit (500)" in scan.stopped
    text = render_scan(scan, limits)
    assert "partial: file limit" in text
    assert len(text) < 12_000  # about 3k tokens at worst
    assert "more not shown" in text  # 500 models found, only a few examples listed


def test_the_time_limit_stops_the_walk(project: Path) -> None:
    sample_project(project)
    scan = scan_project(project, ScanLimits(max_seconds=0))
    assert "time limit" in scan.stopped and scan.files == []


def test_an_empty_project(project: Path) -> None:
    text = render_scan(scan_project(project))
    assert "0 files" in text and "(no manifest found)" in text and "(unknown)" in text


def test_pattern_hits_report_one_line_per_kind() -> None:
    text = "x = 1\n@app.route('/a')\n@app.post('/b')  # and app.get('/c') on the same line\n"
    hits = pattern_hits("app.py", text)
    assert [(kind, n) for kind, n, _ in sorted(hits)] == [("routes", 2), ("routes", 3)]
    assert pattern_hits("urls.py", "urlpatterns = [path('items/', views.items),]\n")[0][:2] == ("routes", 1)
    assert pattern_hits("other.py", "os.path('x/', y)\n") == []


def test_manifest_parsers_tolerate_bad_files(project: Path) -> None:
    write(project, "pyproject.toml", "this is [not toml")
    write(project, "package.json", "{not json")
    write(project, "go.mod", "module x\n\nrequire (\n\tgithub.com/a/b v1.0.0 // indirect\n\tgolang.org/x/c v0.1\n)\n"
                             "require example.com/d v2.0.0\n")
    write(project, "Cargo.toml", "[dependencies]\nserde = \"1\"\ntokio = { version = \"1\" }\n"
                                 "[dev-dependencies]\ninsta = \"1\"\n")
    assert manifest_dependencies(project / "pyproject.toml") == [("main", []), ("main", [])]
    assert manifest_dependencies(project / "package.json") == [("main", []), ("dev", [])]
    assert manifest_dependencies(project / "go.mod") == [("main", ["github.com/a/b", "golang.org/x/c",
                                                                   "example.com/d"])]
    assert manifest_dependencies(project / "Cargo.toml") == [("main", ["serde", "tokio"]), ("dev", ["insta"])]


def test_a_gitignore_is_read_bounded_and_not_through_a_link(project: Path, tmp_path: Path) -> None:
    """The repository chooses what its `.gitignore` is: a sparse terabyte was read whole (a MemoryError ended
    /init), and a link was followed out of the project (git itself does not follow an in-tree one)."""
    (project / "app.py").write_text("print('hi')\n")
    with (project / ".gitignore").open("wb") as handle:
        handle.truncate(1 << 40)
    assert scan_project(project).files == [".gitignore", "app.py"]
    (project / ".gitignore").unlink()
    outside = tmp_path / "outside-ignore"
    outside.write_text("app.py\n")
    (project / ".gitignore").symlink_to(outside)
    assert scan_project(project).files == ["app.py"]  # the link itself is neither read nor listed
