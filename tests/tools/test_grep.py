"""grep: both engines (ripgrep and pure Python) on real files, and proof they give identical results."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from swecli.messages import ToolCall
from swecli.tools import grep as grep_module
from swecli.tools.base import ToolContext, ToolResult
from swecli.tools.builtin import default_registry
from swecli.tools.grep import MAX_MATCHES, GrepArgs, Matches, search
from swecli.tools.walk import IgnoreRules
from tests.unprivileged import USERS, hand_over, user_prefix, workspace

HAVE_RG = grep_module.find_ripgrep(Path.cwd()) is not None
ENGINES = [pytest.param("rg", marks=pytest.mark.skipif(not HAVE_RG, reason="ripgrep (rg) is not installed")),
           "python"]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run the test once per engine; the Python one is forced by hiding rg, as on a machine without it."""
    if request.param == "python":
        monkeypatch.setattr(grep_module, "find_ripgrep", lambda root: None)
    yield request.param


def run_grep(ctx: ToolContext, **args: object) -> ToolResult:
    return default_registry().run(ToolCall(id="c1", name="grep", arguments=json.dumps(args)), ctx)


@pytest.fixture
def tree(project: Path) -> Path:
    files = {
        "README.md": "# Demo\nCall handle_request() to start.\n",
        "src/app.py": "def handle_request(req):\n    return route(req)\n\n\ndef route(req):\n    return req\n",
        "src/util/helpers.py": "import os\n\ndef handle_request_later():\n    pass\n",
        "src/web/index.ts": "export function handleRequest() {}\n",
        "src/web/view.tsx": "const handle_request = () => null;\n",
        "tests/test_app.py": "from src.app import handle_request\n\nassert handle_request(1) == 1\n",
        ".github/workflows/ci.yml": "run: pytest  # handle_request smoke\n",
        "build/gen.py": "handle_request = 'generated'\n",
        "secret.py": "handle_request = 'ignored by name'\n",
        "notes.txt": "crlf line handle_request\r\nnext\r\n",
    }
    for name, text in files.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
    (project / ".gitignore").write_text("build/\nsecret.py\n")
    (project / "data.bin").write_bytes(b"\0\0handle_request\0")
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("handle_request in git internals\n")
    return project


def test_results_are_grouped_by_file_with_line_numbers(tree: Path, ctx: ToolContext, engine: str) -> None:
    result = run_grep(ctx, pattern="handle_request")
    assert not result.is_error
    assert result.summary == "Found 8 matches across 7 files"
    assert result.content == "\n".join([
        "Found 8 matches across 7 files",
        "",
        ".github/workflows/ci.yml",
        "  1: run: pytest  # handle_request smoke",
        "",
        "README.md",
        "  2: Call handle_request() to start.",
        "",
        "notes.txt",
        "  1: crlf line handle_request",
        "",
        "src/app.py",
        "  1: def handle_request(req):",
        "",
        "src/util/helpers.py",
        "  3: def handle_request_later():",
        "",
        "src/web/view.tsx",
        "  1: const handle_request = () => null;",
        "",
        "tests/test_app.py",
        "  1: from src.app import handle_request",
        "  3: assert handle_request(1) == 1",
    ])
    assert result.meta["engine"] == engine


def test_gitignored_binary_and_git_files_are_skipped(tree: Path, ctx: ToolContext, engine: str) -> None:
    content = run_grep(ctx, pattern="handle_request").content
    for hidden in ("build/gen.py", "secret.py", "data.bin", ".git/config"):
        assert hidden not in content


def test_glob_and_path_narrow_the_search(tree: Path, ctx: ToolContext, engine: str) -> None:
    py = run_grep(ctx, pattern="handle_request", glob="*.py")
    assert py.summary == "Found 4 matches across 3 files"
    assert "secret.py" not in py.content  # a glob does not resurrect gitignored files
    web = run_grep(ctx, pattern="handle", path="src/web", glob="*.{ts,tsx}")
    assert web.summary == "Found 2 matches across 2 files"
    single = run_grep(ctx, pattern="route", path="src/app.py")
    assert single.content.splitlines()[2:] == ["src/app.py", "  2:     return route(req)", "  5: def route(req):"]


def test_case_insensitive(tree: Path, ctx: ToolContext, engine: str) -> None:
    assert run_grep(ctx, pattern="HANDLEREQUEST").summary == "No matches"
    assert run_grep(ctx, pattern="HANDLEREQUEST", case_insensitive=True).summary == "Found 1 match in 1 file"


