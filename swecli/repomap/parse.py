"""One file's facts, read with tree-sitter: its definitions (with lines and enclosing names), the modules or
files it imports (as written, normalized per language), and the names it uses.

`parse_source("python", data)` is pure and picklable in and out, so a cold index can run it in worker
processes (`parse_paths`). Grammars and compiled queries are loaded once per process, on first use.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from swecli.lazy import regex
from swecli.records import datarecord
from swecli.repomap.languages import QUERIES, language_for, split_query

if TYPE_CHECKING:
    from tree_sitter import Node, Parser, Query

MAX_PARSE_BYTES = 1_000_000
"""Larger files (generated code, vendored bundles) are listed but not parsed."""
MAX_REFS = 400
"""Distinct referenced names kept per file: enough for the graph, small in the cache."""

LINKED_KINDS = frozenset({"class", "function", "struct", "type", "interface", "trait", "enum", "module", "constant",
                          "macro", "namespace", "variable"})
"""Definitions a used name is linked to (not methods: `x.get()` does not say whose `get`)."""
_CONTAINERS = frozenset({
    "class_definition", "class_declaration", "abstract_class_declaration", "interface_declaration",
    "class_specifier", "struct_specifier", "namespace_definition", "impl_item", "trait_item", "class", "module",
    "enum_declaration", "record_declaration", "function_definition", "function_declaration", "method_definition",
})
_ELIXIR_DEFS = {"def": "function", "defp": "function", "defmacro": "macro", "defmacrop": "macro",
                "defguard": "function", "defguardp": "function", "defdelegate": "function",
                "defmodule": "module", "defprotocol": "module", "defimpl": "module", "defstruct": "struct"}
_ELIXIR_IMPORTS = frozenset({"alias", "import", "use", "require"})
_RUBY_REQUIRES = {"require": "", "require_relative": "./", "load": ""}
_NAME_TAIL = regex(r"[~A-Za-z_][\w]*(?:[=!?]|[^\w\s]{1,3})?$")


class Symbol(NamedTuple):
    """A definition (a tuple: tens of thousands are loaded from the cache on every warm run)."""

    name: str
    kind: str
    """class, function, method, variable, constant, type, interface, struct, enum, trait, module, macro..."""
    line: int
    end: int
    parent: str = ""
    """The enclosing class, module or function ("" at the top level)."""


@datarecord
class Facts:
    """What one parsed file defines, imports and refers to."""

    language: str
    lines: int = 0
    imports: list[str] = field(default_factory=list)
    """Import specifiers, normalized per language (see `graph.resolve`): `a.b.c`, `..x` (Python relative),
    `./x` (a path relative to the file), `a/b.h`, `github.com/x/y`, `crate::a::b`, `Foo.Bar`."""
    refs: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    """What a reference elsewhere can point at: the file's definitions of LINKED_KINDS, longer than two
    characters (kept beside `refs`, so rebuilding the graph needs no symbols decoded)."""
    error: str = ""
    """Why the file was not parsed (too large, undecodable, no grammar), or ""."""
    _symbols: list[Symbol] | None = field(default=None, repr=False)
    _load: Callable[[], str] | None = field(default=None, repr=False, compare=False)
    """Where the packed symbols come from while they are unread (the cache's symbols.json)."""

    @property
    def symbols(self) -> list[Symbol]:
        """The file's definitions, decoded from the cache on first use."""
        if self._symbols is None:
            self._symbols = unpack_symbols(self._load() if self._load is not None else "")
            self._load = None
        return self._symbols

    @symbols.setter
    def symbols(self, value: list[Symbol]) -> None:
        self._symbols = value
        self._load = None

    def packed(self) -> str:
        """The symbols as the cache stores them, without decoding them when they were never read."""
        if self._symbols is None and self._load is not None:
            return self._load()
        return pack_symbols(self.symbols)


_FIELD, _RECORD = "\t", "\n"  # never inside a name, and two bytes each in JSON


def pack_symbols(symbols: list[Symbol]) -> str:
    """One string per file: a warm run decodes it only for the files it shows."""
    return _RECORD.join(_FIELD.join((s.name, s.kind, str(s.line), str(s.end), s.parent)) for s in symbols)


def unpack_symbols(packed: str) -> list[Symbol]:
    out: list[Symbol] = []
    for record in packed.split(_RECORD) if packed else ():
        name, kind, line, end, parent = record.split(_FIELD)
        out.append(Symbol(name, kind, int(line), int(end), parent))
    return out


_PARSERS: dict[str, tuple[Parser, Query, int]] = {}


def _grammar(language: str) -> tuple[Parser, Query, int]:
    """The parser, the query (definitions and imports, then references) and its first reference pattern."""
    if language not in _PARSERS:
        import tree_sitter_language_pack as pack
        from tree_sitter import Query

        grammar = pack.get_language(language)  # type: ignore[arg-type]
        definitions, references = split_query(QUERIES[language])
        query = Query(grammar, f"{definitions}\n{references}")
        first_ref = next((i for i in range(query.pattern_count) if query.start_byte_for_pattern(i) > len(definitions)),
                         query.pattern_count)
        _PARSERS[language] = (pack.get_parser(language), query, first_ref)  # type: ignore[arg-type]
    return _PARSERS[language]


def parse_source(language: str, data: bytes) -> Facts:
    """Definitions, imports and references of one file's bytes."""
    from tree_sitter import QueryCursor

    facts = Facts(language, lines=data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1))
    facts.symbols = []
    if len(data) > MAX_PARSE_BYTES:
        facts.error = "too large to parse"
        return facts
    parser, query, first_ref = _grammar(language)
    tree = parser.parse(data)
    refs: dict[Any, None] = {}
    # One pass over the tree for everything: walking it is most of a query's cost, so a second query for
    # the references (several per line of code) cost nearly as much as the first.
    for pattern, captures in QueryCursor(query).matches(tree.root_node):
        if pattern >= first_ref:
            refs[captures["ref"][0].text] = None
        else:
            _read_match(language, captures, facts, refs)
    names = [r.decode("utf-8", errors="replace") if isinstance(r, bytes) else r for r in refs]
    facts.refs = list(dict.fromkeys(names))[:MAX_REFS]
    facts.symbols = _dedupe(facts.symbols)
    facts.imports = list(dict.fromkeys(facts.imports))
    facts.names = linked_names(facts.symbols)
    return facts


