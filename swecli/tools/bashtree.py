"""A command line read with tree-sitter-bash, flattened into the Commands of `swecli/tools/shell.py`.

tree-sitter-bash is the grammar Codex and Gemini CLI read shell commands with; it ships compiled in the
`tree-sitter-language-pack` wheel swecli already depends on, so loading it costs a few milliseconds and
nothing is built or downloaded at run time. It covers what real command lines use: heredocs (quoted or
not, `<<-`), functions, subshells and `{ }` groups, `$(...)`, backquotes and `<(...)` anywhere (in
arithmetic too), arrays, `[[ ]]`, `(( ))`, `case`, `for`/`while`/`until`/`select`, `$'...'` strings.

What the flattening keeps for each simple command: its words after quote removal (`r\\m` is `rm`,
`$'\\x72m'` is `rm`), its assignments and redirections (heredoc text included), the pipeline stages that
feed it, and the directory an earlier `cd`/`pushd` in the line moved to. For the line as a whole: the
functions it defines, its aliases, the literal values it gives variables, and the commands whose output a
variable holds (`for f in $(find .)`, `x=$(curl ...)`, `... | while read f`).

A line with a syntax error (bash would refuse it, or it is not bash) returns None: the caller falls back
to an approximate split.
"""

from __future__ import annotations

import posixpath
import re
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swecli.tools.shell import Command, Function, Redirect, Script, Word

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

_PARSER: Parser | None = None
_LOCK = threading.Lock()
"""A tree-sitter Parser is not safe to share between threads at once (sub-agents run in threads)."""

_SUBSTITUTIONS = ("command_substitution", "process_substitution")
_EXPANSIONS = ("simple_expansion", "expansion")
_CONTINUATION = re.compile(r"(?<!\\)((?:\\\\)*)\\\n")


def read(line: str) -> Script | None:
    """The Script of `line`, or None when tree-sitter finds a syntax error in it."""
    source = _join_continued_lines(line).encode("utf-8", errors="surrogateescape")
    with _LOCK:
        tree = _parser().parse(source)
    root = tree.root_node
    if root.has_error:
        return None
    builder = _Builder(source)
    builder.statements(root, ())
    return Script(line, tuple(builder.commands), tuple(builder.functions), builder.variables,
                  aliases=builder.aliases, computed=builder.computed)


def _parser() -> Parser:
    global _PARSER
    if _PARSER is None:
        from tree_sitter import Language, Parser

        _PARSER = Parser(Language(_bash_grammar()))
    return _PARSER


_BINDING = "tree_sitter_language_pack.bindings.bash"


def _bash_grammar() -> object:
    """The compiled bash grammar from the tree-sitter-language-pack wheel, loaded without importing the
    pack itself: its `__init__` imports three other grammar packages and importlib.resources, which cost
    three times what tree_sitter does, on the first bash call. Falls back to the pack's own API."""
    import importlib.machinery
    import importlib.util
    import sys

    module = sys.modules.get(_BINDING)
    try:
        if module is None:
            spec = importlib.util.find_spec("tree_sitter_language_pack")
            folders = list(spec.submodule_search_locations or []) if spec is not None else []
            path = next(p for folder in folders for p in Path(folder, "bindings").glob("bash.*")
                        if p.suffix in (".so", ".pyd"))
            loader = importlib.machinery.ExtensionFileLoader(_BINDING, str(path))
            module = importlib.util.module_from_spec(importlib.machinery.ModuleSpec(_BINDING, loader, origin=str(path)))
            loader.exec_module(module)
            sys.modules[_BINDING] = module  # the pack, if imported later, reuses it
        return module.language()
    except (ImportError, OSError, StopIteration, AttributeError):
        import tree_sitter_language_pack as pack

        return pack.get_binding("bash")


def _join_continued_lines(line: str) -> str:
    """bash drops a backslash-newline before it reads words (`r\\<newline>m` is `rm`); tree-sitter-bash
    splits the word there instead. Single-quoted text keeps it, as in bash."""
    if "\\\n" not in line:
        return line
    pieces = re.split(r"('[^']*')", line)
    return "".join(p if p.startswith("'") else _CONTINUATION.sub(r"\1", p) for p in pieces)


