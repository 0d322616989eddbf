"""The guard's git rules: what loses work git cannot give back, or rewrites history others have.

Asks: a force push (`-f`, `--force`, `--force=...`, `--force-with-lease`, `+ref`, `--mirror`) or a
remote branch deleted; `reset --hard` and `reset --merge`; `checkout -f`/`switch -f`/`--discard-changes`
and `checkout .` / `restore .` (every file); `clean -f` (not with `-n`); `branch -D`; `stash clear`;
`update-ref -d`; `worktree remove --force`; `reflog expire`; `filter-branch`/`filter-repo`; `rm -r .` (every
tracked file deleted, uncommitted changes too); `read-tree -u --reset` (reset --hard by another name).
Passes: what only touches named files or keeps changes (`checkout -- file.py`, `restore --staged .`,
`reset --soft`, `reset HEAD file`, `branch -d`, `stash drop`, `clean -n`, `push --force-if-includes` alone
is still a force push only with a lease).
"""

from __future__ import annotations

from collections.abc import Callable

from swecli.tools.shell import Command

GitRule = Callable[[list[str]], str]

_GLOBAL_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path",
                                "--super-prefix", "--config-env", "--list-cmds"})


def git_reason(command: Command) -> str:
    args = list(command.args)
    while args and args[0].startswith("-"):  # global options: -C DIR, -c KEY=VALUE, --git-dir DIR, ...
        if args[0] == "--":
            args = args[1:]
            break
        args = args[2:] if args[0] in _GLOBAL_WITH_VALUE else args[1:]
    if not args:
        return ""
    rule = _GIT.get(args[0])
    return rule(args[1:]) if rule is not None else ""


def split(args: list[str], takes_value: str = "", long_values: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """(options, operands); `takes_value` lists short options whose value is the next word."""
    options: list[str] = []
    operands: list[str] = []
    items = iter(args)
    for arg in items:
        if arg == "--":
            operands.extend(items)
            break
        if arg.startswith("--") and len(arg) > 2:
            options.append(arg)
            if arg in long_values:
                next(items, None)
        elif arg.startswith("-") and len(arg) > 1:
            options.append(arg)
            if arg[-1] in takes_value and len(arg) == 2:
                next(items, None)
        else:
            operands.append(arg)
    return options, operands


def has_short(options: list[str], letters: str, long: tuple[str, ...] = (), takes_value: str = "") -> bool:
    """An option in `long`, or a short-option cluster (`-fdx`) containing one of `letters` before a letter
    that takes a value (in `-bfeature`, `feature` is the value of `-b`, not `-f`)."""
    for option in options:
        if option in long:
            return True
        if option.startswith("--"):
            continue
        for letter in option[1:]:
            if letter in letters:
                return True
            if letter in takes_value:
                break
    return False


def _push(args: list[str]) -> str:
    options, operands = split(args, "o", ("--push-option", "--repo", "--receive-pack", "--exec"))
    forced = any(o.startswith("--force") or o == "--mirror" for o in options) or has_short(options, "f", (), "o")
    if forced or any(ref.startswith("+") for ref in operands[1:]):
        return "force push (rewrites the remote's history)"
    if "--delete" in options or has_short(options, "d", (), "o") or any(r.startswith(":") for r in operands[1:]):
        return "deletes a remote branch"
    return ""


_EVERY_FILE = frozenset({".", "*", ":/", "./", ":/*", "./*"})


def _checkout(args: list[str]) -> str:
    options, operands = split(args, "bBU", ("--orphan", "--conflict", "--pathspec-from-file", "--unified",
                                            "--inter-hunk-context"))
    if has_short(options, "f", ("--force", "--discard-changes"), "bBU"):
        return "discards uncommitted changes (checkout --force)"
    if "--staged" in options and "--worktree" not in options:
        return ""
    if "--" in args:
        operands = args[args.index("--") + 1:]
    return "discards uncommitted changes in every file" if _EVERY_FILE & set(operands) else ""


def _switch(args: list[str]) -> str:
    options, _ = split(args, "cC")
    if has_short(options, "f", ("--force", "--discard-changes"), "cC"):
        return "discards uncommitted changes (switch --discard-changes)"
    return ""


def _reset(args: list[str]) -> str:
    if "--hard" in args:
        return "discards uncommitted work (git reset --hard)"
    if "--merge" in args:
        return "discards staged changes (git reset --merge)"
    return ""


def _clean(args: list[str]) -> str:
    options, _ = split(args, "e", ("--exclude",))
    if has_short(options, "n", ("--dry-run",)):
        return ""
    return "deletes untracked files (git clean -f)" if has_short(options, "f", ("--force",)) else ""


def _branch(args: list[str]) -> str:
    options, _ = split(args)
    if has_short(options, "D") or ("--delete" in options and "--force" in options) or (
            has_short(options, "d") and has_short(options, "f")):
        return "force-deletes a branch (git branch -D)"
    return ""


def _update_ref(args: list[str]) -> str:
    return "deletes a ref (its commits become unreachable: git update-ref -d)" if "-d" in args or \
        "--delete" in args else ""


def _rm(args: list[str]) -> str:
    options, operands = split(args, "", ("--pathspec-from-file",))
    if "--cached" in options or has_short(options, "n", ("--dry-run",)):
        return ""
    recursive = has_short(options, "r")
    return "deletes every tracked file (git rm -r .)" if recursive and _EVERY_FILE & set(operands) else ""


def _read_tree(args: list[str]) -> str:
    return "discards uncommitted work (git read-tree -u --reset)" if "-u" in args and "--reset" in args else ""


def _worktree(args: list[str]) -> str:
    if args[:1] == ["remove"] and has_short(split(args[1:])[0], "f", ("--force",)):
        return "deletes a worktree with its uncommitted changes (worktree remove --force)"
    return ""


_GIT: dict[str, GitRule] = {
    "push": _push,
    "reset": _reset,
    "clean": _clean,
    "checkout": _checkout,
    "restore": _checkout,
    "switch": _switch,
    "branch": _branch,
    "update-ref": _update_ref,
    "worktree": _worktree,
    "rm": _rm,
    "read-tree": _read_tree,
    "stash": lambda a: "deletes every stash (git stash clear)" if a[:1] == ["clear"] else "",
    "filter-branch": lambda a: "rewrites the repository's history (git filter-branch)",
    "filter-repo": lambda a: "rewrites the repository's history (git filter-repo)",
    "reflog": lambda a: "expires the reflog (loses the way back to old commits)" if a[:1] == ["expire"] else "",
}
