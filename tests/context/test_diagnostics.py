"""Test runners, compilers and linters as they print: what each output must yield (verbatim lines and
locations), and how the failure evidence names it. The samples are in `samples.py`."""

from __future__ import annotations

import pytest

from swecli.context.diagnostics import scan
from swecli.context.extract import extract_facts
from swecli.context.failures import classify, evidence_line
from swecli.messages import AssistantMessage, ToolCall, ToolMessage
from tests.context import samples as S

# (sample, test results, error lines, some locations it must find)
CASES = {
    "pytest": (S.PYTEST,
               ["FAILED tests/test_cart.py::test_total_with_coupon - assert 3.0 == 1.5",
                "========================= 1 failed, 11 passed in 0.34s ========================="],
               ["E       assert 3.0 == 1.5",
                "E        +  where 3.0 = <bound method Cart.total of <shop.cart.Cart object at 0x7f3a>>()"],
               ["tests/test_cart.py:27"]),
    "unittest": (S.UNITTEST,
                 ["ERROR: test_parse_empty (tests.test_parser.ParserTest.test_parse_empty)",
                  "FAIL: test_parse_pair (tests.test_parser.ParserTest.test_parse_pair)",
                  "Ran 5 tests in 0.004s", "FAILED (failures=1, errors=1)"],
                 ["IndexError: list index out of range",
                  "AssertionError: Lists differ: [('a', 1)] != [('a', '1')]"],
                 ["/home/dev/proj/tests/test_parser.py:18", "/home/dev/proj/proj/parser.py:41"]),
    "jest": (S.JEST,
             ["FAIL  src/sum.test.js", "● sum › adds 1 + 2 to equal 3", "Test Suites: 1 failed, 1 passed, 2 total",
              "Tests:       1 failed, 5 passed, 6 total", "Snapshots:   0 total"],
             [], ["src/sum.test.js:4"]),
    "vitest": (S.VITEST,
               ["FAIL  src/math.test.ts > add > adds numbers", "Test Files  1 failed (1)",
                "Tests  1 failed | 2 passed (3)"],
               ["AssertionError: expected 3 to be 4 // Object.is equality"], ["src/math.test.ts:5"]),
    "mocha": (S.MOCHA,
              ["1) should return the index of a present value", "1 passing (9ms)", "1 failing", "1) Array"],
              ["AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:"], ["test/array.spec.js:9"]),
    "go test": (S.GO_TEST,
                ["--- FAIL: TestAdd (0.00s)", "--- FAIL: TestDiv (0.00s)", "FAIL", "FAIL\texample.com/calc\t0.003s",
                 "ok  \texample.com/calc/util\t0.002s", "FAIL"],
                ["calc_test.go:12: Add(1, 2) = 4; want 3", "calc_test.go:25: Div(1, 0): expected an error, got nil"],
                ["calc_test.go:12", "calc_test.go:25"]),
    "go build": (S.GO_BUILD, [], ["./calc.go:8:2: undefined: sum", "./calc.go:14:6: declared and not used: total"],
                 ["calc.go:8", "calc.go:14"]),
    "cargo test": (S.CARGO_TEST,
                   ["test tests::area_of_circle ... FAILED",
                    "test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; "
                    "finished in 0.00s"],
                   ["thread 'tests::area_of_circle' panicked at src/lib.rs:15:9:", "assertion `left == right` failed",
                    "error: test failed, to rerun pass `--lib`"],
                   ["src/lib.rs:15"]),
    "nextest": (S.NEXTEST,
                ["FAIL [   0.005s] shapes tests::area_of_circle", "test tests::area_of_circle ... FAILED",
                 "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 2 filtered out; finished in 0.00s",
                 "Summary [   0.006s] 2 tests run: 1 passed, 1 failed, 1 skipped",
                 "FAIL [   0.005s] shapes tests::area_of_circle"],
                ["thread 'tests::area_of_circle' panicked at src/lib.rs:15:9:", "assertion `left == right` failed",
                 "error: test run failed"],
                ["src/lib.rs:15"]),
    "ExUnit": (S.EXUNIT, ["1) test greets the world (HelloTest)", "14 doctests, 127 tests, 12 failures"],
               ["Assertion with == failed"], ["test/hello_test.exs:5", "test/hello_test.exs:6"]),
    "Elixir compiler": (S.ELIXIR_COMPILE, [],
                        ["error: undefined function bar/0 (expected Greeter to define such a function or for it to be "
                         "imported, but none are available)",
                         "== Compilation error in file lib/greeter.ex ==",
                         "** (CompileError) lib/greeter.ex: cannot compile module Greeter (errors have been logged)"],
                        ["lib/greeter.ex:3"]),
    "RSpec": (S.RSPEC,
              ["1) Calculator#add returns the sum", "3 examples, 1 failure",
               "rspec ./spec/calculator_spec.rb:5 # Calculator#add returns the sum"],
              ["Failure/Error: expect(calc.add(1, 2)).to eq(4)"], ["spec/calculator_spec.rb:6"]),
    "minitest": (S.MINITEST,
                 ["CalculatorTest#test_add [test/calculator_test.rb:8]:",
                  "3 runs, 3 assertions, 1 failures, 0 errors, 0 skips"],
                 [], ["test/calculator_test.rb:8"]),
    "JUnit via Maven": (S.MAVEN,
                        ["[ERROR] Tests run: 3, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.045 s <<< "
                         "FAILURE! -- in com.example.CalculatorTest",
                         "[ERROR] com.example.CalculatorTest.testAdd -- Time elapsed: 0.008 s <<< FAILURE!",
                         "[ERROR]   CalculatorTest.testAdd:12 expected: <4> but was: <3>",
                         "[ERROR] Tests run: 3, Failures: 1, Errors: 0, Skipped: 0", "[INFO] BUILD FAILURE"],
                        ["org.opentest4j.AssertionFailedError: expected: <4> but was: <3>"],
                        ["CalculatorTest.java:12"]),
    "javac via Maven": (S.MAVEN_COMPILE, [],
                        ["[ERROR] /home/dev/calculator/src/main/java/com/example/Calculator.java:[14,16] "
                         "cannot find symbol"],
                        ["/home/dev/calculator/src/main/java/com/example/Calculator.java:14"]),
    "JUnit via Gradle": (S.GRADLE, ["CalculatorTest > testAdd() FAILED", "3 tests completed, 1 failed",
                                    "BUILD FAILED in 2s"],
                         ["org.opentest4j.AssertionFailedError at CalculatorTest.java:12",
                          "FAILURE: Build failed with an exception."],
                         ["CalculatorTest.java:12"]),
    "PHPUnit": (S.PHPUNIT, ["1) Tests\\CalculatorTest::testAdd", "FAILURES!", "Tests: 3, Assertions: 3, Failures: 1."],
                ["Failed asserting that 3 is identical to 4."], ["/home/dev/calculator/tests/CalculatorTest.php:14"]),
    "dotnet test": (S.DOTNET_TEST,
                    ["Failed Calculator.Tests.CalculatorTests.Add_ReturnsSum [12 ms]",
                     "Failed!  - Failed:     1, Passed:     2, Skipped:     0, Total:     3, Duration: 15 ms - "
                     "Calculator.Tests.dll (net8.0)"],
                    ["Assert.Equal() Failure: Values differ"], ["/src/Calculator.Tests/CalculatorTests.cs:10"]),
    "dotnet build": (S.DOTNET_BUILD, [],
                     ["/src/Calculator/Calculator.cs(9,20): error CS0103: The name 'totl' does not exist in the "
                      "current context [/src/Calculator/Calculator.csproj]", "Build FAILED.",
                      "/src/Calculator/Calculator.cs(9,20): error CS0103: The name 'totl' does not exist in the "
                      "current context [/src/Calculator/Calculator.csproj]"],
                     ["/src/Calculator/Calculator.cs:9"]),
    "tsc": (S.TSC, [],
            ["src/index.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.",
             "src/api/client.ts(41,18): error TS2339: Property 'retries' does not exist on type 'Options'."],
            ["src/index.ts:3", "src/api/client.ts:41"]),
    "tsc --pretty": (S.TSC_PRETTY, [],
                     ["src/index.ts:3:7 - error TS2322: Type 'string' is not assignable to type 'number'.",
                      "Found 1 error in src/index.ts:3"],
                     ["src/index.ts:3"]),
    "rustc": (S.RUSTC, [],
              ["error[E0308]: mismatched types",
               "error: could not compile `demo` (bin \"demo\") due to 1 previous error"],
              ["src/main.rs:4"]),
    "gcc": (S.GCC, [], ["main.c:5:5: error: 'count' undeclared (first use in this function)",
                        "make: *** [Makefile:4: main.o] Error 1"],
            ["main.c:5", "main.c:6"]),
    "clang and ld": (S.CLANG_LINK, [],
                     ["src/util.c:12:10: fatal error: 'config.h' file not found", "1 error generated.",
                      "main.c:(.text+0x13): undefined reference to `init_config'",
                      "clang: error: linker command failed with exit code 1 (use -v to see invocation)"],
                     ["src/util.c:12"]),
    "javac": (S.JAVAC, [], ["src/main/java/com/example/App.java:7: error: cannot find symbol", "1 error"],
              ["src/main/java/com/example/App.java:7"]),
    "mypy": (S.MYPY, [],
             ["src/shop/cart.py:12: error: Incompatible types in assignment (expression has type \"str\", variable "
              "has type \"int\")  [assignment]",
              "src/shop/api.py:8:5: error: Missing return statement  [return]",
              "Found 2 errors in 2 files (checked 14 source files)"],
             ["src/shop/cart.py:12", "src/shop/api.py:8"]),
    "pyright": (S.PYRIGHT, [],
                ["/home/dev/shop/src/shop/cart.py:12:9 - error: Type \"Literal['x']\" is not assignable to declared "
                 "type \"int\"", "1 error, 1 warning, 0 informations"],
                ["/home/dev/shop/src/shop/cart.py:12"]),
    "eslint": (S.ESLINT, [],
               ["/home/dev/web/src/index.js:3:7 error 'unused' is assigned a value but never used no-unused-vars",
                "/home/dev/web/src/util.js:22:15 error 'fetchData' is not defined no-undef",
                "✖ 3 problems (2 errors, 1 warning)"],
               ["/home/dev/web/src/index.js:3", "/home/dev/web/src/index.js:10", "/home/dev/web/src/util.js:22"]),
}

