"""Inline code handed to an interpreter (`python3 -c`, `python3 - <<EOF`, `perl -e`, `node -e`, ...),
judged by what it deletes, overwrites or runs; part of the guard.

Python is parsed with `ast`. Calls to `shutil.rmtree`, `os.remove`/`unlink`, `Path(...).unlink()`,
`Path(...).write_text()`, `open(..., "w")`, `os.system` and `subprocess.*` are resolved when their
path or command is built from literals (`"~"`, `Path.home()`, `os.environ["HOME"]`, `os.path.join`,
`/`, names assigned a literal, loop variables over `Path.home().iterdir()`, `os.listdir(...)` or `glob`)
and checked as the equivalent shell command would be; a path computed at run time passes (in the 962
commands of the real sessions bench/guard_bench.py reads, that is `tempfile.mkdtemp()` 9 times, never a
home or root). Other languages are scanned for their delete and exec primitives: the home directory as each
spells it (`$ENV{HOME}`, `Dir.home`, `os.homedir()`, `process.env.HOME`, `getenv("HOME")`) reads as `~`,
the path each delete is given is evaluated when it is literals joined with `+`, `.` or a path join, and
the string literals an exec runs are checked as shell commands.
"""

from __future__ import annotations

import ast
import posixpath
import re
import shlex
from collections.abc import Callable, Iterator

from swecli.tools.protected import Danger, delete_danger, write_danger
from swecli.tools.shell import Command, stdin_text
from swecli.tools.targets import repository

ShellReason = Callable[[str], str]

_CODE_FLAGS = {"python": ("-c",), "perl": ("-e", "-E"), "ruby": ("-e",), "node": ("-e", "--eval", "-p", "--print"),
               "nodejs": ("-e", "--eval", "-p", "--print"), "php": ("-r",), "lua": ("-e",), "deno": ("eval",),
               "bun": ("-e", "--eval"), "Rscript": ("-e",)}
_VALUE_FLAGS = {"-W", "-X", "-I", "-M", "-r", "--require", "-i"}
AWKS = frozenset({"awk", "gawk", "mawk", "nawk"})
"""awk runs shell commands with `system()` and `"cmd" | getline`; its program is its first operand."""
_RUN = {"system", "popen", "run", "call", "check_call", "check_output", "Popen", "getoutput", "getstatusoutput",
        "spawn", "execvp", "execv", "execl", "execlp"}
_FILE_DELETE = {"remove", "unlink", "removedirs"}
_FILE_WRITE = {"write_text", "write_bytes"}


def interpreter_danger(command: Command, shell_reason: ShellReason) -> str:
    """Why the interpreter's inline code is dangerous, or "" (also when there is no inline code)."""
    code = inline_code(command)
    if not code:
        return ""
    if command.name.startswith("python"):
        reason = python_danger(code, shell_reason)
    else:
        reason = script_text_danger(code, shell_reason)
    return f"inline {command.name} code: {reason}" if reason else ""


def inline_code(command: Command) -> str | None:
    """The program text given on the command line (`-c`, `-e`) or on stdin (`python3 -`, a heredoc)."""
    if command.name in AWKS:
        return _awk_program(list(command.args))
    family = "python" if command.name.startswith("python") else command.name
    flags = _CODE_FLAGS.get(family, ())
    args = list(command.args)
    pieces: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        attached = next((f for f in flags if arg.startswith(f) and len(arg) > len(f) and not f.startswith("--")), None)
        if (arg in flags or _cluster_ending_in_code_flag(arg, flags)) and i + 1 < len(args):
            pieces.append(args[i + 1])
            i += 2
            continue
        if attached is not None:
            pieces.append(arg[len(attached):])
        elif arg == "-m" or not arg.startswith("-") or arg == "-":
            break  # a module, a script file, or `-` (stdin): the rest are the program's own arguments
        i += 2 if arg in _VALUE_FLAGS else 1
    if pieces:
        return "\n".join(pieces)
    operand = args[i] if i < len(args) else None
    return stdin_text(command) if operand in (None, "-") else None


def _awk_program(args: list[str]) -> str | None:
    """awk's program: its first operand, unless `-f FILE` names one (`awk 'BEGIN{system("rm -rf ~")}'`)."""
    items = iter(args)
    for arg in items:
        if arg in ("-f", "--file") or arg.startswith("-f"):
            return None
        if arg in ("-F", "-v", "--assign", "--field-separator"):
            next(items, None)
        elif arg == "--" or not arg.startswith("-"):
            return next(items, None) if arg == "--" else arg
    return None


def _cluster_ending_in_code_flag(arg: str, flags: tuple[str, ...]) -> bool:
    """`python3 -uc CODE`, `perl -ne CODE`: short options run together, the last one taking the code."""
    letters = {f[1] for f in flags if len(f) == 2}
    return arg.startswith("-") and not arg.startswith("--") and len(arg) > 2 and arg[1:].isalpha() and \
        arg[-1] in letters


# -- Python ------------------------------------------------------------------------------------------