def test_no_matches_is_not_an_error(tree: Path, ctx: ToolContext, engine: str) -> None:
    result = run_grep(ctx, pattern="no_such_identifier_anywhere")
    assert not result.is_error
    assert result.summary == "No matches"
    assert "No matches for 'no_such_identifier_anywhere'" in result.content


def test_invalid_regex_is_a_clear_error(tree: Path, ctx: ToolContext, engine: str) -> None:
    result = run_grep(ctx, pattern="handle_request(")
    assert result.is_error
    assert "Invalid regex 'handle_request('" in result.content
    assert "missing ), unterminated subpattern" in result.content


def test_python_only_syntax_still_works(tree: Path, ctx: ToolContext, engine: str) -> None:
    # ripgrep's default engine has no look-around; the search falls back to Python instead of failing.
    result = run_grep(ctx, pattern=r"(?<=def )handle_request\b")
    assert result.summary == "Found 1 match in 1 file"
    assert "src/app.py" in result.content


def test_matches_are_capped_with_the_total(project: Path, ctx: ToolContext, engine: str) -> None:
    for n in range(3):
        (project / f"f{n}.txt").write_text("".join(f"hit {i}\n" for i in range(100)))
    result = run_grep(ctx, pattern="hit")
    assert result.summary == "Found 300 matches across 3 files"
    assert result.meta["shown"] == MAX_MATCHES
    assert "(Showing the first 200 of 300 matching lines." in result.content
    assert "  100: hit 99" in result.content  # f1.txt is complete
    assert "f2.txt" not in result.content
    # Every match is kept whole for the context engine to save: the listing the model would get uncut.
    assert result.full is not None and result.full.lines == 3 * 101 + 2 and result.full.status == result.summary
    listing = result.full.text(10**6)
    assert listing is not None and listing.startswith("f0.txt\n  1: hit 0\n") and listing.endswith("  100: hit 99\n")
    assert "\nf2.txt\n  1: hit 0\n" in listing


def test_a_complete_listing_has_no_separate_whole(tree: Path, ctx: ToolContext, engine: str) -> None:
    assert run_grep(ctx, pattern="handle_request").full is None


def test_output_is_capped_by_characters(project: Path, engine: str) -> None:
    (project / "wide.txt").write_text("".join(f"match {'x' * 400} {i}\n" for i in range(50)))
    ctx = ToolContext(root=project, max_output_chars=2000)
    result = run_grep(ctx, pattern="match")
    assert len(result.content) < 2600
    assert "Found 50 matches in 1 file" in result.content
    assert f"(Showing the first {result.meta['shown']} of 50 matching lines." in result.content
    assert "… [+" in result.content  # lines longer than 300 characters are cut
    assert result.full is not None and f"match {'x' * 400} 49" in (result.full.text(10**6) or "")


def test_files_in_other_encodings_are_shown_and_searched_in_their_own(project: Path, ctx: ToolContext,
                                                                       engine: str) -> None:
    (project / "latin.txt").write_bytes("café crème needle\n".encode("latin-1"))
    (project / "quotes.txt").write_bytes("it\u2019s \u2013 a needle\r\n".encode("cp1252"))
    (project / "bom.txt").write_bytes(b"\xef\xbb\xbfneedle first\n")
    (project / "wide.txt").write_bytes("needle in UTF-16, déjà vu\n".encode("utf-16"))
    result = run_grep(ctx, pattern="needle")
    assert "bom.txt\n  1: needle first" in result.content
    assert "latin.txt\n  1: café crème needle" in result.content
    assert "quotes.txt\n  1: it\u2019s \u2013 a needle" in result.content
    assert "wide.txt\n  1: needle in UTF-16, déjà vu" in result.content
    # A pattern with characters beyond ASCII finds them whatever the file's encoding (ripgrep alone would not).
    found = run_grep(ctx, pattern="cr[eè]me|déjà")
    assert "latin.txt\n  1: café crème needle" in found.content and "wide.txt" in found.content


def test_errors(tree: Path, ctx: ToolContext, engine: str) -> None:
    assert "outside the project root" in run_grep(ctx, pattern="x", path="../").content
    assert "Path not found: nope" in run_grep(ctx, pattern="x", path="nope").content
    assert "binary file" in run_grep(ctx, pattern="x", path="data.bin").content
    assert run_grep(ctx, pattern="").is_error


