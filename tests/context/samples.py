# ruff: noqa: E501, W291  (the outputs are verbatim: long lines and trailing spaces included)
"""Outputs of test runners, compilers and linters, in the exact shape each tool prints (colours off).

Each sample is what a coding agent's shell tool gets back from one command; the tests in
`test_diagnostics.py` say what must be recognized in it.
"""

from __future__ import annotations

PYTEST = """\
============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.3.3, pluggy-1.5.0
rootdir: /home/dev/shop
collected 12 items

tests/test_cart.py ....F.......                                          [100%]

=================================== FAILURES ===================================
____________________________ test_total_with_coupon ____________________________

    def test_total_with_coupon():
        cart = Cart([Item("pen", 3.0)], coupon="HALF")
>       assert cart.total() == 1.5
E       assert 3.0 == 1.5
E        +  where 3.0 = <bound method Cart.total of <shop.cart.Cart object at 0x7f3a>>()

tests/test_cart.py:27: AssertionError
=========================== short test summary info ============================
FAILED tests/test_cart.py::test_total_with_coupon - assert 3.0 == 1.5
========================= 1 failed, 11 passed in 0.34s =========================
"""

UNITTEST = """\
..F.E
======================================================================
ERROR: test_parse_empty (tests.test_parser.ParserTest.test_parse_empty)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/home/dev/proj/tests/test_parser.py", line 18, in test_parse_empty
    self.assertEqual(parse(""), [])
                     ^^^^^^^^^
  File "/home/dev/proj/proj/parser.py", line 41, in parse
    return tokens[0]
           ~~~~~~^^^
IndexError: list index out of range

======================================================================
FAIL: test_parse_pair (tests.test_parser.ParserTest.test_parse_pair)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/home/dev/proj/tests/test_parser.py", line 12, in test_parse_pair
    self.assertEqual(parse("a=1"), [("a", "1")])
AssertionError: Lists differ: [('a', 1)] != [('a', '1')]

----------------------------------------------------------------------
Ran 5 tests in 0.004s

FAILED (failures=1, errors=1)
"""

JEST = """\
 PASS  src/format.test.js
 FAIL  src/sum.test.js
  ● sum › adds 1 + 2 to equal 3

    expect(received).toBe(expected) // Object.is equality

    Expected: 4
    Received: 3

      3 | test('adds 1 + 2 to equal 3', () => {
    > 4 |   expect(sum(1, 2)).toBe(4);
        |                     ^
      5 | });

      at Object.<anonymous> (src/sum.test.js:4:21)

Test Suites: 1 failed, 1 passed, 2 total
Tests:       1 failed, 5 passed, 6 total
Snapshots:   0 total
Time:        0.512 s, estimated 1 s
Ran all test suites.
"""

VITEST = """\

 ❯ src/math.test.ts (3 tests | 1 failed) 5ms
   × add > adds numbers 3ms
     → expected 3 to be 4 // Object.is equality

⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯

 FAIL  src/math.test.ts > add > adds numbers
AssertionError: expected 3 to be 4 // Object.is equality

- Expected
+ Received

- 4
+ 3

 ❯ src/math.test.ts:5:22
      3| describe('add', () => {
      4|   it('adds numbers', () => {
      5|     expect(add(1, 2)).toBe(4)
       |                      ^
      6|   })
      7| })

⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯[1/1]⎯

 Test Files  1 failed (1)
      Tests  1 failed | 2 passed (3)
   Start at  10:21:32
   Duration  312ms (transform 21ms, setup 0ms, collect 18ms, tests 5ms, environment 0ms, prepare 64ms)
"""

MOCHA = """\


  Array
    #indexOf()
      ✔ should return -1 when the value is not present
      1) should return the index of a present value


  1 passing (9ms)
  1 failing

  1) Array
       #indexOf()
         should return the index of a present value:

      AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:

1 !== 0

      + expected - actual

      -1
      +0

      at Context.<anonymous> (test/array.spec.js:9:14)
      at process.processImmediate (node:internal/timers:476:21)
"""