def python_danger(code: str, shell_reason: ShellReason) -> str:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return script_text_danger(code, shell_reason)
    known: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = _value(node.value, known)
            if value is not None:
                known[node.targets[0].id] = value
    for node in ast.walk(tree):
        if isinstance(node, ast.For | ast.comprehension) and isinstance(node.target, ast.Name):
            listed = _listed(node.iter, known)
            if listed is not None:
                known[node.target.id] = listed
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            reason = _call_reason(node, known, shell_reason)
            if reason:
                return reason
    return ""


def _listed(node: ast.expr, known: dict[str, str]) -> str | None:
    """What a loop over a directory listing visits: `Path.home().iterdir()` and `glob.glob('~/*')` give
    paths (`~/*`), `os.listdir(d)` gives names in d (`*`, joined back to d by the loop's body)."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name in ("iterdir", "glob", "rglob") and isinstance(func, ast.Attribute) and not (
            isinstance(func.value, ast.Name) and func.value.id == "glob"):
        base = _value(func.value, known)
        return posixpath.join(base, "*") if base is not None else None
    argument = _value(node.args[0], known) if node.args else "."
    if name in ("glob", "iglob") and argument is not None:
        return argument
    if name in ("listdir", "scandir") and argument is not None:
        return "*" if name == "listdir" else posixpath.join(argument, "*")
    return None


def _call_reason(call: ast.Call, known: dict[str, str], shell_reason: ShellReason) -> str:
    func = call.func
    attr = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    on_path = isinstance(func, ast.Attribute) and (not isinstance(func.value, ast.Name) or func.value.id in known)
    target = _value(func.value, known) if on_path and isinstance(func, ast.Attribute) else (
        _value(call.args[0], known) if call.args else None)
    if attr == "rmtree":
        # A path computed at run time passes: in real sessions it is nearly always a tempfile.mkdtemp().
        danger = (delete_danger(target) or repository(target)) if target is not None else None
        return f"recursive delete of {danger.what}" if danger else ""
    if attr in _FILE_DELETE | _FILE_WRITE or (attr == "open" and _writes(call)):
        danger = write_danger(target) if target is not None else None
        return f"{'deletes' if attr in _FILE_DELETE else 'writes to'} {danger.what}" if danger else ""
    if attr in _RUN and call.args:
        return _run_reason(call.args[0], known, shell_reason)
    return ""


def _writes(call: ast.Call) -> bool:
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and bool(set(mode.value) & set("wax+"))


def _run_reason(arg: ast.expr, known: dict[str, str], shell_reason: ShellReason) -> str:
    text = _value(arg, known)
    if text is None and isinstance(arg, ast.List | ast.Tuple):
        words = [_value(e, known) for e in arg.elts]
        text = shlex.join(w for w in words if w is not None) if None not in words else None
    return shell_reason(text) if text else ""


def _value(node: ast.expr, known: dict[str, str]) -> str | None:
    """The string a path or command expression evaluates to, when literals decide it."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, ast.Subscript):  # os.environ["HOME"]
        return "~" if _constant(node.slice) == "HOME" else None
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left, known), _value(node.right, known)
        if left is None or right is None:
            return None
        return posixpath.join(left, right) if isinstance(node.op, ast.Div) else left + right
    if isinstance(node, ast.JoinedStr):
        parts = [_value(v.value if isinstance(v, ast.FormattedValue) else v, known) for v in node.values]
        return "".join(p for p in parts if p is not None) if None not in parts else None
    if isinstance(node, ast.Call):
        return _call_value(node, known)
    return None


def _call_value(call: ast.Call, known: dict[str, str]) -> str | None:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    args = [_value(a, known) for a in call.args]
    if name in ("home",):
        return "~"
    if name in ("getcwd", "cwd"):
        return "."
    if name in ("getenv", "get") and args[:1] == ["HOME"]:
        return "~"
    if name == "join" and args and None not in args:
        return posixpath.join(*[a for a in args if a is not None])
    if name == "joinpath" and isinstance(func, ast.Attribute):
        base = _value(func.value, known)
        return posixpath.join(base, *[a for a in args if a is not None]) if base is not None and None not in args \
            else None
    if name in ("expanduser", "resolve", "absolute", "abspath", "realpath", "normpath", "fspath", "str", "Path",
                "PurePath", "PosixPath"):
        if args:
            return args[0]
        if isinstance(func, ast.Attribute) and not isinstance(func.value, ast.Name):
            return _value(func.value, known)  # Path("~").expanduser()
        return "." if name in ("Path", "PurePath", "PosixPath") else None
    return None


def _constant(node: ast.expr) -> object:
    return node.value if isinstance(node, ast.Constant) else None


# -- Perl, Ruby, Node, PHP, ... ---------------------------------------------------------------------------

_DELETE_TREE = re.compile(r"\b(?:rmtree|remove_tree|rm_rf|rm_r|rimraf|rmSync|rmdirSync|removeSync|unlink_r|"
                          r"remove_dir|remove_entry(?:_secure)?|emptyDirSync|emptyDir)\b|\bfs(?:\.promises)?\.rm\b|"
                          r"\bfsp?\.rm\b|\brmdir\b")