PARITY_CASES = [
    {"pattern": "handle_request"},
    {"pattern": "handle", "case_insensitive": True},
    {"pattern": r"^\s+return"},
    {"pattern": r"req\)$"},
    {"pattern": "def", "path": "src"},
    {"pattern": "def", "path": "src", "glob": "util/*.py"},
    {"pattern": ".", "glob": "!*.py"},
    {"pattern": "e", "glob": "**/*.{ts,tsx,yml}"},
    {"pattern": "[", "path": "src"},
    {"pattern": "(?i)import"},
    {"pattern": "nothing-here"},
    {"pattern": "handle_request$"},  # CRLF lines match `$` without their CR
    {"pattern": "^$"},  # blank lines, but an empty file has none
    {"pattern": r"\Aexport"},
    {"pattern": r"req\)\s*$", "glob": "*.py"},
]


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep (rg) is not installed")
@pytest.mark.parametrize("args", PARITY_CASES, ids=lambda a: ",".join(f"{k}={v}" for k, v in a.items()))
def test_both_engines_give_identical_results(tree: Path, ctx: ToolContext, args: dict[str, object]) -> None:
    (tree / "src" / "util" / "extra.py").write_text("def late():\n  import sys\n")
    (tree / "src" / "empty.py").write_text("")
    (tree / "src" / "no_newline.txt").write_bytes(b"ends with req)\r")
    grep_args = GrepArgs.model_validate(args)
    try:
        rg = search(grep_args, ctx, engine="rg")
        python = search(grep_args, ctx, engine="python")
    except Exception as exc:  # an invalid pattern must fail the same way in both
        with pytest.raises(type(exc), match="Invalid regex"):
            search(grep_args, ctx, engine="python")
        return
    assert rg.engine == "rg"
    assert (rg.hits, rg.total, rg.files) == (python.hits, python.total, python.files)


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep (rg) is not installed")
def test_engines_agree_on_a_real_source_tree(ctx: ToolContext) -> None:
    repo = Path(__file__).resolve().parents[2]
    real = ToolContext(root=repo)
    for args in ({"pattern": r"def \w+\(", "path": "swecli/tools"}, {"pattern": "import", "glob": "*.toml"}):
        grep_args = GrepArgs.model_validate(args)
        rg, python = search(grep_args, real, engine="rg"), search(grep_args, real, engine="python")
        assert rg.total > 0
        assert (rg.hits, rg.total, rg.files) == (python.hits, python.total, python.files)


def test_an_interrupted_search_stops_and_says_so(project: Path, engine: str) -> None:
    for n in range(50):
        (project / f"f{n:02}.txt").write_text("needle\n")
    ctx = ToolContext(root=project)
    ctx.cancel.cancel()
    matches = search(GrepArgs(pattern="needle"), ctx)
    assert matches.complete is False
    assert matches.total < 50


# ------------------------------------------------------------------------------- the Python engine's bounds


def whole_file_reference(data: bytes, pattern: str) -> list[tuple[int, str]]:
    """What the engine finds reading a file whole: (line, text) pairs. Lines end at \n or \r\n; a file that does
    not end with a newline loses a lone \r at its very end (the code before pieces also dropped one before
    a final newline)."""
    if b"\0" in data:
        return []
    text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace").replace("\r\n", "\n")
    text = text[:-1] if text.endswith("\n") else text.removesuffix("\r")
    if not data:
        return []
    return [(n, line) for n, line in enumerate(text.split("\n"), 1) if re.search(pattern, line)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(["ab", "needle", "\n", "\r\n", "\r", "é", "\xff", "x" * 9, "\ufeff"]),
                      max_size=60),
       chunk=st.integers(min_value=1, max_value=23))
@example(parts=["\ufeff", "ab"], chunk=1)  # a byte-order mark longer than the first piece (found by CI)
def test_reading_in_pieces_finds_what_reading_whole_found(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                          parts: list[str], chunk: int) -> None:
    monkeypatch.setattr(grep_module, "CHUNK_BYTES", chunk)
    data = "".join(parts).encode("utf-8", errors="surrogateescape")
    (project / "f.txt").write_bytes(data)
    for pattern in ("needle", r"^ab", r"b$", r"é"):
        found = search(GrepArgs(pattern=pattern, path="f.txt"), ToolContext(root=project), engine="python")
        assert [(h.line, h.text) for h in found.hits] == whole_file_reference(data, pattern), pattern