GO_TEST = """\
--- FAIL: TestAdd (0.00s)
    calc_test.go:12: Add(1, 2) = 4; want 3
--- FAIL: TestDiv (0.00s)
    calc_test.go:25: Div(1, 0): expected an error, got nil
FAIL
FAIL	example.com/calc	0.003s
ok  	example.com/calc/util	0.002s
FAIL
"""

GO_BUILD = """\
# example.com/calc
./calc.go:8:2: undefined: sum
./calc.go:14:6: declared and not used: total
"""

CARGO_TEST = """\
   Compiling shapes v0.1.0 (/home/dev/shapes)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.61s
     Running unittests src/lib.rs (target/debug/deps/shapes-3c1f0e6d2a9b7c41)

running 3 tests
test tests::area_of_square ... ok
test tests::area_of_circle ... FAILED
test tests::slow_one ... ignored

failures:

---- tests::area_of_circle stdout ----
thread 'tests::area_of_circle' panicked at src/lib.rs:15:9:
assertion `left == right` failed
  left: 3
 right: 4
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    tests::area_of_circle

test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s

error: test failed, to rerun pass `--lib`
"""

NEXTEST = """\
    Starting 3 tests across 1 binary (1 test skipped)
        PASS [   0.004s] shapes tests::area_of_square
        FAIL [   0.005s] shapes tests::area_of_circle

--- STDOUT:              shapes tests::area_of_circle ---

running 1 test
test tests::area_of_circle ... FAILED

failures:

failures:
    tests::area_of_circle

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 2 filtered out; finished in 0.00s


--- STDERR:              shapes tests::area_of_circle ---
thread 'tests::area_of_circle' panicked at src/lib.rs:15:9:
assertion `left == right` failed
  left: 3
 right: 4

------------
     Summary [   0.006s] 2 tests run: 1 passed, 1 failed, 1 skipped
        FAIL [   0.005s] shapes tests::area_of_circle
error: test run failed
"""

EXUNIT = """\
Running ExUnit with seed: 423157, max_cases: 16

...........

  1) test greets the world (HelloTest)
     test/hello_test.exs:5
     Assertion with == failed
     code:  assert Hello.hello() == :world2
     left:  :world
     right: :world2
     stacktrace:
       test/hello_test.exs:6: (test)

..........
Finished in 0.08 seconds (0.05s async, 0.03s sync)
14 doctests, 127 tests, 12 failures

Randomized with seed 423157
"""

ELIXIR_COMPILE = """\
Compiling 3 files (.ex)
error: undefined function bar/0 (expected Greeter to define such a function or for it to be imported, but none are available)
  │
3 │   def greet, do: bar()
  │                  ^^^
  │
  └─ lib/greeter.ex:3:18: Greeter.greet/0


== Compilation error in file lib/greeter.ex ==
** (CompileError) lib/greeter.ex: cannot compile module Greeter (errors have been logged)
    (elixir 1.16.1) expanding macro: Kernel.def/2
"""

RSPEC = """\
..F

Failures:

  1) Calculator#add returns the sum
     Failure/Error: expect(calc.add(1, 2)).to eq(4)

       expected: 4
            got: 3

       (compared using ==)
     # ./spec/calculator_spec.rb:6:in `block (3 levels) in <top (required)>'

Finished in 0.01234 seconds (files took 0.08 seconds to load)
3 examples, 1 failure

Failed examples:

rspec ./spec/calculator_spec.rb:5 # Calculator#add returns the sum
"""

MINITEST = """\
Run options: --seed 42

# Running:

.F.

Finished in 0.001234s, 2431.1183 runs/s, 2431.1183 assertions/s.

  1) Failure:
CalculatorTest#test_add [test/calculator_test.rb:8]:
Expected: 4
  Actual: 3

3 runs, 3 assertions, 1 failures, 0 errors, 0 skips
"""

