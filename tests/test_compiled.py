"""The code `dataclasses` and `typing` compile, kept between runs (`swecli.compiled`): a second `-p` compiles none
of it on the way to its first request; what is kept is what `compile` makes; and a table someone else could
have written is never run."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from dataclasses import dataclass, fields
from pathlib import Path

import pytest

from swecli import compiled
from swecli.compiled import CodeCache, cache_path
from swecli.testing.server import Reply, ScriptedLLM
from tests.ui.test_headless_startup import hooked
from tests.unprivileged import USERS, hand_over, seed_vocabularies, user_prefix, workspace

COMPILES_SCRIPT = hooked(r"""
texts, at_request = [], []
def note(event, args):  # every text compiled (exec, eval, compile) until the task's request connects
    if event == "compile" and isinstance(args[0], (str, bytes)):
        texts.append(args[0] if isinstance(args[0], str) else args[0].decode("utf-8", "replace"))
    elif event == "socket.connect":
        at_request[:] = [list(texts)]
""", "at_request[0] if at_request else None")


def compiled_before_the_request(project: Path) -> list[str]:
    env = {**os.environ, "SWECLI_CONTEXT__JUST_IN_TIME": "false"}
    with ScriptedLLM([Reply("done")]) as llm:
        out = subprocess.run([sys.executable, "-c", COMPILES_SCRIPT, "--provider", "openai-compatible", "--base-url",
                              llm.base_url, "--model", "scripted-model", "-p", "say done"], cwd=project, env=env,
                             capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert llm.requests, out.stderr
    texts: list[str] | None = json.loads(out.stdout.strip().splitlines()[-1])
    assert texts is not None
    return texts


def test_a_second_p_run_compiles_no_dataclass_method(project: Path) -> None:
    """Each `@dataclass` method was parsed and compiled on every start (~0.6 M instructions each, ~440 before
    the first request); the first run keeps them, the second compiles none."""
    first = compiled_before_the_request(project)
    assert sum(text.startswith("def __create_fn__") for text in first) > 100  # a cold start compiles them all
    assert Path(str(cache_path())).is_file()
    second = compiled_before_the_request(project)
    assert [text for text in second if text.startswith("def __create_fn__")] == []
    assert len(second) < len(first) / 4  # the string annotations typing compiled are kept too


TEXTS = [("exec", "def __create_fn__(__dataclass_type_name__):\n def __init__(self, name:__dataclass_type_name__):\n"
                  "  self.name=name\n return __init__"),
         ("eval", "list[str] | None"), ("eval", "dict[str, int]")]


def test_the_kept_code_is_what_compile_makes(tmp_path: Path) -> None:
    first = CodeCache(str(tmp_path / "compiled" / "table.marshal"))
    made = [first.compile(text, mode) for mode, text in TEXTS]
    first.save()
    again = CodeCache(first.path)
    again.load()
    assert set(again.known) == {(mode, text) for mode, text in TEXTS}
    for (mode, text), code in zip(TEXTS, made, strict=True):
        kept = again.compile(text, mode)
        assert kept is again.known[(mode, text)] and not again.new  # read, not compiled again
        assert kept == code == compile(text, "<string>", mode, dont_inherit=True)
    assert (Path(first.path).stat().st_mode & 0o777, Path(first.path).parent.stat().st_mode & 0o777) == (0o600, 0o700)


def test_dataclasses_made_with_the_kept_code_are_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(compiled, "_CACHE", None)
    import collections
    import dataclasses
    import inspect
    import typing

    monkeypatch.setitem(vars(dataclasses), "exec", exec)  # undone after the test, as are the others
    monkeypatch.setitem(vars(typing), "compile", compile)
    monkeypatch.setitem(vars(collections), "eval", eval)
    monkeypatch.setitem(vars(inspect), "eval", eval)

    def make() -> type:
        @dataclass(frozen=True)
        class Point:
            x: int
            label: str = "origin"

        return Point

    def annotated(path: str, depth: int | None = None) -> list[str]:
        return []

    plain = make()
    compiled.install()
    kept_once = make()
    collections.namedtuple("pair", "left right")
    inspect.signature(annotated, eval_str=True)
    compiled.save()
    monkeypatch.setattr(compiled, "_CACHE", None)
    compiled.install()  # a new process: the table is read back
    kept = make()
    assert compiled._CACHE is not None and not compiled._CACHE.new  # nothing compiled: all of it was kept
    for cls in (kept_once, kept):
        assert [f.name for f in fields(cls)] == [f.name for f in fields(plain)]
        assert cls.__init__.__code__ == plain.__init__.__code__  # type: ignore[misc]
        assert repr(cls(1)) == repr(plain(1)).replace(plain.__qualname__, cls.__qualname__)
        with pytest.raises(dataclasses.FrozenInstanceError):
            cls(1).x = 2
    forward = compile("list[str]", "<string>", "eval", dont_inherit=True)
    assert typing.ForwardRef("list[str]").__forward_code__ == forward
    pair = collections.namedtuple("pair", "left right")
    assert pair(1, right=2) == (1, 2) and repr(pair(1, 2)) == "pair(left=1, right=2)"
    assert str(inspect.signature(annotated, eval_str=True)) == "(path: str, depth: int | None = None) -> list[str]"
    assert compiled._CACHE is not None and not compiled._CACHE.new


def test_an_eval_without_a_namespace_reads_its_caller_s() -> None:
    def caller() -> object:
        local = 41  # noqa: F841 - read by the text evaluated below
        return compiled._eval("local + 1")

    assert caller() == 42
    namespace: dict[str, object] = {}
    compiled._exec("made = 1", namespace)
    assert namespace["made"] == 1


def test_an_exec_without_a_namespace_runs_in_its_caller_s() -> None:
    def caller() -> dict[str, object]:
        namespace: dict[str, object] = {}
        compiled._exec("namespace['seen'] = local", None, {"namespace": namespace, "local": 1})
        compiled._exec("namespace['module'] = __name__")  # the caller's globals, not swecli.compiled's
        return namespace

    assert caller() == {"seen": 1, "module": __name__}


def test_what_is_not_a_kept_text_goes_to_the_builtins_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Code objects, and `compile` calls other than `typing.ForwardRef`'s (flags, a file name, another mode), are
    the builtins' business: nothing of them is kept, and what comes back is what the builtin makes."""
    import ast

    cache = CodeCache(str(tmp_path / "table.marshal"))
    monkeypatch.setattr(compiled, "_CACHE", cache)
    code = compile("1 + 1", "<string>", "eval")
    assert compiled._eval(code, {}) == 2
    assert isinstance(compiled._compile("1 + 1", "<string>", "eval", ast.PyCF_ONLY_AST), ast.Expression)
    assert compiled._compile("x = 1", "<string>", "exec").co_filename == "<string>"
    assert compiled._compile("1", "model.py", "eval").co_filename == "model.py"
    assert compiled._compile("1", "<string>", "eval", optimize=2) == compile("1", "<string>", "eval", dont_inherit=True,
                                                                                  optimize=2)
    assert cache.new == {}
    assert compiled._compile("list[int]", "<string>", "eval") is cache.new[("eval", "list[int]")]  # ForwardRef's
    monkeypatch.setattr(compiled, "_CACHE", None)  # no table (no cache home): compiled each time, as the builtin
    assert compiled._eval("2 * 3", {}) == 6 and cache.new.keys() == {("eval", "list[int]")}
    # Neither inherits `swecli.compiled`'s own `from __future__ import annotations` (the builtin called from
    # `dataclasses` would not): a class body's annotations stay evaluated.
    made: dict[str, object] = {}
    compiled._exec("class A:\n    x: int = 1", made)
    exec(compiled._compile("class B:\n    x: int = 1", "model.py", "exec"), made)
    assert made["A"].__annotations__ == made["B"].__annotations__ == {"x": int}  # type: ignore[attr-defined]