def test_a_file_over_the_limit_is_searched_in_part_and_the_model_is_told(project: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grep_module, "find_ripgrep", lambda root: None)
    monkeypatch.setattr(grep_module, "MAX_FILE_BYTES", 1 << 20)
    line = b"needle at the start of a line of about eighty bytes ......................\n"
    (project / "big.log").write_bytes(line * 30_000)  # ~2.2 MiB: the first MiB is searched
    (project / "small.txt").write_text("needle\n")
    result = run_grep(ToolContext(root=project), pattern="needle")
    lines_searched = (1 << 20) // len(line)
    assert result.meta["matches"] == lines_searched + 1 and result.meta["cut_files"] == ["big.log"]
    assert "Only the first 1 MiB of big.log (2 MiB) were searched" in result.content
    empty = run_grep(ToolContext(root=project), pattern="absent")
    assert empty.content.startswith("No matches") and "big.log" in empty.content


def test_a_huge_line_is_matched_on_its_head_and_numbering_goes_on(project: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grep_module, "LONG_LINE_BYTES", 1000)
    (project / "min.js").write_bytes(b"start" + b"x" * 200_000 + b"tailneedle\nnext needle\n")
    found = search(GrepArgs(pattern="needle|start"), ToolContext(root=project), engine="python")
    assert [(h.line, h.text[:5]) for h in found.hits] == [(1, "start"), (2, "next ")]
    assert found.listing.total < 10_000  # the 200 kB line is kept at its first 1,000 bytes


def test_a_nul_byte_ends_a_files_search_as_in_ripgrep(project: Path, engine: str) -> None:
    # ripgrep reads 64 KiB at a time and stops at the piece that holds a NUL: matches before it stand.
    (project / "late.bin").write_bytes(b"needle one\n" + b"y" * 300_000 + b"\n\0\nneedle two\n")
    (project / "early.bin").write_bytes(b"needle early\n\0")
    result = run_grep(ToolContext(root=project), pattern="needle")
    assert result.meta["matches"] == 1 and "late.bin" in result.content and "needle two" not in result.content


# ------------------------------------------------------------------- hostile ignore files (ignorecheck.py)

BOUNDED_SEARCH = """
import json, resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # inherited by ripgrep: /dev/zero cannot fill the machine
from swecli.tools.base import ToolContext
from swecli.tools.grep import GrepArgs, grep
result = grep(GrepArgs(pattern="needle", path=sys.argv[2]), ToolContext(root=Path(sys.argv[1])))
print(json.dumps({"content": result.content, "meta": result.meta}))
"""


def bounded_grep(project: Path, path: str = ".", user: str = "invoking") -> dict[str, Any]:
    """grep in a child process whose memory (and ripgrep's) is capped, killed with everything it started if it
    has not answered in HANG_SECONDS: before the fix a FIFO hung ripgrep forever and /dev/zero ate the memory."""
    proc = subprocess.Popen([*user_prefix(user), sys.executable, "-c", BOUNDED_SEARCH, str(project), path], cwd="/",
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=HANG_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"grep did not answer within {HANG_SECONDS} s (ripgrep waits on a FIFO?)")
    assert proc.returncode == 0, err
    found: dict[str, Any] = json.loads(out)
    return found


HANG_SECONDS = 40
"""A hang guard, not a speed check: the search takes well under a second; a hang never ends."""


def hostile_project(base: Path) -> Path:
    project = base / "repo"
    (project / "sub" / "deep").mkdir(parents=True)
    (project / ".git" / "info").mkdir(parents=True)
    (project / "top.txt").write_text("needle at the top\n")
    (project / "sub" / "deep" / "low.txt").write_text("needle below\n")
    (project / "sub" / "skipped.log").write_text("needle in an ignored file\n")
    (project / "sub" / ".gitignore").write_text("*.log\n")
    return project


def plant(project: Path, where: str, kind: str) -> None:
    path = project / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