FAILING_RUNS = ["pytest", "unittest", "jest", "vitest", "mocha", "go test", "cargo test", "nextest", "ExUnit", "RSpec",
                "minitest", "JUnit via Maven", "JUnit via Gradle", "PHPUnit", "dotnet test"]
BUILDS = ["go build", "Elixir compiler", "javac via Maven", "dotnet build", "gcc", "clang and ld", "javac", "eslint"]


def keep_last(lines: list[str]) -> list[str]:
    return list(reversed(dict.fromkeys(reversed(lines))))


@pytest.mark.parametrize("name", CASES)
def test_each_tool_output_yields_its_verdicts_failing_tests_errors_and_locations(name: str) -> None:
    output, tests, errors, locations = CASES[name]
    found = scan(output)
    assert found.tests == tests
    assert found.errors == errors
    assert set(locations) <= {f"{path}:{line}" for path, line in found.locations}


@pytest.mark.parametrize("name", CASES)
def test_compaction_facts_carry_them_with_the_command_that_printed_them(name: str) -> None:
    output, tests, errors, locations = CASES[name]
    call = ToolCall(id="c1", name="bash", arguments='{"command": "make test"}')
    facts = extract_facts([AssistantMessage(tool_calls=(call,)),
                           ToolMessage(tool_call_id="c1", name="bash", content=output + "\nexit code 1")])
    assert facts.commands == ["[exit 1] make test"]
    assert facts.test_results == keep_last(tests)  # a repeated line is kept once, where it was last seen
    assert facts.errors == keep_last(errors)
    assert set(locations) <= set(facts.locations)


