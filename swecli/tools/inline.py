"""Inline code handed to an interpreter (`python3 -c`, `python3 - <<EOF`, `perl -e`, `node -e`, ...),
judged by what it deletes, overwrites or runs; part of the guard.

Python is parsed with `ast`. Calls to `shutil.rmtree`, `os.remove`/`unlink`, `Path(...).unlink()`,
`Path(...).write_text()`, `open(..., "w")`, `os.system` and `subprocess.*` are resolved when their
path or command is built from literals (`"~"`, `Path.home()`, `os.environ["HOME"]`, `os.path.join`,
`/`, names assigned a literal) and checked as the equivalent shell command would be; a path computed
at run time passes (in the 962 commands of the real sessions bench/guard_bench.py reads, that is
`tempfile.mkdtemp()` 9 times, never a home or root). Other languages are scanned for their delete and exec
primitives, with the string literals around them checked the same way.
"""

from __future__ import annotations

import ast
import posixpath
import re
import shlex
from collections.abc import Callable

from swecli.tools.protected import delete_danger, write_danger
from swecli.tools.shell import Command, stdin_text

ShellReason = Callable[[str], str]

_CODE_FLAGS = {"python": ("-c",), "perl": ("-e", "-E"), "ruby": ("-e",), "node": ("-e", "--eval", "-p", "--print"),
               "nodejs": ("-e", "--eval", "-p", "--print"), "php": ("-r",), "lua": ("-e",), "deno": ("eval",),
               "bun": ("-e", "--eval"), "Rscript": ("-e",)}
_VALUE_FLAGS = {"-W", "-X", "-I", "-M", "-r", "--require", "-i"}
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
        if isinstance(node, ast.Call):
            reason = _call_reason(node, known, shell_reason)
            if reason:
                return reason
    return ""


def _call_reason(call: ast.Call, known: dict[str, str], shell_reason: ShellReason) -> str:
    func = call.func
    attr = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    on_path = isinstance(func, ast.Attribute) and (not isinstance(func.value, ast.Name) or func.value.id in known)
    target = _value(func.value, known) if on_path and isinstance(func, ast.Attribute) else (
        _value(call.args[0], known) if call.args else None)
    if attr == "rmtree":
        # A path computed at run time passes: in real sessions it is nearly always a tempfile.mkdtemp().
        danger = delete_danger(target) if target is not None else None
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

_DELETE_TREE = re.compile(r"\b(?:rmtree|remove_tree|rm_rf|rm_r|rimraf|rmSync|rmdirSync|removeSync|unlink_r)\b")
_EXEC = re.compile(r"\b(?:system|exec|execSync|spawnSync|spawn|popen|shell_exec|passthru|os\.execute)\b|`|%x")
_LITERAL = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"")


def script_text_danger(code: str, shell_reason: ShellReason) -> str:
    """Delete and exec primitives in code that is not parsed: their string literals are checked."""
    literals = [m[1] or m[2] for m in _LITERAL.finditer(code)]
    if _DELETE_TREE.search(code) or re.search(r"\b(?:rmtree|remove|unlink)\b", code):
        for literal in literals:
            danger = delete_danger(literal) if _DELETE_TREE.search(code) else write_danger(literal)
            if danger is not None:
                return f"deletes {danger.what}"
    if _EXEC.search(code):
        for literal in literals:
            reason = shell_reason(literal)
            if reason:
                return reason
    return ""
