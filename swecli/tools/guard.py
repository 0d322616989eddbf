"""The dangerous-command guard: commands that ask even in auto mode.

It is the second line of defence; the sandbox (`swecli/tools/sandbox.py`) is the first. It judges
the parsed command line (`swecli/tools/shell.py`), not its raw text: every command the line would
run is checked, including the ones behind wrappers (`sudo`, `xargs`, `env`), inside `bash -c`/`eval`
strings, in text piped into a shell (decoded when it is literal base64), in `find -exec`, and in
inline Python (`python3 -c`, parsed with `ast`) or Perl/Ruby/Node one-liners. Quoting tricks do not
hide a command (`r\\m`, `'r'm` and `/bin/rm` are all `rm`).

Each rule returns why the command is dangerous; the reason is shown to the person who approves and
to the model when refused. What counts as a dangerous target (root, system and home directories,
credentials, shell profiles, disks) is in `swecli/tools/protected.py`: `rm -rf build/` and
`git push origin feature` pass, `rm -rf ~`, `find / -delete` and `shred ~/.ssh/id_rsa` ask.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from swecli.tools.inline import interpreter_danger
from swecli.tools.protected import Danger, delete_danger, harmless_device, write_danger
from swecli.tools.shell import SHELLS, Command, Script, Word, follow, output_text, parse, stdin_text

DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "nc", "ncat", "socat", "http", "https", "xh"})
DECODERS = frozenset({"base64", "base32", "xxd", "openssl", "gunzip", "zcat", "gzip", "bzip2", "xz", "uudecode",
                      "rev", "tr"})
INTERPRETERS = frozenset({"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "deno",
                          "bun", "Rscript"})


def dangerous_reason(command: str) -> str:
    """Why `command` is dangerous, or "" when no rule matches."""
    return script_reason(parse(command))


def script_reason(script: Script) -> str:
    for function in script.functions:
        calls = [c for c in function.commands if c.name == function.name]
        if len(calls) >= 2 or (calls and function.background):
            return "fork bomb (a function that keeps starting copies of itself)"
    downloaded = _downloaded_files(script.commands)
    for command in script.walk():
        reason = command_reason(command, script.variables, downloaded)
        if reason:
            return reason + (f" (run through {command.via})" if command.via else "")
    return ""


Variables = dict[str, tuple[str, ...]]
Rule = Callable[[Command, Variables], str]


def command_reason(command: Command, variables: Variables, downloaded: frozenset[str] = frozenset()) -> str:
    """Why this one command (not what it runs) is dangerous, or ""."""
    rule = RULES.get("mkfs" if command.name.startswith("mkfs.") else command.name)
    reason = rule(command, variables) if rule is not None else ""
    if reason:
        return reason
    for check in (_redirect_reason, _code_source_reason, _unknown_program_reason):
        reason = check(command, variables)
        if reason:
            return reason
    if _runs_download(command, downloaded):
        return "runs a script it just downloaded"
    if command.name in INTERPRETERS or command.name.startswith("python3."):
        return interpreter_danger(command, dangerous_reason)
    return ""


def _runs_download(command: Command, downloaded: frozenset[str]) -> bool:
    if not command.words or not downloaded:
        return False
    if command.words[0].text in downloaded:
        return True
    return _consumes_code(command) and any(a in downloaded for a in command.args)


# -- reading words ---------------------------------------------------------------------------------

def expand(word: Word | str, variables: Variables) -> list[str]:
    """The texts a word can stand for, with variables given literal values earlier in the line."""
    text = word if isinstance(word, str) else word.text
    names = [] if isinstance(word, str) else [n for n in word.parameters if n in variables]
    texts = [text]
    for name in names:
        texts = [t.replace("${" + name + "}", v).replace("$" + name, v) for t in texts for v in variables[name]]
    return texts


def split_args(args: Iterable[str], takes_value: str = "", long_values: tuple[str, ...] = ()) -> tuple[
        list[str], list[str]]:
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


def _has_short(options: list[str], letters: str, long: tuple[str, ...] = ()) -> bool:
    return any(o in long or (not o.startswith("--") and any(ch in o[1:] for ch in letters)) for o in options)


def _first(dangers: Iterator[Danger | None]) -> Danger | None:
    return next((d for d in dangers if d is not None), None)


def _targets(operands: list[str], variables: Variables) -> list[str]:
    return [t for operand in operands for t in expand(Word(operand, _params(operand)), variables)]


def _params(text: str) -> tuple[str, ...]:
    return tuple(m[1] or m[2] for m in re.finditer(r"\$\{(\w+)\}|\$(\w+)", text))


# -- rules -----------------------------------------------------------------------------------------

def _rm(command: Command, variables: Variables) -> str:
    options, operands = split_args(command.args)
    if "--no-preserve-root" in options:
        return "rm with --no-preserve-root"
    recursive = _has_short(options, "rR", ("--recursive",))
    classify = delete_danger if recursive else write_danger
    danger = _first(classify(t) for t in _targets(operands, variables))
    if danger is None:
        return ""
    return f"{'recursive ' if recursive else ''}delete of {danger.what}"


_FIND_FILTERS = frozenset({"-name", "-iname", "-path", "-ipath", "-wholename", "-regex", "-iregex", "-type",
                           "-mtime", "-mmin", "-newer", "-size", "-empty", "-user", "-perm", "-links",
                           "-atime", "-ctime", "-amin", "-cmin", "-inum", "-samefile", "-lname"})
_FIND_EXEC = ("-exec", "-execdir", "-ok", "-okdir")


def _find(command: Command, variables: Variables) -> str:
    args = list(command.args)
    split = next((i for i, a in enumerate(args) if a.startswith(("-", "(", "!"))), len(args))
    roots, expression = args[:split] or ["."], args[split:]
    filtered = any(a in _FIND_FILTERS for a in expression)
    for root in _targets(roots, variables):
        danger = delete_danger(root)
        if "-delete" in expression and danger is not None and not (danger.kind == "here" and filtered):
            return f"find -delete under {danger.what}"
        if not filtered and danger is not None:
            reason = _find_exec_reason(expression, root, variables)  # {} is the root itself, among others
        else:
            reason = _find_exec_reason(expression, f"{root.rstrip('/')}/found-file", variables)
            if "found-file" in reason:
                where = danger.what if danger is not None else root
                reason = f"{reason.split(' of ')[0]} of files found under {where} (find -exec)"
        if reason:
            return reason
    return ""


def _find_exec_reason(expression: list[str], stand_in: str, variables: Variables) -> str:
    """Check what `-exec CMD {} ;` runs, with `{}` standing for the paths find visits."""
    for i, word in enumerate(expression):
        if word not in _FIND_EXEC:
            continue
        end = next((j for j in range(i + 1, len(expression)) if expression[j] in (";", "+")), len(expression))
        words = tuple(Word(w.replace("{}", stand_in)) for w in expression[i + 1:end])
        if not words:
            continue
        for inner in follow(Command(words, via=f"find {word}")):
            reason = command_reason(inner, variables)
            if reason:
                return reason
    return ""


def _write_targets(verb: str, takes_value: str = "", long_values: tuple[str, ...] = ()) -> Rule:
    """A rule for commands whose operands are files they overwrite, truncate or destroy."""

    def rule(command: Command, variables: Variables) -> str:
        _, operands = split_args(command.args, takes_value, long_values)
        danger = _first(write_danger(t) or _disk_or_tree(t) for t in _targets(operands, variables))
        return f"{verb} {danger.what}" if danger is not None else ""

    return rule


def _disk_or_tree(target: str) -> Danger | None:
    danger = delete_danger(target)
    return danger if danger is not None and danger.kind in ("root", "home", "secret") else None


def _copy_or_move(command: Command, variables: Variables) -> str:
    options, operands = split_args(command.args, "tS", ("--target-directory", "--suffix"))
    target_dir = next((o.split("=", 1)[1] for o in options if o.startswith("--target-directory=")), None)
    destinations = [target_dir] if target_dir else operands[-1:]
    sources = operands if target_dir else operands[:-1]
    danger = _first(write_danger(t) for t in _targets(destinations, variables))
    if danger is not None:
        return f"overwrites {danger.what}"
    if command.name == "mv":
        moved = _first(_disk_or_tree(t) for t in _targets(sources, variables))
        if moved is not None:
            return f"moves away {moved.what}"
    return ""


def _dd(command: Command, variables: Variables) -> str:
    outputs = [a[3:] for a in command.args if a.startswith("of=")]
    for target in _targets(outputs, variables):
        if target.startswith("/dev/") and not harmless_device(target):
            return "dd writing to a device"
        danger = write_danger(target)
        if danger is not None:
            return f"dd overwriting {danger.what}"
    return ""


def _chmod(command: Command, variables: Variables) -> str:
    options, operands = split_args(command.args, "", ("--reference",))
    recursive = _has_short(options, "R", ("--recursive",))
    operands = operands[1:]  # the first is the mode or the owner
    for target in _targets(operands, variables):
        danger = delete_danger(target)
        if danger is None or danger.kind in ("here", "parent", "unset"):
            continue
        if recursive or danger.kind in ("root", "system"):
            return f"{'recursive ' if recursive else ''}permission change on {danger.what}"
    return ""


def _git(command: Command, variables: Variables) -> str:
    args = list(command.args)
    while args and args[0].startswith("-"):  # global options: -C DIR, -c KEY=VALUE, --git-dir=...
        args = args[2:] if args[0] in ("-C", "-c") else args[1:]
    if not args:
        return ""
    rule = _GIT.get(args[0])
    return rule(args[1:]) if rule is not None else ""


def _git_push(args: list[str]) -> str:
    options, operands = split_args(args, "o", ("--push-option", "--repo", "--receive-pack", "--exec"))
    if any(o in ("--force", "-f", "--force-with-lease", "--mirror") or o.startswith("--force-with-lease=")
           or (not o.startswith("--") and "f" in o[1:]) for o in options):
        return "force push (rewrites the remote's history)"
    if "--delete" in options or _has_short(options, "d") or any(ref.startswith(":") for ref in operands[1:]):
        return "deletes a remote branch"
    if any(ref.startswith("+") for ref in operands[1:]):
        return "force push (rewrites the remote's history)"
    return ""


def _git_checkout(args: list[str]) -> str:
    options, operands = split_args(args)
    everything = {".", "*", ":/", "./"}
    if "--staged" in options and "--worktree" not in options:
        return ""
    if "--" in args:
        operands = args[args.index("--") + 1:]
    return "discards uncommitted changes in every file" if everything & set(operands) else ""


_GIT: dict[str, Callable[[list[str]], str]] = {
    "push": _git_push,
    "reset": lambda a: "discards uncommitted work (git reset --hard)" if "--hard" in a else "",
    "clean": lambda a: "deletes untracked files (git clean -f)" if _has_short(split_args(a)[0], "f", ("--force",))
    else "",
    "checkout": _git_checkout,
    "restore": _git_checkout,
    "branch": lambda a: "force-deletes a branch (git branch -D)" if "-D" in a or ("--delete" in a and "--force" in a)
    else "",
    "stash": lambda a: "deletes every stash (git stash clear)" if a[:1] == ["clear"] else "",
    "filter-branch": lambda a: "rewrites the repository's history (git filter-branch)",
    "reflog": lambda a: "expires the reflog (loses the way back to old commits)" if a[:1] == ["expire"] else "",
}


def _privileged(command: Command, variables: Variables) -> str:
    return "runs with root privileges"


def _power(command: Command, variables: Variables) -> str:
    return "shuts down or reboots the machine"


def _systemctl(command: Command, variables: Variables) -> str:
    verbs = {"poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "emergency", "rescue"}
    return "shuts down or reboots the machine" if verbs & set(command.args) else ""


def _init(command: Command, variables: Variables) -> str:
    return "shuts down or reboots the machine" if command.args[:1] in (("0",), ("6",)) else ""


def _kill(command: Command, variables: Variables) -> str:
    args = list(command.args)
    if args and args[0] in ("-s", "-n"):
        args = args[2:]
    elif args and args[0].startswith("-") and args[0] != "--":
        args = args[1:]  # the signal: -9, -KILL, -1 (SIGHUP)
    pids = [a for a in args if a != "--"]
    return "signals every process (kill -1)" if "-1" in pids or "1" in pids else ""


def _disk_tool(verb: str, listing: tuple[str, ...] = ()) -> Rule:
    def rule(command: Command, variables: Variables) -> str:
        return "" if listing and set(listing) & set(command.args) else verb

    return rule


def _crontab(command: Command, variables: Variables) -> str:
    return "deletes every cron job (crontab -r)" if _has_short(split_args(command.args)[0], "r") else ""


def _sed(command: Command, variables: Variables) -> str:
    options, operands = split_args(command.args, "ef", ("--expression", "--file"))
    if not any(o.startswith(("-i", "--in-place")) or (not o.startswith("--") and "i" in o[1:]) for o in options):
        return ""
    danger = _first(write_danger(t) for t in _targets(operands, variables))
    return f"edits {danger.what} in place" if danger is not None else ""


RULES: dict[str, Rule] = {
    "rm": _rm, "unlink": _write_targets("deletes"), "find": _find,
    "shred": _write_targets("shreds", "ns", ("--iterations", "--size", "--random-source")),
    "truncate": _write_targets("truncates", "sro", ("--size", "--reference")),
    "tee": _write_targets("writes to"), "cp": _copy_or_move, "mv": _copy_or_move, "install": _copy_or_move,
    "ln": _copy_or_move, "rsync": _copy_or_move, "dd": _dd, "sed": _sed,
    "chmod": _chmod, "chown": _chmod, "chgrp": _chmod, "git": _git,
    "sudo": _privileged, "doas": _privileged, "pkexec": _privileged, "su": _privileged, "run0": _privileged,
    "shutdown": _power, "reboot": _power, "halt": _power, "poweroff": _power, "systemctl": _systemctl,
    "init": _init, "telinit": _init, "kill": _kill, "killall5": lambda c, v: "signals every process",
    "mkfs": _disk_tool("formats a file system"), "mke2fs": _disk_tool("formats a file system"),
    "mkswap": _disk_tool("formats a swap device"), "wipefs": _disk_tool("erases file-system signatures", ("-n",)),
    "fdisk": _disk_tool("repartitions a disk", ("-l", "--list")),
    "sfdisk": _disk_tool("repartitions a disk", ("-l", "--list", "-d", "--dump")),
    "parted": _disk_tool("repartitions a disk", ("-l", "--list", "print")),
    "sgdisk": _disk_tool("repartitions a disk", ("-p", "--print")), "blkdiscard": _disk_tool("erases a disk"),
    "crontab": _crontab,
}


# -- rules that look at every command ----------------------------------------------------------------

def _redirect_reason(command: Command, variables: Variables) -> str:
    for redirect in command.redirects:
        if not redirect.writes_file or redirect.target is None:
            continue
        for target in expand(redirect.target, variables):
            danger = write_danger(target)
            if danger is not None:
                return f"writes to {danger.what}"
    return ""


def _consumes_code(command: Command) -> bool:
    return command.name in SHELLS | INTERPRETERS | {"eval", "source", "."} or command.name.startswith("python3.")


def _code_source_reason(command: Command, variables: Variables) -> str:
    """A shell or interpreter fed code from the network, or decoded at run time, cannot be checked."""
    if not _consumes_code(command):
        return ""
    for word in command.words[1:]:
        if not word.substituted:
            continue
        text = output_text(word.substituted[-1])
        if text is not None:
            reason = dangerous_reason(text)
            if reason:
                return reason
            continue
        reason = _unknown_code_reason(word.substituted)
        if reason:
            return reason
    if command.upstream and stdin_text(command) is None and _reads_program_from_stdin(command):
        return _unknown_code_reason(command.upstream)
    return ""


def _reads_program_from_stdin(command: Command) -> bool:
    _, operands = split_args(command.args, "co" if command.name in SHELLS else "cmWX")
    if command.name in SHELLS:
        return "-c" not in command.args and (not operands or "-s" in command.args)
    return not operands or operands[0] == "-"


def _unknown_code_reason(sources: Iterable[Command]) -> str:
    names = {c.name for c in sources}
    if names & DOWNLOADERS:
        return "downloads a script and pipes it to a shell or interpreter"
    if names & DECODERS:
        return "decodes hidden code at run time and runs it"
    return ""


def _unknown_program_reason(command: Command, variables: Variables) -> str:
    """`$CMD -rf /` or `$(echo rm) -rf ~`: the program is unknown, so dangerous targets decide."""
    if not command.dynamic_name:
        return ""
    danger = _first(_disk_or_tree(t) for t in _targets(list(command.args), variables))
    return f"runs a program computed at run time on {danger.what}" if danger is not None else ""


def _downloaded_files(commands: Iterable[Command]) -> frozenset[str]:
    """Files a downloader writes (`curl -o x.sh`, `wget -O x.sh`), to catch `... && bash x.sh`."""
    files: set[str] = set()
    for command in commands:
        args = list(command.args)
        flags = {"curl": ("-o", "--output"), "wget": ("-O", "--output-document")}.get(command.name, ())
        for i, arg in enumerate(args[:-1]):
            if arg in flags:
                files.update({args[i + 1], "./" + args[i + 1].removeprefix("./")})
    return frozenset(files)
