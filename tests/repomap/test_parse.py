"""Definitions, imports and references of each supported language, read by the real grammars."""

from __future__ import annotations

from swecli.repomap.languages import QUERIES, language_for
from swecli.repomap.parse import Facts, pack_symbols, parse_source, unpack_symbols


def facts(language: str, code: str) -> Facts:
    return parse_source(language, code.encode())


def defs(f: Facts) -> set[tuple[str, str, str]]:
    return {(s.name, s.kind, s.parent) for s in f.symbols}


def test_python_definitions_imports_and_calls() -> None:
    f = facts("python", "from .a import b as c, d\nfrom .. import q\nimport x.y as z\n\nLIMIT = 3\n\n"
                        "class A(B):\n    def f(self):\n        g(1)\n        self.h()\n\n"
                        "def top():\n    def inner():\n        pass\n")
    assert defs(f) == {("LIMIT", "variable", ""), ("A", "class", ""), ("f", "method", "A"),
                       ("top", "function", ""), ("inner", "function", "top")}
    assert f.imports == [".a", ".a.b", ".a.d", "..", "..q", "x.y"]
    assert {"g", "h"} <= set(f.refs)
    a = next(s for s in f.symbols if s.name == "A")
    assert (a.line, a.end) == (7, 10)


def test_javascript_and_typescript() -> None:
    js = facts("javascript", 'import x from "./a";\nconst r = require("./b");\nexport {q} from "./c";\n'
                             "class A { m() { f(); new B(); } }\nfunction h() {}\nconst k = () => 1;\n")
    assert defs(js) >= {("A", "class", ""), ("m", "method", "A"), ("h", "function", ""), ("k", "function", "")}
    assert ("k", "variable", "") not in defs(js)
    assert set(js.imports) == {"./a", "./b", "./c"}
    assert {"f", "B"} <= set(js.refs)
    ts = facts("typescript", "interface I {}\ntype T = number;\nenum E { A }\n"
                             "export class C implements I { m(): T { return f(); } }\n")
    assert defs(ts) >= {("I", "interface", ""), ("T", "type", ""), ("E", "enum", ""), ("C", "class", ""),
                        ("m", "method", "C")}
    assert defs(facts("tsx", "export function App() { return <div/>; }\n")) == {("App", "function", "")}


def test_go_rust_java() -> None:
    go = facts("go", 'package p\nimport (\n "fmt"\n x "github.com/o/r/pkg/util"\n)\n'
                     "type S struct{}\nfunc (s *S) M() { fmt.Println(); F() }\nfunc F() {}\nconst C = 1\n")
    assert defs(go) == {("S", "type", ""), ("M", "method", ""), ("F", "function", ""), ("C", "constant", "")}
    assert go.imports == ["fmt", "github.com/o/r/pkg/util"]
    rust = facts("rust", "use crate::a::b::{C, D};\nmod m;\npub struct S;\nimpl S { fn new() -> Self { S } }\n"
                         "trait T {}\nfn f() { g(); }\nmacro_rules! mm { () => {} }\n")
    assert defs(rust) >= {("S", "struct", ""), ("new", "method", "S"), ("T", "trait", ""), ("f", "function", ""),
                          ("mm", "macro", ""), ("m", "module", "")}
    assert rust.imports == ["crate::a::b", "mod m"]
    java = facts("java", "package a.b;\nimport c.d.E;\nimport f.g.*;\n"
                         "public class A { void m() { n(); new B(); } interface I {} }\n")
    assert defs(java) == {("A", "class", ""), ("m", "method", "A"), ("I", "interface", "A")}
    assert java.imports == ["c.d.E", "f.g.*"]


def test_c_cpp_ruby_elixir() -> None:
    c = facts("c", '#include "a/b.h"\n#include <stdio.h>\nstruct S { int x; };\ntypedef int T;\n'
                   "static int *f(int a) { return g(a); }\nint h(void);\n#define M(x) x\n")
    assert defs(c) == {("S", "struct", ""), ("T", "type", ""), ("f", "function", ""), ("h", "function", ""),
                       ("M", "macro", "")}
    assert c.imports == ["a/b.h", "stdio.h"]
    cpp = facts("cpp", '#include "a.hpp"\nnamespace n { class C { void m(); }; }\nvoid n::C::m() { f(); }\n')
    assert defs(cpp) >= {("n", "namespace", ""), ("C", "class", "n"), ("m", "method", "C"), ("m", "function", "")}
    ruby = facts("ruby", 'require "foo/bar"\nrequire_relative "../baz"\nmodule M\n  class C < D\n'
                         "    def m; x(1); end\n    def self.s; end\n  end\nend\n")
    assert defs(ruby) == {("M", "module", ""), ("C", "class", "M"), ("m", "method", "C"), ("s", "method", "C")}
    assert ruby.imports == ["foo/bar", "./../baz"]
    ex = facts("elixir", "defmodule A.B do\n  alias C.D\n  import E\n  def f(a), do: g(a)\n"
                         "  defp h(x) when x > 1 do\n    D.k(x)\n  end\n  defmacro m(x), do: x\nend\n")
    assert defs(ex) == {("A.B", "module", ""), ("f", "function", ""), ("h", "function", ""), ("m", "macro", "")}
    assert ex.imports == ["C.D", "E"]


def test_every_query_compiles_and_suffixes_map_to_grammars() -> None:
    for language in QUERIES:
        parse_source(language, b"")
    assert (language_for("a/b.tsx"), language_for("x.h"), language_for("lib/x.EX")) == ("tsx", "c", "elixir")
    assert language_for("Makefile") is None and language_for("a.d/b") is None


def test_symbols_survive_the_cache_encoding() -> None:
    f = facts("python", "class A:\n    def b(self):\n        pass\n")
    assert unpack_symbols(pack_symbols(f.symbols)) == f.symbols
    assert unpack_symbols("") == []


def test_oversized_files_are_listed_but_not_parsed() -> None:
    f = parse_source("python", b"x = 1\n" * 200_000)
    assert f.error == "too large to parse" and f.symbols == [] and f.lines == 200_000
