"""Which grammar parses which file, and the tree-sitter queries that read definitions, imports and references.

Grammars come from `tree-sitter-language-pack` (pinned below 1.0: the 1.x releases download grammars
from GitHub at run time, which fails behind a firewall; 0.13 ships them in the wheel).

Capture names shared by every query:
- `@name` with `@def.<kind>` in one pattern: a definition (its name node, its whole node);
- `@import`: an import specifier (a module path, a file path, a header), read by `parse.import_specs`;
- `@ref`: a name the file uses (a call, a type, a constant), for the reference graph;
- `@call.name` + `@call.arg`: a call whose meaning depends on its name (Ruby `require`, Elixir `def`/`alias`).
"""

from __future__ import annotations

from swecli.records import datarecord

PYTHON = """
(class_definition name: (identifier) @name) @def.class
(function_definition name: (identifier) @name) @def.function
(module (assignment left: (identifier) @name) @def.variable)
(import_statement name: (dotted_name) @import)
(import_statement name: (aliased_import name: (dotted_name) @import))
(import_from_statement) @import
(call function: (identifier) @ref)
(call function: (attribute attribute: (identifier) @ref))
"""

_JS_COMMON = """
(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(method_definition name: (property_identifier) @name) @def.method
(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @def.function
(program (lexical_declaration (variable_declarator name: (identifier) @name) @def.variable))
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name) @def.variable)))
(import_statement source: (string (string_fragment) @import))
(export_statement source: (string (string_fragment) @import))
(call_expression function: (identifier) @call.name arguments: (arguments . (string (string_fragment) @call.arg)))
(call_expression function: (identifier) @ref)
(call_expression function: (member_expression property: (property_identifier) @ref))
(new_expression constructor: (identifier) @ref)
"""

JAVASCRIPT = _JS_COMMON + """
(class_declaration name: (identifier) @name) @def.class
"""

TYPESCRIPT = _JS_COMMON + """
(class_declaration name: (type_identifier) @name) @def.class
(abstract_class_declaration name: (type_identifier) @name) @def.class
(interface_declaration name: (type_identifier) @name) @def.interface
(type_alias_declaration name: (type_identifier) @name) @def.type
(enum_declaration name: (identifier) @name) @def.enum
(type_identifier) @ref
"""

GO = """
(function_declaration name: (identifier) @name) @def.function
(method_declaration name: (field_identifier) @name) @def.method
(type_spec name: (type_identifier) @name) @def.type
(source_file (const_declaration (const_spec name: (identifier) @name) @def.constant))
(source_file (var_declaration (var_spec name: (identifier) @name) @def.variable))
(import_spec path: (interpreted_string_literal (interpreted_string_literal_content) @import))
(call_expression function: (identifier) @ref)
(call_expression function: (selector_expression field: (field_identifier) @ref))
(type_identifier) @ref
"""

RUST = """
(function_item name: (identifier) @name) @def.function
(struct_item name: (type_identifier) @name) @def.struct
(enum_item name: (type_identifier) @name) @def.enum
(union_item name: (type_identifier) @name) @def.struct
(trait_item name: (type_identifier) @name) @def.trait
(type_item name: (type_identifier) @name) @def.type
(mod_item name: (identifier) @name) @def.module
(macro_definition name: (identifier) @name) @def.macro
(const_item name: (identifier) @name) @def.constant
(static_item name: (identifier) @name) @def.constant
(use_declaration argument: (_) @import)
(mod_item !body name: (identifier) @import)
(call_expression function: (identifier) @ref)
(call_expression function: (field_expression field: (field_identifier) @ref))
(call_expression function: (scoped_identifier name: (identifier) @ref))
(type_identifier) @ref
"""

JAVA = """
(class_declaration name: (identifier) @name) @def.class
(interface_declaration name: (identifier) @name) @def.interface
(enum_declaration name: (identifier) @name) @def.enum
(record_declaration name: (identifier) @name) @def.class
(annotation_type_declaration name: (identifier) @name) @def.interface
(method_declaration name: (identifier) @name) @def.method
(import_declaration) @import
(method_invocation name: (identifier) @ref)
(type_identifier) @ref
"""

