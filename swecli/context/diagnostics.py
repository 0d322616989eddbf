"""What test runners, compilers and linters print, recognized line by line.

Compaction keeps deterministic facts next to a model's summary (`extract.py`); this module finds the
ones a tool's output carries: the verdict of a test run and the tests that failed ("test results"),
the error lines of a failure or a build ("errors"), and the `path:line` locations they point at. Each
ecosystem prints its own shape, so each has its rules:

- tests: pytest, unittest, jest, vitest, mocha, go test, cargo test and nextest, ExUnit, RSpec,
  minitest, JUnit through Maven Surefire and Gradle, PHPUnit, dotnet test;
- diagnostics: tsc, rustc (and cargo), gcc/clang (and ld, make), javac (and Maven's compiler
  plugin), go build/vet, mypy, pyright, eslint, the C# compiler, Elixir, Python tracebacks.

Rules anchor at the start of a line and most name their tool's own wording, so text that merely
mentions an error (a file being read, whose lines start with their numbers) is not taken for one.
The few shapes that are too generic on their own (a numbered `1) name` failure header, used by
mocha, RSpec, minitest, PHPUnit and ExUnit) count only in an output that also holds a test-run
verdict. All rules of a kind are joined into one regular expression, so a line costs a few anchored
matches however many ecosystems are known.
"""

from __future__ import annotations

import functools
import re
from dataclasses import field

from swecli.lazy import regex
from swecli.records import datarecord

MAX_LINE_CHARS = 1_200
"""Longer lines (minified code, data dumps) are not messages: skipped."""

# --- test runs: the verdict -------------------------------------------------------------------------
_VERDICTS = (
    r"=+ .*\b(?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)|no tests ran)\b.* =+\s*$",
    # (pytest)
    r"Ran \d+ tests? in [\d.]+s\s*$",  # unittest
    r"(?:OK|FAILED)(?: \((?:failures|errors|skipped|expected failures|unexpected successes)=[^)]*\))?\s*$",
    r"(?:Tests|Test Suites|Snapshots):\s+(?:\d+ \w+, )*\d+ total\s*$",  # jest
    r"\s*(?:Test Files|Tests)\s+(?:\d+ (?:failed|passed|skipped|todo)\s*\|?\s*)+\(\d+\)\s*$",  # vitest
    r"\s*\d+ (?:passing|failing|pending)(?: \(\d+m?s\))?\s*$",  # mocha
    r"(?:ok|FAIL)\s+\S+\s+(?:[\d.]+s|\(cached\))",  # go test, per package
    r"(?:PASS|FAIL)\s*$",  # go test, the whole run
    r"test result: (?:ok|FAILED)\. \d+ passed; \d+ failed",  # cargo test
    r"\s*Summary \[\s*[\d.]+s\] \d+ tests? run: \d+ passed",  # nextest
    r"(?:\d+ (?:doctests?|propert(?:y|ies)|features?|tests?), )*\d+ (?:doctests?|propert(?:y|ies)|tests?),"
    r" \d+ failures?\b",  # ExUnit
    r"\d+ examples?, \d+ failures?(?:, \d+ pending)?\s*$",  # RSpec
    r"\d+ runs, \d+ assertions, \d+ failures, \d+ errors, \d+ skips\s*$",  # minitest
    r"(?:\[(?:ERROR|INFO|WARNING)\] )?Tests run: \d+, Failures: \d+, Errors: \d+, Skipped: \d+",  # Surefire
    r"(?:\[(?:ERROR|INFO)\] )?BUILD (?:SUCCESS|FAILURE)\s*$",  # Maven
    r"\d+ tests? completed, \d+ failed",  # Gradle
    r"BUILD (?:SUCCESSFUL|FAILED) in \S+",  # Gradle
    r"OK \(\d+ tests?, \d+ assertions?\)\s*$",  # PHPUnit
    r"Tests: \d+, Assertions: \d+.*\.\s*$",  # PHPUnit
    r"(?:FAILURES|ERRORS)!\s*$",  # PHPUnit
    r"(?:Passed|Failed)!\s+- Failed:\s+\d+, Passed:\s+\d+, Skipped:\s+\d+, Total:\s+\d+",  # dotnet test
    r"Total tests: \d+\s*$",  # dotnet test (older)
)