class _Builder:
    """Walks one tree, collecting Commands in the order bash would meet them."""

    def __init__(self, source: bytes) -> None:
        self.source = source
        self.commands: list[Command] = []
        self.functions: list[Function] = []
        self.variables: dict[str, tuple[str, ...]] = {}
        self.aliases: dict[str, str] = {}
        self.computed: dict[str, tuple[Command, ...]] = {}
        self.cwd = ""
        self.dirs: list[str] = []
        self.arrays: set[str] = set()

    def text(self, node: Node) -> str:
        return self.source[node.start_byte:node.end_byte].decode("utf-8", errors="surrogateescape")

    # -- statements ---------------------------------------------------------------------------------

    def statements(self, node: Node, upstream: tuple[Command, ...]) -> None:
        """Every named child of a block, in order; only the first is fed by `upstream`."""
        for child in node.named_children:
            self.statement(child, upstream)
            upstream = ()

    def statement(self, node: Node, upstream: tuple[Command, ...]) -> None:
        handler = _HANDLERS.get(node.type)
        if handler is not None:
            handler(self, node, upstream)
        elif node.type not in ("comment", "heredoc_body", "heredoc_start", "heredoc_end", "variable_name", "word"):
            self.statements(node, upstream)

    def scoped(self, node: Node, upstream: tuple[Command, ...]) -> None:
        """A subshell: a `cd` inside does not move the rest of the line."""
        saved = (self.cwd, list(self.dirs))
        self.statements(node, upstream)
        self.cwd, self.dirs = saved[0], saved[1]

    def pipeline(self, node: Node, upstream: tuple[Command, ...]) -> None:
        for part in node.named_children:
            start = len(self.commands)
            saved = (self.cwd, list(self.dirs))
            self.statement(part, upstream)
            self.cwd, self.dirs = saved[0], saved[1]  # each stage runs in its own subshell
            upstream = upstream + tuple(self.commands[start:])

    def redirected(self, node: Node, upstream: tuple[Command, ...]) -> None:
        body = node.child_by_field_name("body")
        redirects: list[Redirect] = []
        continuations: list[Node] = []
        for child in node.named_children:
            if child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                redirects.extend(self.redirects(child, continuations))
        if body is not None and body.type == "command":
            command = self.command(body, upstream, tuple(redirects), self.stray_words(node, body))
        elif body is not None and _last_simple(body) is not None:
            # `a && b 2>/dev/null`: tree-sitter hangs the redirection on the list; bash on `b`
            self.statement(body, upstream)
            last = self.commands[-1]
            command = self.commands[-1] = replace(last, words=last.words + tuple(self.stray_words(node, body)),
                                                  redirects=last.redirects + tuple(redirects))
        else:
            if body is not None:
                self.loop_input(body, upstream, redirects)
                self.statement(body, upstream)
            command = Command((), redirects=tuple(redirects), upstream=upstream, cwd=self.cwd)
            self.commands.append(command)
        for continuation in continuations:  # `cat <<EOF | sh`, `cat <<EOF && make`: the rest of the line
            self.statement(continuation, (command,) if continuation.type == "pipeline" else ())

    def stray_words(self, node: Node, body: Node) -> list[Word]:
        """Arguments tree-sitter-bash leaves outside the command: a lone `-` before a redirection
        (`lint - 2>&1`, `python3 - <<EOF`) falls between the nodes, and words after a redirection's
        target (`rm -rf 2>/dev/null /`) land among its destinations. bash passes both to the command."""
        words: list[Word] = []
        cursor = body.end_byte
        for child in node.children:
            if child.end_byte <= body.end_byte:
                continue
            gap = self.source[cursor:child.start_byte].decode("utf-8", errors="surrogateescape")
            words += [Word(re.sub(r"\\(.)", r"\1", token)) for token in gap.split()]
            cursor = child.end_byte
            if child.type == "file_redirect":
                words += [self.word(d) for d in child.children_by_field_name("destination")[1:]]
        return words

    def command(self, node: Node, upstream: tuple[Command, ...], extra: tuple[Redirect, ...] = (),
                stray: list[Word] | None = None) -> Command:
        words: list[Word] = []
        assignments: list[Word] = []
        redirects: list[Redirect] = []
        for group in _touching(node.named_children):
            child = group[0]
            if child.type == "variable_assignment" and not words:
                word = self.assignment(child)
                # `1A=2 git ...`: not a name, so bash runs `1A=2` as the program
                (assignments if re.match(r"[A-Za-z_]\w*=", word.text) else words).append(word)
            elif child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                redirects.extend(self.redirects(child, []))
            elif child.type == "command_name" and child.named_children[0].type == "arithmetic_expansion":
                inner = self.word(child.named_children[0])  # `(( 1 + 2 ))` read as a command named `((...))`
                words += [Word("(("), Word(inner.text[2:-2].strip(), inner.parameters, inner.substituted)]
            else:  # the command_name, then the arguments; `foo`cmd`bar` is one word, in parts
                words.append(self.joined_word([c.named_children[0] if c.type == "command_name" else c
                                               for c in group]))
        command = Command(tuple(words + (stray or [])), tuple(assignments), tuple(redirects) + extra, upstream,
                          cwd=self.cwd)
        self.commands.append(command)
        self.after(command)
        return command

    def joined_word(self, nodes: list[Node]) -> Word:
        parts = [self.word(n) for n in nodes]
        if len(parts) == 1:
            return parts[0]
        return Word("".join(p.text for p in parts), tuple(n for p in parts for n in p.parameters),
                    tuple(c for p in parts for c in p.substituted))

    def after(self, command: Command) -> None:
        """What a command changes for the rest of the line: the directory, aliases, literal variables."""
        name, args = command.name, [a for a in command.args if not a.startswith("-") or a == "-"]
        if name in ("cd", "pushd"):
            if name == "pushd":
                self.dirs.append(self.cwd)
            target = args[0] if args else "~"
            self.cwd = "" if target == "-" else _join(self.cwd, target)
        elif name == "popd":
            self.cwd = self.dirs.pop() if self.dirs else ""
        elif name == "alias":
            for arg in command.args:
                alias, equals, value = arg.partition("=")
                if equals:
                    self.aliases[alias] = value
        elif not command.words:
            self.remember(command.assignments)

    def remember(self, assignments: tuple[Word, ...] | list[Word]) -> None:
        for word in assignments:
            name, _, value = word.text.partition("=")
            if name in self.arrays:
                continue  # `a=(x y)`: assignment() kept the elements
            if word.literal:
                self.variables[name] = (value,)
            elif word.substituted:
                self.computed[name] = word.substituted

    # -- words ----------------------------------------------------------------------------------------

    def word(self, node: Node) -> Word:
        parameters: list[str] = []
        substituted: list[Command] = []
        for part in _parts(node):
            if part.type in _EXPANSIONS:
                parameters.append(_parameter_name(part, self))
            else:
                inner = _Builder(self.source)
                inner.cwd = self.cwd
                inner.statements(part, ())
                substituted.extend(inner.commands)
                self.commands.extend(inner.commands)
                self.functions.extend(inner.functions)
        return Word(self.unquote(node), tuple(parameters), tuple(substituted))

    def assignment(self, node: Node) -> Word:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        prefix = self.text(name) if name is not None else ""
        if value is None:
            return Word(prefix + "=")
        if value.type == "array":
            self.arrays.add(prefix)
            elements = [self.word(e) for e in value.named_children]
            if all(e.literal for e in elements):
                self.variables[prefix] = tuple(e.text for e in elements)
            return Word(f"{prefix}=({' '.join(e.text for e in elements)})",
                        tuple(p for e in elements for p in e.parameters),
                        tuple(c for e in elements for c in e.substituted))
        inner = self.word(value)
        return Word(f"{prefix}={inner.text}", inner.parameters, inner.substituted)

    def unquote(self, node: Node) -> str:
        """The word's text after bash's quote removal; expansions stay as written."""
        kind = node.type
        if kind == "word":
            return re.sub(r"\\(.)", r"\1", self.text(node), flags=re.DOTALL)
        if kind == "raw_string":
            return self.text(node)[1:-1]
        if kind in ("string", "translated_string"):
            inner = self.text(node)[1:-1] if kind == "string" else self.text(node)[2:-1]
            return re.sub(r'\\([\\"$`\n])', lambda m: "" if m[1] == "\n" else m[1], inner)
        if kind == "ansi_c_string":
            return _ansi_c(self.text(node)[2:-1])
        if kind == "concatenation":
            return self._joined(node)
        return self.text(node)

    def _joined(self, node: Node) -> str:
        out: list[str] = []
        cursor = node.start_byte
        for child in node.children:
            out.append(self.source[cursor:child.start_byte].decode("utf-8", errors="surrogateescape"))
            out.append(self.unquote(child))
            cursor = child.end_byte
        return "".join(out)

    def redirects(self, node: Node, continuations: list[Node]) -> list[Redirect]:
        if node.type == "herestring_redirect":
            target = node.named_children[-1] if node.named_children else None
            return [Redirect("<<<", self.word(target) if target is not None else None)]
        if node.type == "heredoc_redirect":
            return self.heredoc(node, continuations)
        return [self.file_redirect(node)]

    def file_redirect(self, node: Node) -> Redirect:
        fd_node = node.child_by_field_name("descriptor")
        destination = node.child_by_field_name("destination")
        op = next((c.type for c in node.children if not c.is_named), ">")
        fd = int(self.text(fd_node)) if fd_node is not None and self.text(fd_node).isdigit() else None
        if destination is None or (op in (">&", "<&") and destination.type == "number") or op.endswith("-"):
            return Redirect(op.rstrip("-"), None, fd)  # a descriptor duplicated or closed: no file
        return Redirect(op, self.word(destination), fd)

    def heredoc(self, node: Node, continuations: list[Node]) -> list[Redirect]:
        op = "<<-" if any(c.type == "<<-" for c in node.children) else "<<"
        body = next((c for c in node.named_children if c.type == "heredoc_body"), None)
        text = self.text(body) if body is not None else ""
        if body is not None:
            self.word(body)  # an unquoted document's $(...) runs too
        lines = text.split("\n")
        if lines and not lines[-1].strip():
            lines = lines[:-1]  # the indentation before the closing delimiter
        document = "\n".join(line.lstrip("\t") if op == "<<-" else line for line in lines)
        found = [Redirect(op, None, None, document + "\n" if lines else "")]
        for child in node.named_children:
            if child.type in ("file_redirect", "herestring_redirect"):
                found.extend(self.redirects(child, continuations))
            elif child.type not in ("heredoc_start", "heredoc_body", "heredoc_end"):
                continuations.append(child)
        return found

    # -- compound statements ----------------------------------------------------------------------------

    def function(self, node: Node, upstream: tuple[Command, ...]) -> None:
        name = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        inner = _Builder(self.source)
        if body is not None:
            inner.statement(body, ())
        background = body is not None and any(c.type == "&" for c in _descendants(body))
        self.functions.append(Function(self.text(name) if name is not None else "", tuple(inner.commands),
                                       background))
        self.functions.extend(inner.functions)

    def for_loop(self, node: Node, upstream: tuple[Command, ...]) -> None:
        variable = node.child_by_field_name("variable")
        values = [self.word(v) for v in node.children_by_field_name("value")]
        if variable is not None and values:
            name = self.text(variable)
            if all(v.literal for v in values):
                self.variables[name] = tuple(v.text for v in values)
            else:
                self.computed[name] = tuple(c for v in values for c in v.substituted)
        body = node.child_by_field_name("body")
        if body is not None:
            self.statement(body, upstream)

    def loop_input(self, body: Node, upstream: tuple[Command, ...], redirects: list[Redirect]) -> None:
        """`find . | while read f` and `while read f; ...; done < <(find .)`: f holds what find prints."""
        if body.type != "while_statement":
            return
        source = upstream or next((r.target.substituted for r in redirects if r.op == "<" and r.target is not None
                                   and r.target.substituted), ())
        condition = body.child_by_field_name("condition") or (body.named_children[0] if body.named_children
                                                               else None)
        if not source or condition is None:
            return
        for part in [condition, *_descendants(condition)]:
            if part.type == "command" and self.text(part).startswith("read"):
                for word in part.named_children[1:]:
                    text = self.text(word)
                    if not text.startswith("-") and re.fullmatch(r"[A-Za-z_]\w*", text):
                        self.computed[text] = tuple(source)

    def while_loop(self, node: Node, upstream: tuple[Command, ...]) -> None:
        self.loop_input(node, upstream, [])
        self.statements(node, upstream)

    def simple(self, node: Node, upstream: tuple[Command, ...]) -> None:
        self.command(node, upstream)

    def declaration(self, node: Node, upstream: tuple[Command, ...]) -> None:
        """`export A=1`, `local x`, `declare -a arr=(...)`, `unset X`: a command whose words are the rest."""
        keyword = self.text(node.children[0]) if node.children else ""
        words = [Word(keyword)]
        for child in node.named_children:
            if child.type == "variable_assignment":
                word = self.assignment(child)
                self.remember([word])
                words.append(word)
            else:
                words.append(self.word(child))
        command = Command(tuple(words), upstream=upstream, cwd=self.cwd)
        self.commands.append(command)

    def assignments(self, node: Node, upstream: tuple[Command, ...]) -> None:
        found = [self.assignment(node)] if node.type == "variable_assignment" else \
            [self.assignment(c) for c in node.named_children if c.type == "variable_assignment"]
        self.commands.append(Command((), tuple(found), upstream=upstream, cwd=self.cwd))
        self.remember(found)

    def test(self, node: Node, upstream: tuple[Command, ...]) -> None:
        """`[[ ... ]]`, `[ ... ]` and `(( ... ))`: no program runs, but substitutions inside do."""
        opener = self.text(node.children[0]) if node.children else "[["
        words = [Word(opener), *(self.word(leaf) for leaf in _operands(node))]
        self.commands.append(Command(tuple(words), upstream=upstream, cwd=self.cwd))

    def case(self, node: Node, upstream: tuple[Command, ...]) -> None:
        value = node.child_by_field_name("value")
        if value is not None:
            self.word(value)
        for item in node.named_children:
            if item.type == "case_item":
                for child in item.named_children:
                    if child.type not in ("word", "extglob_pattern", "concatenation", "raw_string", "string",
                                          "simple_expansion", "expansion", "number"):
                        self.statement(child, ())

    def c_style_for(self, node: Node, upstream: tuple[Command, ...]) -> None:
        for child in node.named_children:
            if child.type == "do_group" or child.type == "compound_statement":
                self.statement(child, upstream)
            else:
                self.word(child)  # the loop's expressions may hold substitutions


