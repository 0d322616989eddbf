"""Read-only commands: what default mode runs without asking, as Codex and Claude Code do.

A command line is read-only when tree-sitter-bash parses it exactly (`swecli/tools/shell.py`) and:
- every command it runs is on the list below (`cat`, `ls`, `grep`, `rg`, `head`, `tail`, `wc`, `find`,
  `git status/log/diff/show/...`, ...), without an option that writes, runs a program or changes
  state (`find -delete`/`-exec`, `sort -o`, `rg --pre`, `git -c`, `git diff --output`, `sed` other
  than `sed -n 'Np'`, ...); wrappers (`xargs`, `time`, `nice`, `timeout`, `command`) count as the
  command they run;
- nothing is redirected into a file (`2>/dev/null` and `2>&1` are fine; `< file` reads);
- there is no `$(...)`, backquote or `<(...)` substitution, no function definition, and no variable
  assignment other than display settings (`PAGER=cat`, `LC_ALL=C`, ...);
- no argument points into the user's credentials (`cat ~/.ssh/id_rsa` still asks).

Anything else is not read-only, which only means the usual approval is asked for.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from swecli.tools.protected import harmless_device, secret_danger
from swecli.tools.shell import Command, Word, parse, unwrap

Check = Callable[[tuple[str, ...]], bool]
"""Given a command's arguments: True when that invocation only reads."""

_PLAIN = frozenset({
    "cat", "ls", "head", "tail", "wc", "pwd", "echo", "printf", "stat", "du", "df", "which", "whereis", "type",
    "basename", "dirname", "realpath", "readlink", "cut", "tr", "nl", "comm", "cmp", "diff", "grep", "egrep",
    "fgrep", "zgrep", "true", "false", "test", "[", "id", "whoami", "uname", "uptime", "nproc", "free", "rev",
    "tac", "paste", "column", "fold", "fmt", "expand", "unexpand", "strings", "seq", "od", "hexdump", "md5sum",
    "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "jq", "locale", "arch",
    "groups", "cd", "ps", "pgrep", "getconf", "numfmt", "zcat", "bzcat", "xzcat", "look", "join", "sleep", "[[", "((",
})
"""Programs that have no option to write a file, run another program or change the system."""
_SAFE_DIRS = ("/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/")
_SAFE_ASSIGNMENTS = re.compile(r"^(?:PAGER|GIT_PAGER|LANG|LC_\w+|TERM|NO_COLOR|COLUMNS|LINES|TZ|GREP_COLORS?)=")
_WRAPPERS = frozenset({"xargs", "time", "nice", "timeout", "command"})


def is_read_only(line: str) -> bool:
    """True when the whole command line only reads (see the module docstring)."""
    return not why_not_read_only(line)


def why_not_read_only(line: str) -> str:
    """"" when `line` is read-only, else the first reason it is not (for tests and the log)."""
    script = parse(line)
    if not script.exact:
        return f"not parsed exactly ({script.error})"
    if script.functions:
        return "defines a function"
    if script.substitutions:
        return "uses command substitution"
    for command in script.commands:
        reason = _command_reason(command)
        if reason:
            return reason
    return ""


def _command_reason(command: Command) -> str:
    if not command.words:
        return "assigns a variable"
    if any(not _SAFE_ASSIGNMENTS.match(a.text) for a in command.assignments):
        return "sets an environment variable"
    for redirect in command.redirects:
        if redirect.writes_file and redirect.target is not None and not harmless_device(redirect.target.text):
            return f"redirects output to {redirect.target.text}"
    first = command.words[0].text
    if command.dynamic_name or ("/" in first and not first.startswith(_SAFE_DIRS)):
        return f"runs {first}, which is not a known read-only program"
    words = [*command.args, *(r.target.text for r in command.redirects if r.target is not None)]
    if any(secret_danger(w) for w in words):
        return "reads credentials"
    if command.name in _WRAPPERS:
        inner = unwrap(command)
        return _command_reason(inner) if inner is not None else ""
    check = _CHECKS.get(command.name)
    if command.name not in _PLAIN and check is None:
        return f"{command.name} is not on the read-only list"
    if check is not None and not check(command.args):
        return f"{command.name} with these options can write or run programs"
    return ""


# -- per-program checks ------------------------------------------------------------------------------

def _without(*options: str, short: str = "") -> Check:
    """Read-only unless one of `options` (or `--option=...`), or a short option cluster containing a
    letter of `short`, is present."""

    def check(args: tuple[str, ...]) -> bool:
        for arg in args:
            if arg in options or arg.split("=", 1)[0] in options:
                return False
            if short and arg.startswith("-") and not arg.startswith("--") and set(arg[1:]) & set(short):
                return False
        return True

    return check


def _operands_at_most(limit: int) -> Check:
    """For programs whose extra operand is an output file (`uniq in out`, `xxd in out`)."""
    return lambda args: len([a for a in args if not a.startswith("-") or a == "-"]) <= limit


_SED_ADDRESS = r"(?:\d+|\$|/[^/]*/)"
_SED_PRINT = re.compile(rf"{_SED_ADDRESS}(?:,{_SED_ADDRESS})?\s*p")