_C_COMMON = """
(function_definition declarator: (function_declarator declarator: (_) @name)) @def.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name)))
  @def.function
(translation_unit (declaration declarator: (function_declarator declarator: (identifier) @name)) @def.function)
(struct_specifier name: (type_identifier) @name body: (_)) @def.struct
(union_specifier name: (type_identifier) @name body: (_)) @def.struct
(enum_specifier name: (type_identifier) @name body: (_)) @def.enum
(type_definition declarator: (type_identifier) @name) @def.type
(preproc_function_def name: (identifier) @name) @def.macro
(preproc_def name: (identifier) @name) @def.macro
(preproc_include path: (_) @import)
(call_expression function: (identifier) @ref)
(type_identifier) @ref
"""

C = _C_COMMON

CPP = _C_COMMON + """
(class_specifier name: (type_identifier) @name body: (_)) @def.class
(namespace_definition name: (namespace_identifier) @name) @def.namespace
(field_declaration_list (field_declaration declarator: (function_declarator declarator: (_) @name)) @def.method)
(call_expression function: (field_expression field: (field_identifier) @ref))
(call_expression function: (qualified_identifier name: (identifier) @ref))
"""

RUBY = """
(class name: (_) @name) @def.class
(module name: (_) @name) @def.module
(method name: (_) @name) @def.method
(singleton_method name: (_) @name) @def.method
(program (assignment left: (constant) @name) @def.constant)
(call method: (identifier) @call.name arguments: (argument_list . (string (string_content) @call.arg)))
(call method: (identifier) @ref)
(constant) @ref
"""

ELIXIR = """
(call target: (identifier) @call.name (arguments . (_) @call.arg))
(call target: (dot right: (identifier) @ref))
(alias) @ref
"""

def split_query(source: str) -> tuple[str, str]:
    """(definitions and imports, references): parse.py compiles them as one query, references last, so one
    walk of the tree finds both and a match's pattern number says which kind it is."""
    lines = source.strip().splitlines()
    refs = [line for line in lines if "@ref" in line]
    return "\n".join(line for line in lines if line not in refs), "\n".join(refs)


QUERIES = {"python": PYTHON, "javascript": JAVASCRIPT, "typescript": TYPESCRIPT, "tsx": TYPESCRIPT, "go": GO,
           "rust": RUST, "java": JAVA, "c": C, "cpp": CPP, "ruby": RUBY, "elixir": ELIXIR}


@datarecord(frozen=True)
class LanguageSpec:
    """A grammar and the file suffixes it parses."""

    name: str
    """The grammar's name in tree-sitter-language-pack."""
    suffixes: tuple[str, ...]


LANGUAGES = (
    LanguageSpec("python", (".py", ".pyi")),
    LanguageSpec("javascript", (".js", ".jsx", ".mjs", ".cjs")),
    LanguageSpec("typescript", (".ts", ".mts", ".cts")),
    LanguageSpec("tsx", (".tsx",)),
    LanguageSpec("go", (".go",)),
    LanguageSpec("rust", (".rs",)),
    LanguageSpec("java", (".java",)),
    LanguageSpec("c", (".c", ".h")),
    LanguageSpec("cpp", (".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".ipp")),
    LanguageSpec("ruby", (".rb", ".rake", ".gemspec")),
    LanguageSpec("elixir", (".ex", ".exs")),
)
BY_SUFFIX = {suffix: spec.name for spec in LANGUAGES for suffix in spec.suffixes}


def language_for(path: str) -> str | None:
    """The grammar for a path (by its suffix), or None for files the map does not parse."""
    dot = path.rfind(".")
    if dot < 0 or "/" in path[dot:]:
        return None
    return BY_SUFFIX.get(path[dot:].lower())