_HANDLERS: dict[str, Any] = {
    "command": _Builder.simple,
    "redirected_statement": _Builder.redirected,
    "pipeline": _Builder.pipeline,
    "subshell": _Builder.scoped,
    "function_definition": _Builder.function,
    "for_statement": _Builder.for_loop,
    "c_style_for_statement": _Builder.c_style_for,
    "while_statement": _Builder.while_loop,
    "case_statement": _Builder.case,
    "declaration_command": _Builder.declaration,
    "unset_command": _Builder.declaration,
    "variable_assignment": _Builder.assignments,
    "variable_assignments": _Builder.assignments,
    "test_command": _Builder.test,
}


def _parts(node: Node) -> Iterator[Node]:
    """The expansions and substitutions of a word (itself included), not those nested in a substitution."""
    if node.type in _SUBSTITUTIONS:
        yield node
        return
    if node.type in _EXPANSIONS:
        yield node
    for child in node.named_children:
        yield from _parts(child)


_OPERANDS = frozenset({"word", "string", "raw_string", "concatenation", "simple_expansion", "expansion", "number",
                       "command_substitution", "process_substitution", "test_operator", "ansi_c_string", "regex",
                       "extglob_pattern", "arithmetic_expansion", "translated_string"})


def _operands(node: Node) -> Iterator[Node]:
    """The words of a test expression, in order (`[ -x /usr/bin/rm ]` is `-x` and `/usr/bin/rm`)."""
    for child in node.named_children:
        if child.type in _OPERANDS:
            yield child
        else:
            yield from _operands(child)