HOSTILE = [(".gitignore", "fifo"), (".gitignore", "zero"), ("sub/.gitignore", "fifo"), ("sub/deep/.gitignore", "zero"),
           (".rgignore", "fifo"), ("sub/.rgignore", "zero"), (".git/info/exclude", "fifo"),
           ("sub/.git/info/exclude", "fifo")]


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep (rg) is not installed")
@pytest.mark.parametrize(("where", "kind"), HOSTILE, ids=[f"{w}-{k}" for w, k in HOSTILE])
def test_a_hostile_ignore_file_neither_hangs_grep_nor_fills_memory(tmp_path: Path, where: str, kind: str) -> None:
    project = hostile_project(tmp_path)
    plant(project, where, kind)
    found = bounded_grep(project)
    assert found["meta"]["engine"] == "python"
    shown = f"{where} ({'a FIFO' if kind == 'fifo' else 'a link to /dev/zero'}"
    assert any(entry.startswith(shown) for entry in found["meta"]["unsafe_ignore_files"])
    assert "were read as empty" in found["content"] and where in found["content"]
    hits = [line for line in found["content"].splitlines() if line.startswith("  ")]
    if where != "sub/.gitignore":
        assert hits == ["  1: needle below", "  1: needle at the top"]
    else:  # a FIFO in place of the file that ignores *.log: nothing is ignored there
        assert hits == ["  1: needle below", "  1: needle in an ignored file", "  1: needle at the top"]


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep (rg) is not installed")
@pytest.mark.parametrize("user", USERS)
def test_a_hostile_parent_ignore_file_does_not_hang_a_search_below_it(user: str) -> None:
    # ripgrep started in sub/ reads every parent's .gitignore (--no-ignore-parent did not stop it, measured)
    with workspace("swecli-rgsafe-") as base:
        project = hostile_project(base)
        plant(project, ".gitignore", "fifo")
        plant(project, "sub/deep/.rgignore", "zero")
        hand_over(base, user)
        found = bounded_grep(project, "sub", user)
    assert found["meta"]["unsafe_ignore_files"][0] == ".gitignore (a FIFO)"
    assert found["meta"]["matches"] == 1 and "sub/deep/low.txt" in found["content"]