def linked_names(symbols: list[Symbol]) -> list[str]:
    return sorted({s.name for s in symbols if s.kind in LINKED_KINDS and len(s.name) > 2})


def _dedupe(symbols: list[Symbol]) -> list[Symbol]:
    """One symbol per (name, line): `const f = () => 1` is a function, not also a variable."""
    best: dict[tuple[str, int], Symbol] = {}
    for symbol in symbols:
        key = (symbol.name, symbol.line)
        if key not in best or best[key].kind == "variable":
            best[key] = symbol
    return sorted(best.values(), key=lambda s: (s.line, s.name))


def parse_file(root: Path, rel: str) -> Facts:
    language = language_for(rel)
    if language is None:
        return Facts("", error="no grammar")
    try:
        data = (root / rel).read_bytes()
    except OSError as exc:
        return Facts(language, error=f"unreadable ({exc.strerror or exc})")
    if b"\0" in data[:8192]:
        return Facts(language, error="binary")
    return parse_source(language, data)


def parse_paths(root: str, rels: list[str]) -> list[tuple[str, Facts]]:
    """A batch for a worker process (arguments and results cross the process boundary by pickling)."""
    base = Path(root)
    return [(rel, parse_file(base, rel)) for rel in rels]


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", errors="replace")


def _read_match(language: str, captures: dict[str, list[Node]], facts: Facts, refs: dict[Any, None]) -> None:
    if "import" in captures:
        for node in captures["import"]:
            facts.imports.extend(import_specs(language, node))
        return
    if "call.name" in captures:
        _special_call(language, _text(captures["call.name"][0]), captures["call.arg"][0], facts, refs)
        return
    kind = next((key.removeprefix("def.") for key in captures if key.startswith("def.")), None)
    if kind is not None and "name" in captures:
        _add_symbol(facts, _symbol_name(_text(captures["name"][0])), kind, captures[f"def.{kind}"][0])