@pytest.mark.parametrize("name", FAILING_RUNS)
def test_a_failing_run_is_a_test_failure_named_by_its_failing_test_or_verdict(name: str) -> None:
    output, tests, _, _ = CASES[name]
    assert classify("bash", output) == "test_failure"
    assert evidence_line(output, "test_failure") in tests


@pytest.mark.parametrize("name", BUILDS)
def test_a_failing_build_is_a_compile_error_named_by_its_first_diagnostic(name: str) -> None:
    output, _, errors, _ = CASES[name]
    assert classify("bash", output) == "compile"
    assert evidence_line(output, "compile") in errors


@pytest.mark.parametrize("text", [S.A_FILE_BEING_READ, S.NUMBERED_LIST])
def test_text_that_only_mentions_errors_or_numbers_its_lines_yields_nothing(text: str) -> None:
    found = scan(text)
    assert (found.tests, found.errors, found.locations) == ([], [], [])


def test_the_issues_exunit_examples_are_recognized() -> None:
    found = scan("14 doctests, 127 tests, 12 failures\n** (CompileError) lib/app.ex:3: undefined function x/0\n")
    assert found.tests == ["14 doctests, 127 tests, 12 failures"]
    assert found.errors == ["** (CompileError) lib/app.ex:3: undefined function x/0"]
    assert found.locations == [("lib/app.ex", 3)]


def test_frames_inside_the_runtime_or_a_library_are_not_project_locations() -> None:
    call = ToolCall(id="c1", name="bash", arguments='{"command": "npm test"}')
    trace = ("TypeError: x is undefined\n    at run (/app/node_modules/jest-circus/build/run.js:45:9)\n"
             "    at Object.<anonymous> (src/app.test.js:7:3)\n  File \"/usr/lib/python3.11/json/decoder.py\", "
             "line 337, in decode\n")
    facts = extract_facts([AssistantMessage(tool_calls=(call,)), ToolMessage(tool_call_id="c1", name="bash",
                                                                             content=trace)])
    assert facts.locations == ["src/app.test.js:7"]