MAVEN = """\
[INFO] -------------------------------------------------------
[INFO]  T E S T S
[INFO] -------------------------------------------------------
[INFO] Running com.example.CalculatorTest
[ERROR] Tests run: 3, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.045 s <<< FAILURE! -- in com.example.CalculatorTest
[ERROR] com.example.CalculatorTest.testAdd -- Time elapsed: 0.008 s <<< FAILURE!
org.opentest4j.AssertionFailedError: expected: <4> but was: <3>
	at org.junit.jupiter.api.AssertionFailureBuilder.build(AssertionFailureBuilder.java:151)
	at com.example.CalculatorTest.testAdd(CalculatorTest.java:12)

[INFO] 
[INFO] Results:
[INFO] 
[ERROR] Failures: 
[ERROR]   CalculatorTest.testAdd:12 expected: <4> but was: <3>
[INFO] 
[ERROR] Tests run: 3, Failures: 1, Errors: 0, Skipped: 0
[INFO] 
[INFO] ------------------------------------------------------------------------
[INFO] BUILD FAILURE
[INFO] ------------------------------------------------------------------------
"""

MAVEN_COMPILE = """\
[INFO] --- compiler:3.11.0:compile (default-compile) @ calculator ---
[INFO] Compiling 4 source files with javac [debug target 17] to target/classes
[INFO] -------------------------------------------------------------
[ERROR] COMPILATION ERROR : 
[INFO] -------------------------------------------------------------
[ERROR] /home/dev/calculator/src/main/java/com/example/Calculator.java:[14,16] cannot find symbol
  symbol:   variable totl
  location: class com.example.Calculator
[INFO] 1 error
"""

GRADLE = """\
> Task :compileJava UP-TO-DATE
> Task :test FAILED

CalculatorTest > testAdd() FAILED
    org.opentest4j.AssertionFailedError at CalculatorTest.java:12

3 tests completed, 1 failed

FAILURE: Build failed with an exception.

* What went wrong:
Execution failed for task ':test'.
> There were failing tests. See the report at: file:///home/dev/calculator/build/reports/tests/test/index.html

BUILD FAILED in 2s
4 actionable tasks: 1 executed, 3 up-to-date
"""

PHPUNIT = """\
PHPUnit 10.5.3 by Sebastian Bergmann and contributors.

Runtime:       PHP 8.3.0

.F.                                                                 3 / 3 (100%)

Time: 00:00.012, Memory: 8.00 MB

There was 1 failure:

1) Tests\\CalculatorTest::testAdd
Failed asserting that 3 is identical to 4.

/home/dev/calculator/tests/CalculatorTest.php:14

FAILURES!
Tests: 3, Assertions: 3, Failures: 1.
"""

DOTNET_TEST = """\
  Determining projects to restore...
  All projects are up-to-date for restore.
  Calculator.Tests -> /src/Calculator.Tests/bin/Debug/net8.0/Calculator.Tests.dll
Test run for /src/Calculator.Tests/bin/Debug/net8.0/Calculator.Tests.dll (.NETCoreApp,Version=v8.0)
Starting test execution, please wait...
A total of 1 test files matched the specified pattern.
  Failed Calculator.Tests.CalculatorTests.Add_ReturnsSum [12 ms]
  Error Message:
   Assert.Equal() Failure: Values differ
Expected: 4
Actual:   3
  Stack Trace:
     at Calculator.Tests.CalculatorTests.Add_ReturnsSum() in /src/Calculator.Tests/CalculatorTests.cs:line 10
   at System.RuntimeMethodHandle.InvokeMethod(Object target, Void** arguments, Signature sig, Boolean isConstructor)

Failed!  - Failed:     1, Passed:     2, Skipped:     0, Total:     3, Duration: 15 ms - Calculator.Tests.dll (net8.0)
"""

