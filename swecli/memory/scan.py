"""A bounded scan of a project for /init: what a new teammate would look at first.

`scan_project(root)` walks the tree breadth-first (so a cut-off still sees the top levels),
respecting .gitignore files (every level) and skipping vendored/generated directories, and stops at
a file-count and a time limit. It collects languages, key files, entry points, dependencies from the
manifests, a test command guess, and where notable things live (routes, models, CLIs, tests) with
`path:line` from a small regex pass. `render_scan(scan)` is a compact text (well under 3k tokens)
for the /init prompt.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import time
from collections import Counter, deque
from dataclasses import field
from pathlib import Path
from typing import Any

from swecli.records import datarecord

SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".swecli", ".idea", ".vscode", "dist", "build", "target", ".next",
    ".cache", "site-packages", ".eggs", "vendor", "coverage", "htmlcov", ".gradle", ".terraform",
})
VISIBLE_HIDDEN_DIRS = frozenset({".github", ".gitlab", ".circleci"})
"""Hidden directories worth scanning (CI configuration); every other dot-directory is skipped."""
MAX_GITIGNORE_BYTES = 1 << 20
"""Read of a .gitignore at most (the repository's file: a sparse terabyte was read whole, a MemoryError)."""

LANGUAGES = {
    ".py": "Python", ".pyi": "Python", ".js": "JavaScript", ".mjs": "JavaScript", ".cjs": "JavaScript",
    ".jsx": "JavaScript", ".ts": "TypeScript", ".tsx": "TypeScript", ".go": "Go", ".rs": "Rust", ".rb": "Ruby",
    ".java": "Java", ".kt": "Kotlin", ".scala": "Scala", ".c": "C", ".h": "C", ".cc": "C++", ".cpp": "C++",
    ".hpp": "C++", ".cs": "C#", ".php": "PHP", ".swift": "Swift", ".m": "Objective-C", ".sh": "Shell",
    ".bash": "Shell", ".lua": "Lua", ".ex": "Elixir", ".exs": "Elixir", ".erl": "Erlang", ".hs": "Haskell",
    ".ml": "OCaml", ".clj": "Clojure", ".dart": "Dart", ".r": "R", ".jl": "Julia", ".zig": "Zig", ".vue": "Vue",
    ".svelte": "Svelte", ".sql": "SQL", ".html": "HTML", ".css": "CSS", ".scss": "CSS", ".md": "Markdown",
    ".rst": "reStructuredText", ".toml": "TOML", ".yml": "YAML", ".yaml": "YAML", ".json": "JSON",
}
CODE_EXTS = frozenset({".py", ".js", ".mjs", ".jsx", ".ts", ".tsx", ".go", ".rs", ".rb", ".java", ".kt", ".php", ".cs"})

KEY_FILE_NAMES = frozenset({
    "pyproject.toml", "setup.py", "setup.cfg", "Pipfile", "package.json", "tsconfig.json", "Cargo.toml", "go.mod",
    "Gemfile", "pom.xml", "build.gradle", "build.gradle.kts", "Makefile", "Justfile", "Dockerfile",
    "docker-compose.yml", "docker-compose.yaml", "compose.yaml", "tox.ini", "noxfile.py", "pytest.ini",
    "conftest.py", ".pre-commit-config.yaml", ".gitlab-ci.yml", "Jenkinsfile", "CMakeLists.txt", "manage.py",
    "OPENCLI.md", "AGENTS.md", "CLAUDE.md", "CONTRIBUTING.md", ".env.example",
})
KEY_FILE_PREFIXES = ("README", "requirements")
MANIFESTS = frozenset({"pyproject.toml", "package.json", "Cargo.toml", "go.mod", "Pipfile"})
ENTRY_NAMES = frozenset({"__main__.py", "manage.py", "main.py", "app.py", "wsgi.py", "asgi.py", "cli.py", "main.go",
                         "main.rs", "index.js", "index.ts", "server.js", "server.ts", "main.ts", "main.js"})

def _regexes(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.M) for p in patterns)