GIT_FILE_CHAIN = [("gitdir: {elsewhere}", "commondir"), ("gitdir: {elsewhere}", "common/info/exclude"),
                  ("gitdir: ../elsewhere", "commondir")]


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep (rg) is not installed")
@pytest.mark.parametrize(("pointer", "planted"), GIT_FILE_CHAIN, ids=["commondir", "exclude", "relative-gitdir"])
def test_a_git_file_pointing_at_a_fifo_does_not_hang_grep(tmp_path: Path, pointer: str, planted: str) -> None:
    # ripgrep follows a `.git` *file* as a linked worktree's: its `gitdir`, that directory's `commondir`, the
    # common directory's info/exclude (a relative gitdir from ripgrep's working directory, the project here);
    # one `printf 'gitdir: /tmp/x' > sub/.git` and a FIFO there hung it forever
    project = hostile_project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "common" / "info").mkdir(parents=True)
    (project / "sub" / ".git").write_text(pointer.format(elsewhere=elsewhere) + "\n")
    if planted != "commondir":
        (elsewhere / "commondir").write_text("./common\n")
    os.mkfifo(elsewhere / planted)
    found = bounded_grep(project)
    assert found["meta"]["engine"] == "python"
    assert found["meta"]["unsafe_ignore_files"] == [f"{elsewhere / planted} (a FIFO)"]
    assert [line for line in found["content"].splitlines() if line.startswith("  ")] == [
        "  1: needle below", "  1: needle at the top"]


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep (rg) is not installed")
def test_a_linked_worktree_keeps_ripgrep_and_its_common_exclude(tmp_path: Path) -> None:
    main, linked = tmp_path / "main", tmp_path / "linked"
    main.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.hooksPath=/dev/null"]
    subprocess.run([*git, "init", "-q", str(main)], check=True)
    (main / "seed.txt").write_text("seed\n")
    subprocess.run([*git, "-C", str(main), "add", "seed.txt"], check=True)
    subprocess.run([*git, "-C", str(main), "commit", "-qm", "seed"], check=True)
    subprocess.run([*git, "-C", str(main), "worktree", "add", "-q", str(linked)], check=True)
    (main / ".git" / "info" / "exclude").write_text("*.secret\n")  # git reads it for every worktree
    (linked / "kept.txt").write_text("needle\n")
    (linked / "hidden.secret").write_text("needle\n")
    listed = subprocess.run([*git, "-C", str(linked), "ls-files", "--others", "--exclude-standard"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert listed == ["kept.txt"]  # what git itself ignores there
    matches = guarded_search(GrepArgs(pattern="needle"), ToolContext(root=linked))
    assert matches.engine == "rg" and matches.unsafe_ignore_files == []
    assert [hit.path for hit in matches.hits] == ["kept.txt"]
    rules = IgnoreRules(linked)  # the Python engine's and list_files' rules agree with git and ripgrep
    assert rules.ignored(linked / "hidden.secret", is_dir=False) and not rules.ignored(linked / "kept.txt", False)


def guarded_search(args: GrepArgs, ctx: ToolContext) -> Matches:
    """`search` in this process, interrupted after HANG_SECONDS (a search stopped so is incomplete): for FIFOs,
    whose hang an interrupt ends; /dev/zero needs `bounded_grep`'s memory cap."""
    guard = threading.Timer(HANG_SECONDS, ctx.cancel.cancel)
    guard.start()
    try:
        return search(args, ctx)
    finally:
        guard.cancel()


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep (rg) is not installed")
def test_ignored_directories_are_checked_one_level_down(project: Path, ctx: ToolContext) -> None:
    (project / ".gitignore").write_text("vendor/\n")
    (project / "vendor" / "inner").mkdir(parents=True)
    (project / "vendor" / "lib.txt").write_text("needle\n")
    (project / "main.txt").write_text("needle\n")
    os.mkfifo(project / "vendor" / "inner" / ".gitignore")  # ripgrep never reaches it: it may run
    matches = guarded_search(GrepArgs(pattern="needle"), ctx)
    assert matches.engine == "rg" and [hit.path for hit in matches.hits] == ["main.txt"]
    # ripgrep reads a skipped directory's own ignore files before skipping it (.git's too)
    for planted in ("vendor/.gitignore", ".git/.gitignore"):
        (project / planted).parent.mkdir(exist_ok=True)
        os.mkfifo(project / planted)
        matches = guarded_search(GrepArgs(pattern="needle"), ctx)
        assert matches.complete and matches.engine == "python"
        assert matches.unsafe_ignore_files == [f"{planted} (a FIFO)"]
        assert [hit.path for hit in matches.hits] == ["main.txt"]
        (project / planted).unlink()


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep (rg) is not installed")
def test_the_users_global_excludes_file_is_never_read(project: Path, ctx: ToolContext,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # ripgrep reads git's core.excludesFile: swecli passes --no-ignore-global and no HOME or XDG_CONFIG_HOME.
    home = project.parent / "home"
    (home / ".config" / "git").mkdir(parents=True)
    os.mkfifo(home / "excludes")
    os.mkfifo(home / ".config" / "git" / "ignore")
    (home / ".gitconfig").write_text(f"[core]\n\texcludesFile = {home / 'excludes'}\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    (project / "main.txt").write_text("needle\n")
    matches = guarded_search(GrepArgs(pattern="needle"), ctx)
    assert matches.engine == "rg" and matches.complete and matches.total == 1


NESTED_IGNORES = {
    ".gitignore": "*.log\nbuild/\n/top-only.txt\n!keep.log\n",
    "pkg/.gitignore": "generated/\n*.tmp\n!important.tmp\n/local.txt\n",
    "pkg/sub/.gitignore": "!*.log\ncache\n",
    "pkg/we[ird]*/.gitignore": "hidden.txt\n",
    ".git/info/exclude": "excluded-by-info.txt\n",
}
NESTED_FILES = ["a.log", "keep.log", "top-only.txt", "pkg/top-only.txt", "build/x.txt", "pkg/build/y.txt",
                "pkg/generated/g.txt", "pkg/a.tmp", "pkg/important.tmp", "pkg/local.txt", "pkg/sub/local.txt",
                "pkg/sub/b.log", "pkg/sub/cache/c.txt", "pkg/sub/cache", "pkg/we[ird]*/hidden.txt",
                "pkg/we[ird]*/shown.txt", "excluded-by-info.txt", "pkg/excluded-by-info.txt", "plain.txt"]


@pytest.mark.skipif(not HAVE_RG, reason="ripgrep (rg) is not installed")
@pytest.mark.parametrize("args", [{}, {"path": "pkg"}, {"path": "pkg/sub"}, {"glob": "*.log"}, {"glob": "!*.txt"}],
                         ids=str)
def test_both_engines_agree_under_nested_ignore_files(project: Path, ctx: ToolContext, args: dict[str, str]) -> None:
    for name, text in NESTED_IGNORES.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    for name in NESTED_FILES:
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        if not (project / name).is_dir():
            (project / name).write_text(f"needle in {name}\n")
    grep_args = GrepArgs(pattern="needle", **args)
    rg, python = search(grep_args, ctx, engine="rg"), search(grep_args, ctx, engine="python")
    assert rg.engine == "rg" and rg.total > 0
    assert [(h.path, h.text) for h in rg.hits] == [(h.path, h.text) for h in python.hits]