DOTNET_BUILD = """\
  Determining projects to restore...
  All projects are up-to-date for restore.
/src/Calculator/Calculator.cs(9,20): error CS0103: The name 'totl' does not exist in the current context [/src/Calculator/Calculator.csproj]

Build FAILED.

/src/Calculator/Calculator.cs(9,20): error CS0103: The name 'totl' does not exist in the current context [/src/Calculator/Calculator.csproj]
    0 Warning(s)
    1 Error(s)
"""

TSC = """\
src/index.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.
src/api/client.ts(41,18): error TS2339: Property 'retries' does not exist on type 'Options'.
"""

TSC_PRETTY = """\
src/index.ts:3:7 - error TS2322: Type 'string' is not assignable to type 'number'.

3 const count: number = "3";
        ~~~~~


Found 1 error in src/index.ts:3

"""

RUSTC = """\
   Compiling demo v0.1.0 (/home/dev/demo)
error[E0308]: mismatched types
 --> src/main.rs:4:18
  |
4 |     let x: i32 = "hello";
  |            ---   ^^^^^^^ expected `i32`, found `&str`
  |            |
  |            expected due to this

For more information about this error, try `rustc --explain E0308`.
error: could not compile `demo` (bin "demo") due to 1 previous error
"""

GCC = """\
gcc -Wall -c main.c -o main.o
main.c: In function 'main':
main.c:5:5: error: 'count' undeclared (first use in this function)
    5 |     count = 3;
      |     ^~~~~
main.c:5:5: note: each undeclared identifier is reported only once for each function it appears in
main.c:6:9: warning: unused variable 'total' [-Wunused-variable]
    6 |     int total;
      |         ^~~~~
make: *** [Makefile:4: main.o] Error 1
"""

CLANG_LINK = """\
clang -o app main.o util.o
src/util.c:12:10: fatal error: 'config.h' file not found
   12 | #include "config.h"
      |          ^~~~~~~~~~
1 error generated.
/usr/bin/ld: main.o: in function `main':
main.c:(.text+0x13): undefined reference to `init_config'
clang: error: linker command failed with exit code 1 (use -v to see invocation)
"""

JAVAC = """\
src/main/java/com/example/App.java:7: error: cannot find symbol
        int y = compute(x);
                ^
  symbol:   method compute(int)
  location: class App
1 error
"""

MYPY = """\
src/shop/cart.py:12: error: Incompatible types in assignment (expression has type "str", variable has type "int")  [assignment]
src/shop/cart.py:30: note: Revealed type is "builtins.int"
src/shop/api.py:8:5: error: Missing return statement  [return]
Found 2 errors in 2 files (checked 14 source files)
"""

PYRIGHT = """\
/home/dev/shop/src/shop/cart.py
  /home/dev/shop/src/shop/cart.py:12:9 - error: Type "Literal['x']" is not assignable to declared type "int"
    "Literal['x']" is not assignable to "int" (reportAssignmentType)
  /home/dev/shop/src/shop/cart.py:20:5 - warning: Import "yaml" could not be resolved from source (reportMissingModuleSource)
1 error, 1 warning, 0 informations 
"""

ESLINT = """\

/home/dev/web/src/index.js
   3:7   error    'unused' is assigned a value but never used  no-unused-vars
  10:1   warning  Unexpected console statement                no-console

/home/dev/web/src/util.js
  22:15  error  'fetchData' is not defined  no-undef

✖ 3 problems (2 errors, 1 warning)
"""

A_FILE_BEING_READ = """\
     1\timport re
     2\t
     3\tERROR: str = "error: this is a template, not an error"
     4\tdef check(line):
     5\t    # FAILED (failures=1) is what unittest prints
     6\t    return "1 passed" in line
"""

NUMBERED_LIST = """\
Plan:
1) read the parser
2) fix the off-by-one in tokenize
3) run the tests
"""