def _touching(nodes: list[Node]) -> list[list[Node]]:
    """Runs of nodes with nothing between them: tree-sitter-bash splits `foo`cmd`bar` at the backquote."""
    groups: list[list[Node]] = []
    for node in nodes:
        if groups and groups[-1][-1].end_byte == node.start_byte and node.type not in (
                "file_redirect", "heredoc_redirect", "herestring_redirect", "variable_assignment"):
            groups[-1].append(node)
        else:
            groups.append([node])
    return groups


def _last_simple(node: Node) -> Node | None:
    """The simple command that ends a list or pipeline, or None when a compound statement ends it."""
    while node.type in ("list", "pipeline") and node.named_children:
        node = node.named_children[-1]
    return node if node.type == "command" and node.parent is not None and node.parent.type in (
        "list", "pipeline") else None


def _descendants(node: Node) -> Iterator[Node]:
    for child in node.children:
        yield child
        if child.type not in _SUBSTITUTIONS:
            yield from _descendants(child)


def _parameter_name(node: Node, builder: _Builder) -> str:
    for child in node.named_children:
        if child.type in ("variable_name", "special_variable_name"):
            return builder.text(child)
        if child.type == "subscript":
            name = child.child_by_field_name("name")
            return builder.text(name) if name is not None else "?"
    return "?"


def _join(cwd: str, target: str) -> str:
    if not cwd or target.startswith(("/", "~", "$")):
        return target
    return posixpath.join(cwd, target)


_ANSI_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f",
                 "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _ansi_c(text: str) -> str:
    """The value of bash's `$'...'`: \\n, \\xHH, \\NNN (octal), \\uHHHH and friends decoded."""

    def decode(match: re.Match[str]) -> str:
        escape = match[1]
        if escape[0] in "xuU":
            return chr(int(escape[1:], 16)) if len(escape) > 1 else match[0]
        if escape[0].isdigit():
            return chr(int(escape, 8) % 256)
        return _ANSI_ESCAPES.get(escape, match[0])

    return re.sub(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|.)", decode, text)