# Each regex starts with a literal and none uses a leading `\b` or a top-level alternation: Python's
# re scans those ~50x slower, and the pass reads megabytes. `[ \t]` rather than `\s` so that no
# match runs from one line into the next.
PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    "routes": _regexes(
        r"@\w+(?:\.\w+)*\.(?:route|get|post|put|patch|delete|websocket|api_route)\([ \t]*['\"]/",
        r"\.(?:get|post|put|patch|delete|route|all|use)\([ \t]*['\"`]/",
        r"http\.HandleFunc\(", r"\.(?:GET|POST|PUT|DELETE|PATCH)\([ \t]*\"/",
    ),
    "models": _regexes(
        r"^[ \t]*class \w+\([\w.]*(?:Model|Base|SQLModel|Document|TypedDict)\b",
        r"@Entity\b", r"new Schema\(", r"mongoose\.Schema\(",
    ),
    "cli": _regexes(
        r"argparse\.ArgumentParser\(", r"typer\.Typer\(", r"@click\.(?:command|group)\b",
        r"require\(['\"]commander", r"from ['\"]commander", r"yargs\(", r"#\[derive\([^)\n]*Parser",
        r"cobra\.Command\{",
    ),
    "main guards": _regexes(r"""^if __name__ == ['"]__main__['"]"""),
    "errors": _regexes(r"^[ \t]*class \w+\((?:\w+\.)?\w*(?:Exception|Error)\)"),
}
DJANGO_ROUTE = re.compile(r"path\([ \t]*r?['\"][^'\"\n]*['\"][ \t]*,", re.M)
"""Only looked for in urls.py: elsewhere `path(` is ordinary code."""


def pattern_hits(rel: str, text: str) -> list[tuple[str, int, str]]:
    """(kind, line number, line) for each line of `text` where a notable pattern occurs."""
    regexes = [(kind, regex) for kind, group in PATTERNS.items() for regex in group]
    if rel.endswith("urls.py"):
        regexes.append(("routes", DJANGO_ROUTE))
    starts: list[int] | None = None
    hits: dict[tuple[str, int], str] = {}
    for kind, regex in regexes:
        for match in regex.finditer(text):
            if starts is None:  # line offsets, computed only for files with a hit
                starts = [0, *(m.end() for m in re.finditer("\n", text))]
            number = bisect.bisect_right(starts, match.start())
            end = text.find("\n", match.start())
            hits.setdefault((kind, number), text[starts[number - 1]: end if end >= 0 else len(text)])
    return [(kind, number, line) for (kind, number), line in hits.items()]


@datarecord(frozen=True)
class ScanLimits:
    max_files: int = 5_000
    max_seconds: float = 3.0
    max_pattern_files: int = 400
    max_file_bytes: int = 256_000
    max_examples: int = 6
    max_tree_lines: int = 80
    max_deps: int = 30


@datarecord
class ProjectScan:
    root: Path
    files: list[str] = field(default_factory=list)
    """Relative POSIX paths, breadth-first."""
    stopped: str = ""
    """Why the walk stopped early ("" when it saw everything)."""
    languages: Counter[str] = field(default_factory=Counter)
    key_files: list[str] = field(default_factory=list)
    entry_points: list[str] = field(default_factory=list)
    dependencies: list[tuple[str, str, list[str]]] = field(default_factory=list)
    """(manifest path, group, package names)."""
    test_commands: list[str] = field(default_factory=list)
    patterns: dict[str, list[str]] = field(default_factory=dict)
    """kind -> ["path:line  snippet", ...]."""
    pattern_counts: Counter[str] = field(default_factory=Counter)
    test_dirs: Counter[str] = field(default_factory=Counter)
    elapsed: float = 0.0


# --- walking ---------------------------------------------------------------------------------------


class _Ignore:
    """The .gitignore files met on the way down, each applied relative to its own directory."""

    def __init__(self) -> None:
        self._specs: list[tuple[str, Any]] = []

    def add(self, base: str, gitignore: Path) -> None:
        import pathspec

        lines = _read_text(gitignore, MAX_GITIGNORE_BYTES).splitlines()  # the repository's: bounded
        self._specs.append((base, pathspec.GitIgnoreSpec.from_lines(lines)))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        for base, spec in self._specs:
            if base and not rel.startswith(base + "/"):
                continue
            local = rel[len(base) + 1:] if base else rel
            if spec.match_file(local + "/" if is_dir else local):
                return True
        return False


def _skip_dir(entry: os.DirEntry[str]) -> bool:
    name = entry.name
    if name in SKIP_DIRS or name.endswith(".egg-info"):
        return True
    if name.startswith(".") and name not in VISIBLE_HIDDEN_DIRS:
        return True
    return os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))  # a virtualenv under any name