def _sed(args: tuple[str, ...]) -> bool:
    # Only `sed -n 'ADDRESS[,ADDRESS]p'` (Codex's rule, with /regex/ addresses): any other script can write
    # a file (`w`) or run a program (`e`).
    return len(args) >= 2 and args[0] == "-n" and bool(_SED_PRINT.fullmatch(args[1]))


def _date(args: tuple[str, ...]) -> bool:
    return _without("-s", "--set")(args) and all(a.startswith(("-", "+")) for a in args)


def _printenv(args: tuple[str, ...]) -> bool:
    # The whole environment holds tokens; a named harmless variable is fine.
    return bool(args) and not any(re.search(r"KEY|TOKEN|SECRET|PASS|CRED", a, re.IGNORECASE) for a in args)


def _pip(args: tuple[str, ...]) -> bool:
    return args[:1] in (("list",), ("show",), ("freeze",), ("--version",), ("-V",))


_FIND_WRITES = _without("-delete", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls")


def _find(args: tuple[str, ...]) -> bool:
    """No deleting or writing action, and `-exec`/`-execdir` only run read-only commands
    (`find . -name '*.py' -exec grep -l X {} \\;` is common in real sessions)."""
    if not _FIND_WRITES(args):
        return False
    for i, arg in enumerate(args):
        if arg in ("-exec", "-execdir"):
            end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")), len(args))
            if end == i + 1 or _command_reason(Command(tuple(Word(w) for w in args[i + 1:end]))):
                return False
    return True


_GIT_READERS = frozenset({
    "status", "log", "diff", "show", "blame", "annotate", "ls-files", "ls-tree", "rev-parse", "describe",
    "shortlog", "cat-file", "rev-list", "merge-base", "name-rev", "show-ref", "count-objects", "whatchanged",
    "version", "check-ignore", "for-each-ref", "cherry", "diff-tree", "diff-files", "diff-index", "grep", "var",
})
_GIT_WRITING_OPTIONS = _without("--output", "--ext-diff", "-O", "--open-files-in-pager")
_BRANCH_LISTING = re.compile(r"^(?:-a|--all|-r|--remotes|-v|-vv|--verbose|--list|-l|--show-current|--no-color|"
                             r"--color(?:=\w+)?|--(?:no-)?column|--sort=.*|--format=.*|--(?:no-)?merged|"
                             r"--contains|--points-at)$")


def _git(args: tuple[str, ...]) -> bool:
    rest = list(args)
    while rest and rest[0].startswith("-"):
        if rest[0] in ("-C",):
            rest = rest[2:]
        elif rest[0] in ("--no-pager", "-P", "--no-optional-locks") or rest[0].startswith(("--git-dir=",
                                                                                             "--work-tree=")):
            rest = rest[1:]
        else:
            return False  # -c key=value and friends can make git run programs
    if not rest:
        return False
    sub, sub_args = rest[0], tuple(rest[1:])
    if sub in _GIT_READERS:
        return _GIT_WRITING_OPTIONS(sub_args) and not any(a.startswith("-O") for a in sub_args)
    check = _GIT_SPECIAL.get(sub)
    return check is not None and check(sub_args)


def _git_branch(args: tuple[str, ...]) -> bool:
    options = [a for a in args if a.startswith("-")]
    listing = any(o in ("--list", "-l", "--contains", "--merged", "--no-merged", "--points-at") for o in options)
    return all(_BRANCH_LISTING.match(o) for o in options) and (listing or len(options) == len(args))


_GIT_SPECIAL: dict[str, Check] = {
    "branch": _git_branch,
    "tag": lambda a: not a or a[0] in ("-l", "--list", "-n"),
    "remote": lambda a: not a or a[0] in ("-v", "--verbose", "show", "get-url"),
    "stash": lambda a: a[:1] in (("list",), ("show",)),
    "config": lambda a: bool(a) and all(x.startswith("--get") or x in ("--list", "-l", "--show-origin", "--global",
                                                                         "--local", "--system", "--name-only")
                                        for x in a if x.startswith("-")) and any(
        x.startswith("--get") or x in ("--list", "-l") for x in a),
    "reflog": lambda a: not a or a[0] == "show",
    "worktree": lambda a: a[:1] == ("list",),
}

_CHECKS: dict[str, Check] = {
    "find": _find,
    "fd": _without("-x", "--exec", "-X", "--exec-batch"),
    "fdfind": _without("-x", "--exec", "-X", "--exec-batch"),
    "rg": _without("--pre", "--pre-glob"),
    "sort": _without("-o", "--output", "--compress-program", short="o"),
    "uniq": _operands_at_most(1),
    "xxd": _operands_at_most(1),
    "tree": _without("-o", "-R"),
    "file": _without("-C", "--compile"),
    "sed": _sed,
    "date": _date,
    "hostname": lambda a: all(x in ("-f", "-s", "-i", "-I", "-d", "-A", "--fqdn", "--short") for x in a),
    "printenv": _printenv,
    "git": _git,
    "pip": _pip,
    "pip3": _pip,
}