def _plant(path: str, marker: Path) -> None:
    """A table whose code for a real text writes `marker` when run: what an attacker would leave there."""
    mode, text = TEXTS[1]
    evil = compile(f"(__import__('pathlib').Path({str(marker)!r}).write_text('ran') and None) or list", "<string>",
                   "eval")
    holder = CodeCache(path)
    holder.new = {(mode, text): evil}
    holder.save()


def _runs_planted(path: str) -> bool:
    cache = CodeCache(path)
    cache.load()
    mode, text = TEXTS[1]
    eval(cache.compile(text, mode))  # what typing would do with it
    return bool(cache.known)


def test_a_table_others_can_write_is_not_run(tmp_path: Path) -> None:
    path, marker = str(tmp_path / "table.marshal"), tmp_path / "ran"
    _plant(path, marker)
    os.chmod(path, 0o620)  # group-writable: someone else could have put it there
    assert not _runs_planted(path) and not marker.exists()
    os.chmod(path, 0o602)
    assert not _runs_planted(path) and not marker.exists()
    os.chmod(path, 0o600)  # the user's own: it is used (so the refusals above were the permission checks)
    assert _runs_planted(path) and marker.read_text() == "ran"


def test_a_damaged_table_is_compiled_again_and_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "table.marshal"
    cache = CodeCache(str(path))
    cache.compile(TEXTS[1][1], "eval")
    cache.save()
    blob = path.read_bytes()
    for damaged in (blob[:-3], blob[:16] + marshal.dumps({("eval", "x"): "not code"}), b""):
        path.write_bytes(damaged)
        again = CodeCache(str(path))
        again.load()
        assert again.known == {}
        again.compile(TEXTS[1][1], "eval")
        again.save()
        healed = CodeCache(str(path))
        healed.load()
        assert list(healed.known) == [("eval", TEXTS[1][1])]