def walk(root: Path, limits: ScanLimits, deadline: float) -> tuple[list[str], str]:
    """(files, reason the walk stopped early or "")."""
    ignore = _Ignore()
    files: list[str] = []
    queue: deque[str] = deque([""])
    while queue:
        if time.monotonic() > deadline:
            return files, f"time limit ({limits.max_seconds:g}s) reached; {len(queue)} directories not scanned"
        rel_dir = queue.popleft()
        directory = root / rel_dir if rel_dir else root
        gitignore = directory / ".gitignore"
        if gitignore.is_file() and not gitignore.is_symlink():  # as git: an in-tree link is not followed
            ignore.add(rel_dir, gitignore)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue  # unreadable directory: the scan is a best effort
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if entry.is_dir(follow_symlinks=False):
                if not _skip_dir(entry) and not ignore.ignored(rel, is_dir=True):
                    queue.append(rel)
            elif entry.is_file(follow_symlinks=False) and not ignore.ignored(rel, is_dir=False):
                # a link is not read: `README.md -> ~/.ssh/id_rsa` in a cloned repository went to the model
                files.append(rel)
                if len(files) >= limits.max_files:
                    return files, f"file limit ({limits.max_files:,}) reached; the rest of the tree was not scanned"
    return files, ""


# --- facts from files ------------------------------------------------------------------------------


def _depth(rel: str) -> int:
    return rel.count("/")