# --- test runs: the tests that failed ---------------------------------------------------------------
_FAILED_TESTS = (
    r"(?:FAILED|ERROR) \S+::\S+",  # pytest
    r"(?:FAIL|ERROR): \S+ \(\S+\)",  # unittest
    r"\s*FAIL\s+\S+\.(?:test|spec)\.[cm]?[jt]sx?\s*$",  # jest, a file
    r"\s*● (?!Console\b).+ › .+",  # jest, a test
    r"\s*FAIL\s+\S+ > .+",  # vitest
    r"\s*--- FAIL: \S+ \([\d.]+s\)",  # go test
    r"test \S+ \.\.\. FAILED\s*$",  # cargo test
    r"\s*FAIL \[\s*[\d.]+s\] .+",  # nextest
    r"rspec \./\S+:\d+ # .+",  # RSpec, the command that reruns it
    r"\S+#test_\S+ \[\S+:\d+\]:\s*$",  # minitest
    r"\[ERROR\]\s+\S+\.\w+:\d+ .+",  # Surefire's results section: Class.method:line message
    r"\[ERROR\] \S+ -- Time elapsed: .+ <<< (?:FAILURE|ERROR)!",  # Surefire, a test
    r"\S+ > .+ FAILED\s*$",  # Gradle
    r"\s*Failed \S+ \[[\d.<> ]+m?s\]\s*$",  # dotnet test
)
_FAILED_TESTS_IN_A_RUN = (
    r"\s*\d+\) test .+ \(\S+\)\s*$",  # ExUnit
    r"\d+\) \S+::\S+\s*$",  # PHPUnit
    r"\s*\d+\) (?!Failure:|Error:)\S.*$",  # RSpec, mocha headers
)

# --- errors: compilers, linters, assertion messages -------------------------------------------------
_ERRORS = (
    r"\s*(?:[\w.$]*(?:Error|Exception|Fault)\b(?: \[\w+\])?(?::|$))",  # Python, JS, Java exceptions
    r"E\s{2,}\S",  # pytest's failure lines
    r"(?:fatal|error|ERROR|FATAL)(?:\[\w+\])?:",  # rustc error[E0308]:, generic error:
    r".*\bcommand not found\b", r".*\bNo such file or directory\b", r"SyntaxError", r"Segmentation fault",
    r"\S+\(\d+,\d+\): error (?:TS|CS)\d+: ",  # tsc, the C# compiler
    r"\S+:\d+:\d+ - error TS\d+: ",  # tsc --pretty
    r"Found \d+ errors? in ",  # tsc and mypy, the count
    r"\S+:\d+:\d+: (?:fatal )?error: ",  # gcc, clang
    r"[\w.+-]+: (?:fatal )?error: ",  # a driver: clang: error: linker command failed
    r".*: undefined reference to ", r"collect2: error: ", r"\d+ errors? generated\.", r"make(?:\[\d+\])?: \*\*\* ",
    r"\S+\.java:\d+: error: ",  # javac
    r"\[ERROR\] \S+\.java:\[\d+,\d+\] ",  # Maven's compiler plugin
    r"\d+ errors?\s*$",  # javac, the count
    r"\.{0,2}/?[\w./-]+\.go:\d+:\d+: ",  # go build, go vet
    r"\S+\.pyi?:\d+:(?:\d+:)? error: ",  # mypy
    r"\s*\S+\.pyi?:\d+:\d+ - error: ",  # pyright
    r"\d+ errors?, \d+ warnings?, \d+ informations?",  # pyright, the count
    r"\s+\d+:\d+\s+error\s+\S",  # eslint (stylish: the file is the line above)
    r"✖ \d+ problems? \(\d+ errors?",  # eslint, the count
    r"\*\* \(\w+(?:\.\w+)*\) ",  # Elixir: ** (CompileError) ...
    r"\s+[\w.$]+(?:Error|Exception) at \S+:\d+",  # Gradle: the exception of a failed test
    r"FAILURE: Build failed", r"Build FAILED\.",  # Gradle, dotnet build
    r"== Compilation error in file ",  # Elixir
    r"thread '.+' panicked at ",  # Rust
    r"panic: ",  # Go
    r"\s*Failure/Error: ",  # RSpec
    r"Failed asserting that ",  # PHPUnit
    r"\s*Assertion with \S+ failed",  # ExUnit
    r"\s*Assert\.\w+\(\) Failure",  # xUnit
    r"\s+\S+_test\.go:\d+: ",  # go test, a failure message
    r"assertion `.+` failed",  # Rust's assert_eq!
)