def test_a_table_of_old_texts_keeps_only_what_is_used(tmp_path: Path) -> None:
    """Texts of older versions would pile up (and make every start read them): past `KEEP_UNUSED` entries, and
    twice what the writing process used, only what it used is kept."""
    path = str(tmp_path / "table.marshal")
    old = CodeCache(path)
    for n in range(compiled.KEEP_UNUSED + 10):
        old.compile(f"old_{n}", "eval")
    old.save()
    current = CodeCache(path)
    current.load()
    current.compile("old_3", "eval")
    current.compile("new_name", "eval")
    current.save()
    kept = CodeCache(path)
    kept.load()
    assert set(kept.known) == {("eval", "old_3"), ("eval", "new_name")}


def test_no_table_where_the_cache_home_is_a_relative_path() -> None:
    """A relative `$XDG_CACHE_HOME` (or `$HOME`) would name a place in the project swecli starts in."""
    assert cache_path({"XDG_CACHE_HOME": ".cache", "HOME": "/home/u"}) == cache_path({"HOME": "/home/u"})
    assert str(cache_path({"HOME": "/home/u"})).startswith("/home/u/.cache/swecli/compiled/")
    assert cache_path({"XDG_CACHE_HOME": "cache", "HOME": "home"}) is None
    assert cache_path({}) is None


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("planted", ["writable by others", "another user's", "the user's own"])
def test_a_planted_table_runs_only_when_it_is_the_user_s_own(user: str, planted: str) -> None:
    """A real `-p` as root and as nobody, with a table in its cache whose code for `str` (an annotation typer
    reads from swecli's signatures) writes a marker when run. Someone else's table, or one others may write,
    is not run; the user's own, private one is (what shows that the text planted is one swecli looks up)."""
    with workspace("swecli-compiled-") as base:
        home, project, marker = base / "home", base / "project", base / "marker" / "ran"
        for folder in (home, project, marker.parent):
            folder.mkdir(parents=True)
        seed_vocabularies(home)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("SWECLI_")}, "HOME": str(home),
               "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
               "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "SWECLI_CONTEXT__JUST_IN_TIME": "false"}
        path = cache_path(env)
        assert path is not None
        table = CodeCache(path)
        evil = f"(__import__('pathlib').Path({str(marker)!r}).write_text('ran') and None) or str"
        table.new = {("eval", "str"): compile(evil, "<string>", "eval", dont_inherit=True)}
        table.save()
        hand_over(base, user)
        if planted == "writable by others":
            os.chmod(path, 0o622)
        elif planted == "another user's":
            os.chown(path, 12345, 12345)
        with ScriptedLLM([Reply("done")]) as llm:
            out = subprocess.run([*user_prefix(user), sys.executable, "-m", "swecli", "--provider",
                                  "openai-compatible", "--base-url", llm.base_url, "--model", "scripted-model", "-p",
                                  "say done"], cwd=project, env=env, capture_output=True, text=True, timeout=180,
                                 stdin=subprocess.DEVNULL)
        assert out.returncode == 0 and out.stdout == "done\n", out.stderr
        assert marker.exists() == (planted == "the user's own")