def _is_key_file(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    if rel.startswith((".github/workflows/", ".gitlab/")) or rel == ".circleci/config.yml":
        return True
    return _depth(rel) <= 1 and (name in KEY_FILE_NAMES or name.startswith(KEY_FILE_PREFIXES))


def _is_test_file(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return bool(re.match(r"test_.*\.py$|.*_test\.(?:py|go)$|.*\.(?:test|spec)\.[jt]sx?$", name)) or (
        name.endswith(".rs") and "/tests/" in f"/{rel}")


def _read_text(path: Path, limit: int) -> str:
    from swecli.frontmatter import read_regular

    try:
        data = read_regular(path, limit)  # without blocking: a FIFO put there since the walk
    except OSError:
        return ""
    return (data or b"")[:limit].decode("utf-8", errors="replace")


def _load_toml(path: Path) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(_read_text(path, 1_000_000))
    except tomllib.TOMLDecodeError:
        return {}


def _load_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(_read_text(path, 1_000_000))
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def _req_name(spec: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
    return match.group(1) if match else ""


def _names(specs: object) -> list[str]:
    if isinstance(specs, dict):
        return [str(k) for k in specs if k != "python"]
    if isinstance(specs, list):
        return [n for n in (_req_name(str(s)) for s in specs) if n]
    return []


def _pyproject_deps(data: dict[str, Any]) -> list[tuple[str, list[str]]]:
    project = data.get("project", {})
    groups = [("main", _names(project.get("dependencies")))]
    groups += [(name, _names(specs)) for name, specs in (project.get("optional-dependencies") or {}).items()]
    groups += [(name, _names(specs)) for name, specs in (data.get("dependency-groups") or {}).items()]
    poetry = data.get("tool", {}).get("poetry", {})
    groups.append(("main", _names(poetry.get("dependencies"))))
    groups += [(name, _names(g.get("dependencies"))) for name, g in (poetry.get("group") or {}).items()]
    return groups


def _go_mod_deps(text: str) -> list[str]:
    names: list[str] = []
    in_block = False
    for line in text.splitlines():
        line = line.split("//")[0].strip()
        if line.startswith("require ("):
            in_block = True
        elif in_block and line == ")":
            in_block = False
        elif in_block and line:
            names.append(line.split()[0])
        elif line.startswith("require "):
            names.append(line.split()[1])
    return names


def manifest_dependencies(path: Path) -> list[tuple[str, list[str]]]:
    """(group, package names) from one manifest; unknown or unreadable manifests give nothing."""
    name = path.name
    if name == "pyproject.toml":
        return _pyproject_deps(_load_toml(path))
    if name == "Pipfile":
        data = _load_toml(path)
        return [("main", _names(data.get("packages"))), ("dev", _names(data.get("dev-packages")))]
    if name == "package.json":
        data = _load_json(path)
        return [("main", _names(data.get("dependencies"))), ("dev", _names(data.get("devDependencies")))]
    if name == "Cargo.toml":
        data = _load_toml(path)
        return [("main", _names(data.get("dependencies"))), ("dev", _names(data.get("dev-dependencies")))]
    if name == "go.mod":
        return [("main", _go_mod_deps(_read_text(path, 1_000_000)))]
    if name.startswith("requirements") and name.endswith(".txt"):
        lines = _read_text(path, 1_000_000).splitlines()
        return [("main", [n for n in (_req_name(s) for s in lines if not s.strip().startswith(("#", "-"))) if n])]
    return []


def _entry_points(root: Path, files: list[str]) -> list[str]:
    found: list[str] = []
    if "pyproject.toml" in files:
        scripts = _load_toml(root / "pyproject.toml").get("project", {}).get("scripts", {})
        found += [f"console script `{name}` -> {target}" for name, target in scripts.items()]
    if "package.json" in files:
        data = _load_json(root / "package.json")
        bins = data.get("bin")
        if isinstance(bins, dict):
            found += [f"bin `{name}` -> {target}" for name, target in bins.items()]
        elif isinstance(bins, str):
            found.append(f"bin -> {bins}")
        if isinstance(data.get("main"), str):
            found.append(f"main -> {data['main']}")
        scripts = data.get("scripts")
        if isinstance(scripts, dict):
            found += [f"npm run {name}: {scripts[name]}" for name in ("start", "dev", "build") if name in scripts]
    found += [rel for rel in files if rel.rsplit("/", 1)[-1] in ENTRY_NAMES and _depth(rel) <= 3]
    return found


def _makefile_has_test(root: Path, files: list[str]) -> bool:
    return "Makefile" in files and re.search(r"^test\s*:", _read_text(root / "Makefile", 200_000), re.M) is not None


def _npm_test(root: Path, files: list[str]) -> str:
    scripts = _load_json(root / "package.json").get("scripts") if "package.json" in files else None
    test = scripts.get("test") if isinstance(scripts, dict) else None
    if not isinstance(test, str) or "no test specified" in test:
        return ""
    runner = "pnpm" if "pnpm-lock.yaml" in files else "yarn" if "yarn.lock" in files else "npm"
    return f"{runner} test"


def _uses_pytest(root: Path, files: list[str], deps: list[tuple[str, str, list[str]]]) -> bool:
    if any(f in files for f in ("pytest.ini", "conftest.py")) or any(f.endswith("/conftest.py") for f in files):
        return True
    if "pyproject.toml" in files and "pytest" in _load_toml(root / "pyproject.toml").get("tool", {}):
        return True
    if any("pytest" in names for _, _, names in deps):
        return True
    return any(re.search(r"(^|/)test_[^/]*\.py$", f) for f in files)


def _ci_test_runs(root: Path, files: list[str]) -> list[str]:
    runs: list[str] = []
    for rel in files:
        if rel.startswith(".github/workflows/") or rel == ".gitlab-ci.yml":
            for match in re.finditer(r"^\s*(?:-\s*)?(?:run:\s*)?(.*\b(?:pytest|npm test|cargo test|go test|make test|"
                                     r"tox|nox|yarn test|pnpm test)\b.*)$", _read_text(root / rel, 200_000), re.M):
                runs.append(f"{match.group(1).strip()}  (CI: {rel})")
    return runs


def guess_test_commands(root: Path, files: list[str], deps: list[tuple[str, str, list[str]]]) -> list[str]:
    """Most likely first; CI's own test steps last, as evidence."""
    commands: list[str] = []
    if _makefile_has_test(root, files):
        commands.append("make test")
    if _uses_pytest(root, files, deps):
        commands.append("pytest")
    if "tox.ini" in files:
        commands.append("tox")
    npm = _npm_test(root, files)
    if npm:
        commands.append(npm)
    if "Cargo.toml" in files:
        commands.append("cargo test")
    if "go.mod" in files:
        commands.append("go test ./...")
    commands += _ci_test_runs(root, files)[:3]
    return list(dict.fromkeys(commands))


def find_patterns(root: Path, files: list[str], limits: ScanLimits, deadline: float,
                  scan: ProjectScan) -> None:
    sources = [f for f in files if os.path.splitext(f)[1] in CODE_EXTS][: limits.max_pattern_files]
    for rel in sources:
        if time.monotonic() > deadline:
            scan.stopped = scan.stopped or "time limit reached during the pattern pass"
            return
        for kind, number, line in pattern_hits(rel, _read_text(root / rel, limits.max_file_bytes)):
            scan.pattern_counts[kind] += 1
            examples = scan.patterns.setdefault(kind, [])
            if len(examples) < limits.max_examples:
                examples.append(f"{rel}:{number}  {line.strip()[:80]}")
    for rel in files:
        if _is_test_file(rel):
            scan.test_dirs[rel.rsplit("/", 1)[0] if "/" in rel else "."] += 1


def scan_project(root: Path, limits: ScanLimits | None = None) -> ProjectScan:
    limits = limits or ScanLimits()
    start = time.monotonic()
    deadline = start + limits.max_seconds
    scan = ProjectScan(root=root)
    scan.files, scan.stopped = walk(root, limits, deadline)
    for rel in scan.files:
        language = LANGUAGES.get(os.path.splitext(rel)[1].lower())
        if language:
            scan.languages[language] += 1
    scan.key_files = [rel for rel in scan.files if _is_key_file(rel)]
    for rel in scan.key_files:
        name = rel.rsplit("/", 1)[-1]
        if name in MANIFESTS or (name.startswith("requirements") and name.endswith(".txt")):
            for group, names in manifest_dependencies(root / rel):
                if names:
                    scan.dependencies.append((rel, group, names))
    scan.entry_points = _entry_points(root, scan.files)
    scan.test_commands = guess_test_commands(root, scan.files, scan.dependencies)
    find_patterns(root, scan.files, limits, deadline, scan)
    scan.elapsed = time.monotonic() - start
    return scan


# --- rendering --------------------------------------------------------------------------------------


def _tree(files: list[str], max_lines: int) -> list[str]:
    """Directories to depth 3 with their file counts, each followed by its files' names on one line."""
    dir_files: dict[str, list[str]] = {}
    subtree: Counter[str] = Counter()
    for rel in files:
        parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
        dir_files.setdefault(parent, []).append(rel.rsplit("/", 1)[-1])
        parts = rel.split("/")[:-1]
        for i in range(len(parts) + 1):
            subtree["/".join(parts[:i])] += 1
    children: dict[str, list[str]] = {}
    for directory in subtree:
        if directory:
            parent = directory.rsplit("/", 1)[0] if "/" in directory else ""
            children.setdefault(parent, []).append(directory)
    lines: list[str] = []

    def visit(directory: str, depth: int) -> None:
        indent = "  " * depth
        names = sorted(dir_files.get(directory, []))
        if names:
            lines.append(f"{indent}{_name_list(names)}")
        for child in sorted(children.get(directory, [])):
            lines.append(f"{indent}{child.rsplit('/', 1)[-1]}/ ({subtree[child]} files)")
            if depth < 2:
                visit(child, depth + 1)

    visit("", 0)
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"... ({len(lines) - max_lines} more tree lines not shown)"]
    return lines


def _name_list(names: list[str], max_chars: int = 160) -> str:
    """File names on one line, cut with a count (plus the commonest extensions) when there are many."""
    shown: list[str] = []
    for name in names:
        if sum(len(n) + 2 for n in shown) + len(name) > max_chars:
            break
        shown.append(name)
    rest = names[len(shown):]
    if not rest:
        return ", ".join(shown)
    exts = Counter(os.path.splitext(n)[1] or n for n in rest).most_common(3)
    return f"{', '.join(shown)}, +{len(rest)} more ({', '.join(f'{c} {e}' for e, c in exts)})"


def render_scan(scan: ProjectScan, limits: ScanLimits | None = None) -> str:
    limits = limits or ScanLimits()
    out = [f"Project scan of {scan.root.resolve().name}/: {len(scan.files):,} files in {scan.elapsed:.1f}s"
           + (f" (partial: {scan.stopped})" if scan.stopped else "")]
    langs = ", ".join(f"{name} {count}" for name, count in scan.languages.most_common(8))
    out += ["", f"## Languages (files)\n{langs or '(none recognised)'}"]
    out += ["", "## Tree (respecting .gitignore)", *_tree(scan.files, limits.max_tree_lines)]
    out += ["", "## Key files", *(f"- {f}" for f in scan.key_files[:40])]
    out += ["", "## Entry points", *(f"- {e}" for e in scan.entry_points[:15] or ["(none found)"])]
    deps = [f"- {path} [{group}]: {', '.join(names[: limits.max_deps])}"
            + (f" (+{len(names) - limits.max_deps} more)" if len(names) > limits.max_deps else "")
            for path, group, names in scan.dependencies[:12]]
    out += ["", "## Dependencies", *(deps or ["(no manifest found)"])]
    out += ["", "## Test command (guess, most likely first)", *(f"- {c}" for c in scan.test_commands or ["(unknown)"])]
    out += ["", "## Where things live (path:line)"]
    if scan.test_dirs:
        out.append("- tests: " + ", ".join(f"{d}/ ({n} files)" for d, n in scan.test_dirs.most_common(6)))
    for kind, examples in scan.patterns.items():
        more = scan.pattern_counts[kind] - len(examples)
        out.append(f"- {kind}" + (f" ({more} more not shown)" if more > 0 else "") + ":")
        out += [f"    {example}" for example in examples]
    return "\n".join(out) + "\n"