def _symbol_name(text: str) -> str:
    """`ns::Class::method` -> `method`, `*ptr` -> `ptr`, `Foo::Bar` (Ruby) -> `Bar`."""
    if text.isidentifier():
        return text  # nearly every name: skip the splitting and the search
    text = " ".join(text.split())
    match = _NAME_TAIL.search(text.split("::")[-1].split(".")[-1])
    return match.group(0) if match else text


def _add_symbol(facts: Facts, name: str, kind: str, node: Node) -> None:
    if not name:
        return
    parent = ""
    up = node.parent
    while up is not None:
        if up.type in _CONTAINERS:
            named = up.child_by_field_name("type" if up.type == "impl_item" else "name")
            if named is not None:
                parent = _symbol_name(_text(named))
                break
        up = up.parent
    if kind == "function" and parent and node.parent is not None and _inside_class(node):
        kind = "method"
    facts.symbols.append(Symbol(name, kind, node.start_point.row + 1, node.end_point.row + 1, parent))


def _inside_class(node: Node) -> bool:
    up = node.parent
    while up is not None:
        if up.type in ("class_definition", "class_declaration", "class_specifier", "impl_item", "class_body"):
            return True
        if up.type in ("function_definition", "function_declaration"):
            return False
        up = up.parent
    return False


def _special_call(language: str, name: str, arg: Node, facts: Facts, refs: dict[Any, None]) -> None:
    if language == "ruby":
        if name in _RUBY_REQUIRES:
            facts.imports.append(_RUBY_REQUIRES[name] + _text(arg))
        else:
            refs[name] = None
    elif language == "elixir":
        _elixir_call(name, arg, facts, refs)
    elif name == "require":  # JavaScript's CommonJS require("x")
        facts.imports.append(_text(arg))
    else:
        refs[name] = None


def _elixir_call(name: str, arg: Node, facts: Facts, refs: dict[Any, None]) -> None:
    if name in _ELIXIR_IMPORTS and arg.type == "alias":
        facts.imports.append(_text(arg))
        return
    kind = _ELIXIR_DEFS.get(name)
    if kind is None:
        refs[name] = None
        return
    target = arg
    if target.type == "binary_operator":  # `def f(x) when guard`
        target = target.child_by_field_name("left") or target
    if target.type == "call":
        target = target.child_by_field_name("target") or target
    if target.type in ("alias", "identifier"):
        definition = arg.parent.parent if arg.parent is not None and arg.parent.parent is not None else arg
        symbol_name = _text(target) if target.type == "alias" else _symbol_name(_text(target))
        _add_symbol(facts, symbol_name, kind, definition)


def import_specs(language: str, node: Node) -> list[str]:
    """The normalized specifiers of one import node (several for `from a import b, c`)."""
    if language == "python" and node.type == "import_from_statement":
        return _python_from(node)
    text = _text(node).strip()
    if language == "java":
        return [_java_import(node)]
    if language in ("c", "cpp"):
        return [text.strip('"<>')]
    if language == "rust":
        return _rust_use(node, text)
    if language == "go" or language in ("javascript", "typescript", "tsx"):
        return [text]
    return [text]


def _python_from(node: Node) -> list[str]:
    module = node.child_by_field_name("module_name")
    base = _text(module).replace(" ", "") if module is not None else ""
    names = [n.child_by_field_name("name") or n if n.type == "aliased_import" else n
             for n in node.children_by_field_name("name")]
    specs = [base]
    joiner = "" if base.endswith(".") else "."
    specs += [base + joiner + _text(n) for n in names if n is not None]
    return specs


def _java_import(node: Node) -> str:
    path = next((c for c in node.named_children if c.type in ("scoped_identifier", "identifier")), None)
    text = _text(path) if path is not None else ""
    wildcard = any(c.type == "asterisk" for c in node.named_children)
    return text + (".*" if wildcard else "")


def _rust_use(node: Node, text: str) -> list[str]:
    if node.type == "identifier" and node.parent is not None and node.parent.type == "mod_item":
        return ["mod " + text]
    head = text.split("{", 1)[0].rstrip(":")
    if node.type == "use_as_clause":
        head = _text(node.child_by_field_name("path") or node)
    return [re.sub(r"\s+", "", head)]

