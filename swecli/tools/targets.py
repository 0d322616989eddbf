"""What a command's words stand for as paths, for the guard: variables expanded, the line's `cd` applied,
command output replaced by what it lists, and what such a path holds.

`expand` turns one word into the texts it can stand for: `$D` with `D=/` earlier in the line is `/`;
`"${HOME:?}"` is `$HOME` (the operator only guards against an empty value); `$PWD` is `.`; `$(echo ~)` is
`~`; `$f` in `for f in $(find ~)` is what find lists (`~` and everything under it); and after `cd ~` a
relative `Documents` is also `~/Documents`.

`listing` says which paths a command prints when the line shows it: `find ROOT` (the root and
everything under it, unless an expression narrows it), `ls DIR` (its entries), `git ls-files` (every
tracked file), fixed text. That is what `xargs rm` deletes when fed by it.

`everything` and `repository` name two things `swecli/tools/protected.py` does not classify: a glob of
every file in a directory, and a git repository's own directory (`.git`, a bare `x.git`, a `.git.bak`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import field

from swecli.records import datarecord
from swecli.tools.protected import Danger
from swecli.tools.shell import Command, Word, output_text

MAX_TEXTS = 16
"""Bound on the texts one word expands to (a cartesian product of variables can grow fast)."""

_OPERATOR = re.compile(r"\$\{([A-Za-z_]\w*)(:?[-?=+][^}]*|%{1,2}[^}]*|#{1,2}[^}]*)\}")
_CLIMB = re.compile(r"^\$\{?[A-Za-z_]\w*\}?(?=/\.\.(?:/|$))")
"""`$TMPDIR/../etc`: an unknown directory, then up out of it. Read with the variable empty (`/../etc`, which
is `/etc`), as with TMPDIR unset; with TMPDIR=/tmp it is /etc too."""
_NARROWING = frozenset({"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
                        "-mtime", "-mmin", "-newer", "-size", "-empty", "-user", "-group", "-perm", "-links",
                        "-atime", "-ctime", "-amin", "-cmin", "-inum", "-samefile", "-lname", "-ilname",
                        "-newermt", "-used", "-uid", "-gid", "-prune"})
"""find tests that pick some files out of a tree. `-type f` is not one: it is every file."""
_PASS_THROUGH = frozenset({"sort", "uniq", "cat", "tac", "tee", "head", "tail", "shuf"})
"""Filters whose output is (part of) their input, unchanged: what they pass on is still a listing."""


@datarecord(frozen=True)
class Scope:
    """What the whole line tells about its words."""

    variables: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Literal values given to variables (`D=/`, `for d in a b`)."""
    computed: dict[str, tuple[Command, ...]] = field(default_factory=dict)
    """Variables holding a command's output (`x=$(curl ...)`, `for f in $(find .)`)."""
    downloaded: frozenset[str] = frozenset()
    """Files a downloader in the line writes (`curl -o x.sh`)."""


def expand(word: Word | str, scope: Scope, cwd: str = "") -> list[str]:
    """The texts a word can stand for (see the module docstring), the original form included."""
    if isinstance(word, str):
        word = Word(word, tuple(m[1] or m[2] for m in re.finditer(r"\$\{(\w+)[^}]*\}|\$(\w+)", word)))
    text = _OPERATOR.sub(lambda m: _operator_value(m[1], m[2], scope), word.text)
    text = re.sub(r"\$\{?PWD\}?(?=/|$)", ".", text)
    texts = [_substituted(text, word)]
    for name in dict.fromkeys(word.parameters):
        values = scope.variables.get(name) or _computed_values(name, scope)
        if values:
            texts = [t.replace("${" + name + "}", v).replace("$" + name, v) for t in texts for v in values]
            texts = texts[:MAX_TEXTS]
    texts += [_CLIMB.sub("", t) for t in texts if _CLIMB.match(t)]
    if cwd:
        texts += [posixpath.join(cwd, t) for t in texts if not t.startswith(("/", "~", "$"))]
    return list(dict.fromkeys(texts))


def _operator_value(name: str, operator: str, scope: Scope) -> str:
    """`${NAME:?}` and friends as a path: the variable's value. `:?`/`?` stop bash when NAME is empty, so
    an unknown NAME is then some non-empty name (`<NAME>`), never the root that an empty `$NAME/` is."""
    if name == "HOME" or name in scope.variables or operator.lstrip(":")[:1] != "?":
        return "${" + name + "}"
    return f"<{name}>"


def expand_all(words: Iterable[Word | str], scope: Scope, cwd: str = "") -> list[str]:
    return [text for word in words for text in expand(word, scope, cwd)]


def _substituted(text: str, word: Word) -> str:
    """`$(echo ~)` is `~`; `$(find ~)` is what find lists; other substitutions stay as written."""
    if not word.substituted or not re.search(r"\$\(|`", text):
        return text
    last = word.substituted[-1]
    value = output_text(last)
    if value is None:
        listed = listing(last)
        value = listed[0] if listed else None
    if value is None or "\n" in value.strip():
        return text
    return re.sub(r"\$\((?:[^()]|\([^()]*\))*\)|`[^`]*`", lambda _: value.strip(), text, count=1)


def _computed_values(name: str, scope: Scope) -> tuple[str, ...]:
    commands = scope.computed.get(name, ())
    return tuple(listing(commands[-1]) or ()) if commands else ()


