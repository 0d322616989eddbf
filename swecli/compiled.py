"""What `dataclasses` and `typing` compile at every start, compiled once per user and kept.

`@dataclass` writes each method it adds as source text and compiles it (`dataclasses._create_fn`:
`exec(text)`), for swecli's records and for pydantic's, typer's and annotated-types' own dataclasses;
`typing.ForwardRef` compiles every string annotation pydantic and typer evaluate (`compile(text)`), and
`collections.namedtuple` and `inspect.get_annotations` (typer reading swecli's signatures) `eval` text. On the
way to `-p`'s first request that was ~440 texts, ~920 annotations and ~130 expressions: ~310 M instructions of
parsing and compiling, ~28% of the main thread, the same texts on every run. As Python keeps a module's
bytecode in `__pycache__`, swecli keeps these: `install()` puts an `exec`, a `compile` and an `eval` in those
modules' globals (where they shadow the builtins), which look the text up in a table read from
`$XDG_CACHE_HOME/swecli/compiled/` and compile only what is not there; `save()` (when the command ends)
writes the table back if something was compiled.

The result is the code the builtins make from the same text (same file name, mode and flags: none of these
modules has `__future__` imports, so no call inherits flags), so classes and annotations behave exactly as
before. The table is keyed by the text itself and named after the interpreter's bytecode magic number and
`-O` level, so it is never used by an interpreter that would compile differently. Code is executable:
the file is read only if it belongs to this user and no one else may write it, and its digest must match
(a torn write is ignored); a relative cache home (a place in the project) is not used. Sandboxed commands
cannot write it even under `sandbox.writable_paths = ["~/.cache"]`: `.cache/swecli` is hidden from them
(`tools.protected.SECRET_PATHS`). A damaged or missing file costs one start its compiling, nothing else.
"""

from __future__ import annotations

import builtins
import marshal
import os
import sys
from importlib.util import MAGIC_NUMBER
from types import CodeType
from typing import Any

from swecli import sealed

KEEP_UNUSED = 1024
"""A table with more than this, and more than twice what the process that writes it used, keeps only what that
process used: texts of older versions of swecli and its libraries go, and reading the table stays cheap (a -p
run uses ~630, ~0.45 MB, read in ~3 ms)."""
_Key = tuple[str, str]  # (mode, source text)


class CodeCache:
    """Code objects by (mode, text), read from and written to one file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.known: dict[_Key, CodeType] = {}
        self.new: dict[_Key, CodeType] = {}
        self.used: set[_Key] = set()

    def load(self) -> None:
        self.known = _read(self.path)

    def compile(self, source: str, mode: str) -> CodeType:
        key = (mode, source)
        code = self.known.get(key) or self.new.get(key)
        if code is None:
            code = self.new[key] = builtins.compile(source, "<string>", mode, dont_inherit=True)
        self.used.add(key)
        return code

    def save(self) -> None:
        """Write the table back when this process compiled something (atomically; a cache that cannot be
        written just stays cold)."""
        if not self.new:
            return
        # Copies first (in C, so whole): threads still starting (the vocabulary's, the map's) may add to them.
        table, used = {**self.known, **self.new}, set(self.used)
        self.new = {}
        if len(table) > max(KEEP_UNUSED, 2 * len(used)):
            table = {key: table[key] for key in used if key in table}
        _write(self.path, table)


def cache_path(env: dict[str, str] | None = None) -> str | None:
    """`$XDG_CACHE_HOME/swecli/compiled/MAGIC-O<level>.marshal`: one table per bytecode version. None (no table)
    when there is no cache home to trust (`sealed.cache_home`: a relative one would name a place in the project)."""
    home = sealed.cache_home(env)
    if home is None:
        return None
    return os.path.join(home, "compiled", f"{MAGIC_NUMBER.hex()}-O{sys.flags.optimize}.marshal")


def _read(path: str) -> dict[_Key, CodeType]:
    """The table an earlier process wrote, or {} (missing, someone else's, writable by others, damaged)."""
    body = sealed.read(path, owned=True)
    if body is None:
        return {}
    try:
        table = marshal.loads(body)
    except (ValueError, EOFError, TypeError):
        return {}
    return table if _well_formed(table) else {}


def _well_formed(table: Any) -> bool:
    return isinstance(table, dict) and all(
        type(key) is tuple and len(key) == 2 and key[0] in ("exec", "eval") and type(key[1]) is str
        and type(code) is CodeType for key, code in table.items())


def _write(path: str, table: dict[_Key, CodeType]) -> None:
    try:
        body = marshal.dumps(table)
    except ValueError:  # a constant marshal cannot write (none is known): the table just stays as it was
        return
    sealed.write(path, body)


_CACHE: CodeCache | None = None


def install() -> None:
    """Give `dataclasses` and `typing` the kept code (once per process; before either is used)."""
    global _CACHE
    if _CACHE is not None:
        return
    import collections
    import dataclasses
    import inspect
    import typing

    path = cache_path()
    if path is None:
        return
    _CACHE = CodeCache(path)
    _CACHE.load()
    vars(dataclasses)["exec"] = _exec
    vars(typing)["compile"] = _compile
    vars(collections)["eval"] = vars(inspect)["eval"] = _eval  # namedtuple's `__new__`; typer's signatures


def save() -> None:
    if _CACHE is not None:
        _CACHE.save()


# Each stands in for a builtin called from a module without `__future__` imports: what they compile themselves
# inherits no flags (`dont_inherit`), as the builtin called there would not (this module's own would leak in).

def _exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
    """`exec` as `dataclasses._create_fn` calls it: `exec(text, globals, ns)`."""
    if globals is None:  # the caller's namespace, as the builtin would take it (not this module's)
        globals, locals = _callers(locals)
    builtins.exec(_code(source, "exec"), globals, locals)


def _eval(source: Any, globals: Any = None, locals: Any = None, /) -> Any:
    """`eval` as `collections.namedtuple` and `inspect.get_annotations` call it: `eval(text, namespace)`."""
    if globals is None:
        globals, locals = _callers(locals)
    return builtins.eval(_code(source, "eval"), globals, locals)


def _code(source: Any, mode: str) -> Any:
    if type(source) is not str:
        return source
    if _CACHE is not None:
        return _CACHE.compile(source, mode)
    return builtins.compile(source, "<string>", mode, dont_inherit=True)


def _callers(locals: Any) -> tuple[dict[str, Any], Any]:
    frame = sys._getframe(2)
    return frame.f_globals, frame.f_locals if locals is None else locals


def _compile(source: Any, filename: Any, mode: str, flags: int = 0, dont_inherit: bool = False,
             optimize: int = -1) -> Any:
    """`compile` as `typing.ForwardRef` calls it: `compile(text, '<string>', 'eval')`."""
    if (_CACHE is not None and type(source) is str and filename == "<string>" and mode == "eval" and not flags
            and optimize == -1):
        return _CACHE.compile(source, mode)
    return builtins.compile(source, filename, mode, flags, True, optimize)