_DELETE_FILE = re.compile(r"\b(?:unlink|unlinkSync|remove|delete|rm)\b")
_EXEC = re.compile(r"\b(?:system|exec|execSync|spawnSync|spawn|popen|shell_exec|passthru|os\.execute)\b|`|%x")
_LITERAL = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"")
_HOME = re.compile(
    r"\$ENV\{\s*['\"]?HOME['\"]?\s*\}"  # Perl
    r"|File::HomeDir->my_home|\(getpwuid\(\$<\)\)\[7\]"
    r"|ENV\[\s*['\"]HOME['\"]\s*\]|ENV\.fetch\(\s*['\"]HOME['\"]\s*\)|Dir\.home\b(?:\(\))?"  # Ruby
    r"|File\.expand_path\(\s*['\"]~['\"]\s*\)|Etc\.getpwuid(?:\([^)]*\))?\.dir"
    r"|(?:require\(\s*['\"](?:node:)?os['\"]\s*\)|\bos)\.homedir\(\)"  # Node
    r"|process\.env(?:\.HOME|\[\s*['\"]HOME['\"]\s*\])|Deno\.env\.get\(\s*['\"]HOME['\"]\s*\)"
    r"|\bgetenv\(\s*['\"]HOME['\"]\s*\)|\$_SERVER\[\s*['\"]HOME['\"]\s*\]"  # PHP, Lua, C-likes
    r"|os\.getenv\(\s*['\"]HOME['\"]\s*\)")
"""How the common scripting languages spell the home directory: read as the literal '~'."""
_JOIN = re.compile(r"^(?:path\.(?:join|resolve)|File\.join|catfile|catdir|join_paths?)\s*\((.*)\)$", re.DOTALL)


def script_text_danger(code: str, shell_reason: ShellReason) -> str:
    """Delete and exec primitives in code that is not parsed: the path each delete is given (literals,
    the home directory however it is spelled, joined with `+`, `.`, `path.join`) and the command each
    exec runs are checked."""
    code = _HOME.sub("'~'", code)
    for match in _DELETE_TREE.finditer(code):
        danger = _argument_danger(code, match.end(), delete_danger)
        if danger is not None:
            return f"deletes {danger.what}"
    for match in _DELETE_FILE.finditer(code):
        danger = _argument_danger(code, match.end(), write_danger)
        if danger is not None:
            return f"deletes {danger.what}"
    if _EXEC.search(code):
        for literal in _literals(code):
            reason = shell_reason(literal)
            if reason:
                return reason
    return ""


def _argument_danger(code: str, start: int, classify: Callable[[str], Danger | None]) -> Danger | None:
    argument = _first_argument(code, start)
    if argument is None:
        return None
    value = _path_value(argument)
    if value is not None:
        return classify(value)
    return next((d for d in (classify(v) for v in _literals(argument)) if d is not None), None)


def _first_argument(code: str, start: int) -> str | None:
    """The first argument of the call whose name ends at `start`: `rmtree(X, ...)`, Perl's `rmtree X;`."""
    rest = code[start:].lstrip()
    if rest.startswith("("):
        end = next((i for i, char, depth in _unquoted(rest) if char in ")]}" and depth == 0), None)
        return _split_top_level(rest[1:end])[0] if end is not None else None
    match = re.match(r"([^;\n]+)", rest)  # Perl and Ruby calls without parentheses
    return _split_top_level(match[1])[0] if match and not rest.startswith(("=", ".", ":")) else None


def _split_top_level(text: str) -> list[str]:
    """`a, f(b, c), "d,e"` -> `a`, `f(b, c)`, `"d,e"`."""
    cuts = [i for i, char, depth in _unquoted(text) if char == "," and depth == 0]
    bounds = zip([-1, *cuts], [*cuts, len(text)], strict=True)
    return [text[a + 1:b].strip() for a, b in bounds]


def _unquoted(text: str) -> Iterator[tuple[int, str, int]]:
    """(index, char, bracket depth after it) for each character outside string literals."""
    depth, quote = 0, ""
    for i, char in enumerate(text):
        if quote:
            quote = "" if char == quote and text[i - 1] != "\\" else quote
            continue
        if char in "'\"`":
            quote = char
            continue
        depth += (char in "([{") - (char in ")]}")
        yield i, char, depth


def _path_value(expression: str) -> str | None:
    """The string an argument evaluates to, when it is literals joined by `+`/`.` or a path join."""
    expression = expression.strip()
    joined = _JOIN.match(expression)
    if joined:
        parts = [_path_value(p) for p in _split_top_level(joined[1])]
        return posixpath.join(*[p for p in parts if p is not None]) if parts and None not in parts else None
    pieces = re.split(r"\s*(?:\+|\.(?=\s*['\"]))\s*", expression)
    values = []
    for piece in pieces:
        literal = _LITERAL.fullmatch(piece)
        if literal is None:
            return None
        values.append(literal[1] if literal[1] is not None else literal[2])
    return "".join(values) if values else None


def _literals(code: str) -> list[str]:
    return [m[1] if m[1] is not None else m[2] for m in _LITERAL.finditer(code)]