# --- locations ----------------------------------------------------------------------------------------
_LOCATIONS = regex(
    r"File \"(?P<py>[^\"\n]+)\", line (?P<py_line>\d+)"  # Python tracebacks
    r"|(?P<paren>[\w./\\-]+\.\w{1,8})\((?P<paren_line>\d+),\d+\)"  # tsc, the C# compiler
    r"|(?P<mvn>[\w./-]+\.\w{1,8}):\[(?P<mvn_line>\d+),\d+\]"  # Maven's compiler plugin
    r"|in (?P<cs>\S+\.\w{1,8}):line (?P<cs_line>\d+)"  # .NET stack frames
    r"|(?P<path>/?(?:[\w.@+-]+/)*[\w.+-]+\.[a-z][a-z0-9]{0,7}):(?P<line>\d+)\b"  # path:line[:col]
)
_LOCATION_MARK = regex(r'", line \d|\(\d+,\d+\)|:\[\d|:line \d|\.[a-z][a-z0-9]{0,7}:\d')
"""A piece every match of `_LOCATIONS` holds (one per shape, in its order), so a line without one has no
location. `_LOCATIONS` itself, unanchored, tries each shape at every position of a line and backtracks over
each run of word characters (the path shape's nested repeats): on the shared trajectories' 37,889 output
lines 1.25 s against 0.04 s for this test, which most lines (code, prose, listings) fail."""
_LIBRARY_FRAME = regex(r"\s*at (?:java|javax|jdk|sun|kotlin|org\.junit|org\.opentest4j|org\.apache\.maven|"
                            r"org\.gradle|System)\.")
"""Stack frames inside the runtime or the test framework: their locations say nothing about the project."""
_ESLINT_FILE = regex(r"^(?:/|\.{1,2}/)?[\w./@-]+\.(?:[cm]?[jt]sx?|vue|svelte)\s*$")
_ESLINT_PROBLEM = regex(r"^\s+(\d+):\d+\s+(?:error|warning)\s+\S")


def _join(patterns: tuple[str, ...]) -> re.Pattern[str]:
    return regex("|".join(f"(?:{p})" for p in patterns))


VERDICT = _join(_VERDICTS)
FAILED_TEST = _join(_FAILED_TESTS)
FAILED_TEST_IN_A_RUN = _join(_FAILED_TESTS_IN_A_RUN)
ERROR = _join(_ERRORS)
_ANY_VERDICT = regex("|".join(f"(?:^{p})" for p in _VERDICTS), re.MULTILINE)


@datarecord
class Found:
    """What a tool's output says went wrong: verdicts, errors and where."""

    tests: list[str] = field(default_factory=list)
    """Test-run verdicts and the tests that failed, verbatim."""
    errors: list[str] = field(default_factory=list)
    """Error lines, verbatim."""
    locations: list[tuple[str, int]] = field(default_factory=list)
    """(path, line) pairs, in order of appearance (duplicates included)."""


def scan(text: str) -> Found:
    """Test results, error lines and locations in one tool output (or any text). The same output is scanned
    for the facts and the references of a compaction, and again by the next one when a background summary
    and a compaction without a model call both cover it, or when the digests made ahead of a fold warmed it
(`foldahead.warm`): the last few hundred scans are kept (a 128k window holds ~100 outputs)."""
    tests, errors, locations = _scanned(text)
    return Found(list(tests), list(errors), list(locations))


@functools.lru_cache(maxsize=256)
def _scanned(text: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, int], ...]]:
    found = _scan(text)
    return tuple(found.tests), tuple(found.errors), tuple(found.locations)


def _scan(text: str) -> Found:
    found = Found()
    in_a_run = _ANY_VERDICT.search(text) is not None
    current_file = ""  # eslint and pyright name the file on a line of its own, then its problems
    for line in text.splitlines():
        if len(line) > MAX_LINE_CHARS:
            continue
        stripped = line.strip()
        if _ESLINT_FILE.match(line):
            current_file = stripped
            continue
        problem = _ESLINT_PROBLEM.match(line)
        if problem and current_file:
            # The stylish format names the file once, above its problems: each line gets it back.
            found.locations.append((current_file, int(problem.group(1))))
            stripped = f"{current_file}:{' '.join(stripped.split())}"
        if VERDICT.match(line) or FAILED_TEST.match(line) or (in_a_run and FAILED_TEST_IN_A_RUN.match(line)):
            found.tests.append(stripped)
        elif ERROR.match(line):
            found.errors.append(stripped)
        if not _LIBRARY_FRAME.match(line):
            _locations(line, found.locations)
    return found


def _locations(line: str, into: list[tuple[str, int]]) -> None:
    if _LOCATION_MARK.search(line) is None:
        return  # no location shape can match (most lines of a long output)
    for match in _LOCATIONS.finditer(line):
        groups = match.groupdict()
        for name in ("py", "paren", "mvn", "cs", "path"):
            path = groups[name]
            if path:
                into.append((path.removeprefix("./"), int(groups[f"{name}_line" if name != "path" else "line"])))
                break