# -- what a command prints as paths --------------------------------------------------------------------

def listing(command: Command) -> list[str] | None:
    """Stand-ins for the paths the command prints, or None when the line does not show them."""
    name = command.name
    if name in _PASS_THROUGH and not [a for a in command.args if not a.startswith("-")]:
        return listing(command.upstream[-1]) if command.upstream else None
    if name in ("grep", "egrep", "rg") and "-v" in command.args and command.upstream:
        return listing(command.upstream[-1])  # everything but a few: still nearly everything
    if name == "find" or (name == "busybox" and command.args[:1] == ("find",)):
        args = list(command.args[1:] if name == "busybox" else command.args)
        return _find_listing(args)
    if name in ("fd", "fdfind"):
        operands = [a for a in command.args if not a.startswith("-")]
        if operands[:1] in ([], ["."], ["^"], [""]):  # every entry: `fd . ~`, `fd`
            return [p for d in operands[1:] or ["."] for p in (d, f"{d.rstrip('/')}/*")]
        return None
    if name == "ls":
        folders = [a for a in command.args if not a.startswith("-")] or ["."]
        return [f"{d.rstrip('/')}/*" if d not in (".", "./") else "*" for d in folders]
    if name == "git" and command.args[:1] == ("ls-files",):
        return None if [a for a in command.args[1:] if not a.startswith("-")] else ["*"]
    text = output_text(command)
    return text.split() if text is not None and text.strip() else None


def _find_listing(args: list[str]) -> list[str] | None:
    split = next((i for i, a in enumerate(args) if a.startswith(("-", "(", "!"))), len(args))
    roots, expression = args[:split] or ["."], args[split:]
    if any(a in _NARROWING for a in expression):
        named = [expression[i + 1] for i, a in enumerate(expression[:-1]) if a in ("-name", "-iname")]
        literal = [n for n in named if not set(n) & set("*?[")]
        return [f"{r.rstrip('/')}/**/{n}" for r in roots for n in literal] or None
    return [p for r in roots for p in (r, f"{r.rstrip('/')}/*")]


def find_narrowed(expression: list[str], before: int | None = None) -> bool:
    """True when a find expression picks some files out (`-name '*.pyc'`), looking only at the tests
    before index `before` (find applies `-delete` as it meets it: tests after it come too late)."""
    return any(a in _NARROWING for a in expression[:before])


# -- what a path holds ---------------------------------------------------------------------------------

def everything(target: str) -> str:
    """"every file in DIR" when the target is a glob of a whole directory (`*`, `./*`, `src/**`), else ""."""
    path = target.removeprefix("./")
    for tail in ("/**/*", "/**", "/*"):
        if path.endswith(tail):
            folder = path[:-len(tail)] or "/"
            return f"every file in {folder}" if folder not in (".", "") else "every file in the current directory"
    if path in ("*", "**", "**/*", ".", ""):
        return "every file in the current directory"
    return ""


_REPOSITORY_INSIDES = frozenset({"objects", "refs", "logs", "HEAD", "packed-refs", "*"})


def repository(target: str) -> Danger | None:
    """A git repository's own directory, or its history inside it: `.git`, `.git/objects`, `.git/*`,
    `sub/.git`, a bare `repo.git`, a backup `.git.bak` (gemini-cli#19729 deleted one as a temp file)."""
    parts = [p for p in posixpath.normpath(target).split("/") if p not in ("", ".")]
    for index, part in enumerate(parts):
        if not _repository_name(part):
            continue
        rest = parts[index + 1:]
        if not rest or rest[0] in _REPOSITORY_INSIDES:
            return Danger("repository", f"a git repository ({'/'.join(parts[:index + 1])}: its history)")
    return None


_GIT_FILES = frozenset({"HEAD", "config", "packed-refs", "objects", "refs", "logs", "*"})
"""What inside a git directory holds the repository (its branches, history, remotes). Not the index, lock
files, `info/exclude`, hooks or messages, which git or people rewrite routinely."""
_ENV_FILE = re.compile(r"^\.env(?:\.(?!(?:example|sample|template|dist|defaults?|tpl|schema)$)[\w.-]+)?$")


def repository_file(target: str) -> Danger | None:
    """A file git keeps the repository in, written over, truncated or deleted one by one: `.git/HEAD`,
    `.git/config`, `.git/objects/pack/x.pack`, `.git/*` (what `find .git -type f -exec rm {} ;` reaches)."""
    parts = [p for p in posixpath.normpath(target).split("/") if p not in ("", ".")]
    for index, part in enumerate(parts[:-1]):
        if _repository_name(part) and parts[index + 1] in _GIT_FILES and not parts[-1].endswith(".lock"):
            return Danger("repository", f"a git repository's own files ({'/'.join(parts[:index + 2])})")
    return None


def env_file(target: str) -> Danger | None:
    """A project's secrets file (`.env`, `.env.local`, not `.env.example`): untracked, so git cannot bring it
    back, and it holds keys that must be issued again."""
    name = posixpath.basename(target.rstrip("/"))
    return Danger("secret", f"a project's secrets file ({name})") if _ENV_FILE.match(name) else None


def _repository_name(part: str) -> bool:
    if part == ".git" or re.match(r"^\.git[._-](?:bak|backup|old|orig|save|prev|copy)\w*$", part):
        return True
    return part.endswith(".git") and len(part) > 4 and part[0] != "."
