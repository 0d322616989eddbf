"""The dangerous-command guard: commands that ask even in auto mode, and never get "always".

It is a speed bump, not a wall; the sandbox (`swecli/tools/sandbox.py`) is the wall. It judges the
parsed command line (`swecli/tools/shell.py`), not its raw text: every command the line would run is
checked, including the ones behind wrappers (`sudo`, `xargs`, `parallel`, `env`, `busybox`), inside
`bash -c`/`eval` strings, functions and aliases the line defines (called with their arguments), text piped
into a shell (decoded when it is literal base64), `find -exec`, and inline Python (`python3 -c`, parsed
with `ast`) or Perl/Ruby/Node one-liners. Quoting tricks do not hide a command (`r\\m`, `'r'm`, `$'\\x72m'`
and `/bin/rm` are all `rm`), and paths are read as the line makes them (`swecli/tools/targets.py`:
`${HOME:?}`, a `cd ~` earlier, `$(echo ~)`, what `find ~ | xargs` feeds).

Each rule returns why the command is dangerous; the reason is shown to the person who approves and
to the model when refused. What counts as a dangerous target (root, system and home directories,
credentials, shell profiles, disks) is in `swecli/tools/protected.py`; the git rules are in
`swecli/tools/gitguard.py`. `rm -rf build/` and `git push origin feature` pass; `rm -rf ~`,
`find / -delete`, `shred ~/.ssh/id_rsa`, `rm -rf .git` and emptying every file of the project ask.
Documented with its corpora and numbers in docs/security/guard.md.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Iterator

from swecli.tools.gitguard import git_reason, has_short, split
from swecli.tools.inline import AWKS, interpreter_danger
from swecli.tools.protected import SCRATCH, Danger, delete_danger, harmless_device, write_danger
from swecli.tools.shell import SHELLS, Command, Script, Word, follow, output_text, parse, stdin_text
from swecli.tools.targets import (
    Scope,
    env_file,
    everything,
    expand,
    expand_all,
    find_narrowed,
    listing,
    repository,
    repository_file,
)

DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "nc", "ncat", "socat", "http", "https", "xh"})
DECODERS = frozenset({"base64", "base32", "xxd", "openssl", "gunzip", "zcat", "gzip", "bzip2", "xz", "uudecode",
                      "rev", "tr"})
INTERPRETERS = frozenset({"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "deno",
                          "bun", "Rscript"})
MANY_EMPTIED = 5
"""A line that empties this many different files (`: > a; : > b; ...`) is emptying the project."""

Rule = Callable[[Command, Scope], str]


def dangerous_reason(command: str) -> str:
    """Why `command` is dangerous, or "" when no rule matches."""
    return script_reason(parse(command))


def script_reason(script: Script) -> str:
    for function in script.functions:
        calls = [c for c in function.commands if c.name == function.name]
        if len(calls) >= 2 or (calls and function.background):
            return "fork bomb (a function that keeps starting copies of itself)"
    scope = Scope(script.variables, script.computed, _downloaded_files(script.commands))
    for command in script.walk():
        reason = command_reason(command, scope)
        if reason:
            return reason + (f" (run through {command.via})" if command.via else "")
    return _mass_emptying(script, scope)


def command_reason(command: Command, scope: Scope) -> str:
    """Why this one command (not what it runs) is dangerous, or ""."""
    rule = RULES.get("mkfs" if command.name.startswith("mkfs.") else command.name)
    reason = rule(command, scope) if rule is not None else ""
    if reason:
        return reason
    for check in (_redirect_reason, _code_source_reason, _unknown_program_reason, _fed_reason):
        reason = check(command, scope)
        if reason:
            return reason
    if _runs_download(command, scope.downloaded):
        return "runs a script it just downloaded"
    if command.name in INTERPRETERS or command.name in AWKS or command.name.startswith("python3."):
        return interpreter_danger(command, dangerous_reason)
    return ""


def _runs_download(command: Command, downloaded: frozenset[str]) -> bool:
    if not command.words or not downloaded:
        return False
    if command.words[0].text in downloaded:
        return True
    return _consumes_code(command) and any(a in downloaded for a in command.args)


# -- reading words -------------------------------------------------------------------------------------

def operands(command: Command, takes_value: str = "", long_values: tuple[str, ...] = ()) -> tuple[
        list[str], list[Word]]:
    """(options, operand words) of the command's arguments."""
    options: list[str] = []
    found: list[Word] = []
    words = iter(command.words[1:])
    for word in words:
        text = word.text
        if text == "--":
            found.extend(words)
            break
        if text.startswith("-") and len(text) > 1 and word.literal:
            options.append(text)
            if (text in long_values) or (not text.startswith("--") and len(text) == 2 and text[1] in takes_value):
                next(words, None)
        else:
            found.append(word)
    return options, found


def _targets(words: Iterable[Word | str], command: Command, scope: Scope) -> list[str]:
    return expand_all(words, scope, command.cwd)


def _first(dangers: Iterator[Danger | None]) -> Danger | None:
    return next((d for d in dangers if d is not None), None)


def _damage(target: str) -> Danger | None:
    """What writing over, truncating or deleting the file `target` damages: protected places (write_danger)
    and the files git keeps a repository in (`.git/HEAD`, `.git/*`)."""
    return write_danger(target) or repository_file(target)


def _tree_danger(target: str) -> Danger | None:
    """What deleting `target` recursively destroys: protected places and git repositories."""
    return delete_danger(target) or repository(target)


# -- rules ---------------------------------------------------------------------------------------------

def _rm(command: Command, scope: Scope) -> str:
    options, words = operands(command)
    if "--no-preserve-root" in options:
        return "rm with --no-preserve-root"
    targets = _targets(words, command, scope)
    if has_short(options, "rR", ("--recursive",)):
        danger = _first(_tree_danger(t) for t in targets)
        return f"recursive delete of {danger.what}" if danger is not None else ""
    danger = _first(_damage(t) or _glob_of_tree(t) or env_file(t) for t in targets)
    if danger is not None:
        return f"delete of {danger.what}"
    whole = next((everything(t) for t in targets if t.removeprefix("./") in ("*", "**/*")), "")
    return f"deletes {whole}" if whole else ""


def _glob_of_tree(target: str) -> Danger | None:
    """`rm ~/*`: every file of a protected directory, even without -r."""
    if not target.endswith("*"):
        return None
    danger = delete_danger(target)
    return danger if danger is not None and danger.kind in ("root", "home", "system", "secret") else None


_FIND_EXEC = ("-exec", "-execdir", "-ok", "-okdir")
_FIND_WRITES = ("-fls", "-fprint", "-fprint0", "-fprintf")


def _find(command: Command, scope: Scope) -> str:
    args = list(command.args)
    split_at = next((i for i, a in enumerate(args) if a.startswith(("-", "(", "!"))), len(args))
    roots, expression = args[:split_at] or ["."], args[split_at:]
    written = _find_written(expression, command, scope)
    if written:
        return written
    delete_at = next((i for i, a in _outside_exec(expression) if a == "-delete"), None)
    for root in _targets(roots, command, scope):
        reason = _find_delete_reason(root, expression, delete_at) if delete_at is not None else ""
        reason = reason or _find_exec_reason(expression, root, find_narrowed(expression), scope)
        if reason:
            return reason
    return ""


def _find_delete_reason(root: str, expression: list[str], delete_at: int) -> str:
    """`find ROOT ... -delete`: everything under a precious ROOT, unless tests before -delete pick some files
    out of the current directory or of a scratch directory (`find /tmp -name '*.log' -delete`); a picked
    `.env` counts."""
    danger = delete_danger(root)
    if find_narrowed(expression, delete_at):
        secret = _first(env_file(name) for name in _find_names(expression[:delete_at]))
        if secret is not None:
            return f"find -delete of {secret.what}"
        if danger is not None and (danger.kind == "here" or posixpath.normpath(root) in SCRATCH):
            return ""
    return f"find -delete under {danger.what}" if danger is not None else ""


def _find_names(expression: list[str]) -> list[str]:
    """The literal file names a find expression's `-name`/`-iname` tests pick."""
    names = [expression[i + 1] for i, a in enumerate(expression[:-1]) if a in ("-name", "-iname")]
    return [n for n in names if not set(n) & set("*?[")]


def _outside_exec(expression: list[str]) -> list[tuple[int, str]]:
    """(index, word) of the expression's words that are not inside an `-exec ... ;` command."""
    words: list[tuple[int, str]] = []
    inside = False
    for i, word in enumerate(expression):
        if inside:
            inside = word not in (";", "+")
        elif word in _FIND_EXEC:
            inside = True
        else:
            words.append((i, word))
    return words


def _find_written(expression: list[str], command: Command, scope: Scope) -> str:
    """`-fprint FILE` and friends write a file: `find . -fprint /etc/passwd`."""
    for i, word in _outside_exec(expression):
        if word in _FIND_WRITES and i + 1 < len(expression):
            danger = _first(_damage(t) for t in _targets([expression[i + 1]], command, scope))
            if danger is not None:
                return f"find {word} overwrites {danger.what}"
    return ""


def _find_exec_reason(expression: list[str], root: str, narrowed: bool, scope: Scope) -> str:
    """Check what `-exec CMD {} ;` runs, with `{}` standing for the paths find visits."""
    base = root.rstrip("/")
    stand_ins = [f"{base}/found-file", *(f"{base}/{n}" for n in _find_names(expression))] if narrowed else [
        root, f"{base}/*"]
    for i, word in enumerate(expression):
        if word not in _FIND_EXEC:
            continue
        end = next((j for j in range(i + 1, len(expression)) if expression[j] in (";", "+")), len(expression))
        for stand_in in stand_ins:
            words = tuple(Word(w.replace("{}", stand_in)) for w in expression[i + 1:end])
            reason = _first_reason(follow(Command(words, via=f"find {word}")), scope) if words else ""
            if reason and "found-file" in reason:
                where = (delete_danger(root) or Danger("", root)).what
                return f"{reason.split(' of ')[0]} of files found under {where} (find {word})"
            if reason:
                return reason
    return ""


def _first_reason(commands: Iterable[Command], scope: Scope) -> str:
    return next((r for r in (command_reason(c, scope) for c in commands) if r), "")


def _write_targets(verb: str, takes_value: str = "", long_values: tuple[str, ...] = (), empties: bool = False) -> Rule:
    """A rule for commands whose operands are files they overwrite, truncate or destroy."""

    def rule(command: Command, scope: Scope) -> str:
        _, words = operands(command, takes_value, long_values)
        targets = _targets(words, command, scope)
        danger = _first(_damage(t) or _disk_or_tree(t) for t in targets)
        if danger is not None:
            return f"{verb} {danger.what}"
        whole = next((everything(t) for t in targets if everything(t)), "") if empties else ""
        return f"{verb} {whole}" if whole else ""

    return rule


def _disk_or_tree(target: str) -> Danger | None:
    danger = delete_danger(target)
    return danger if danger is not None and danger.kind in ("root", "home", "secret") else None


def _copy_or_move(command: Command, scope: Scope) -> str:
    options, words = operands(command, "tS", ("--target-directory", "--suffix"))
    target_dir = next((o.split("=", 1)[1] for o in options if o.startswith("--target-directory=")), None)
    destinations: list[Word | str] = [target_dir] if target_dir else list(words[-1:])
    sources = words if target_dir else words[:-1]
    targets = _targets(destinations, command, scope)
    danger = _first(_damage(t) for t in targets)
    if danger is not None:
        return f"overwrites {danger.what}"
    if command.name == "cp" and any(s.text == "/dev/null" for s in sources):
        whole = next((everything(t) for t in targets if everything(t)), "")
        if whole:
            return f"empties {whole}"
    if command.name == "mv":
        moved = _first(_disk_or_tree(t) or repository(t) for t in _targets(sources, command, scope))
        if moved is not None:
            return f"moves away {moved.what}"
    return ""


_RSYNC_DELETES = ("--delete", "--del", "--delete-before", "--delete-during", "--delete-delay", "--delete-after",
                  "--delete-excluded", "--delete-missing-args")


def _rsync(command: Command, scope: Scope) -> str:
    """`rsync -a --delete empty/ ~/` deletes everything in the destination that the source lacks."""
    options, words = operands(command, "eBfT", ("--rsh", "--filter", "--exclude", "--include", "--temp-dir",
                                                "--partial-dir", "--log-file", "--backup-dir", "--rsync-path"))
    if len(words) < 2:
        return ""
    destination = _targets(words[-1:], command, scope)
    if any(o.split("=")[0] in _RSYNC_DELETES for o in options):
        danger = _first(_tree_danger(t) for t in destination)
        if danger is not None:
            return f"rsync --delete onto {danger.what} (deletes what the source lacks)"
    danger = _first(write_danger(t) for t in destination)
    return f"overwrites {danger.what}" if danger is not None else ""


def _dd(command: Command, scope: Scope) -> str:
    outputs = [a[3:] for a in command.args if a.startswith("of=")]
    for target in _targets(outputs, command, scope):
        if target.startswith("/dev/") and not harmless_device(target):
            return "dd writing to a device"
        danger = _damage(target)
        if danger is not None:
            return f"dd overwriting {danger.what}"
    return ""


def _chmod(command: Command, scope: Scope) -> str:
    options, words = operands(command, "", ("--reference",))
    recursive = has_short(options, "R", ("--recursive",))
    for target in _targets(words[1:], command, scope):  # the first operand is the mode or the owner
        danger = delete_danger(target)
        if danger is None or danger.kind in ("here", "parent", "unset"):
            continue
        if recursive or danger.kind in ("root", "system"):
            return f"{'recursive ' if recursive else ''}permission change on {danger.what}"
    return ""


def _git(command: Command, scope: Scope) -> str:
    return git_reason(command)


def _privileged(command: Command, scope: Scope) -> str:
    return "runs with root privileges"


def _power(command: Command, scope: Scope) -> str:
    return "shuts down or reboots the machine"


def _systemctl(command: Command, scope: Scope) -> str:
    verbs = {"poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "emergency", "rescue"}
    return "shuts down or reboots the machine" if verbs & set(command.args) else ""


def _init(command: Command, scope: Scope) -> str:
    return "shuts down or reboots the machine" if command.args[:1] in (("0",), ("6",)) else ""


def _kill(command: Command, scope: Scope) -> str:
    args = list(command.args)
    if args and args[0] in ("-s", "-n"):
        args = args[2:]
    elif args and args[0].startswith("-") and args[0] != "--":
        args = args[1:]  # the signal: -9, -KILL, -1 (SIGHUP)
    pids = [a for a in args if a != "--"]
    return "signals every process (kill -1)" if "-1" in pids or "1" in pids else ""


def _disk_tool(verb: str, listing_options: tuple[str, ...] = ()) -> Rule:
    def rule(command: Command, scope: Scope) -> str:
        return "" if listing_options and set(listing_options) & set(command.args) else verb

    return rule


def _crontab(command: Command, scope: Scope) -> str:
    """`crontab -r` deletes every job; `crontab FILE` (`/dev/null`, `-`) replaces them all."""
    options, files = split(list(command.args), "u")
    if has_short(options, "r"):
        return "deletes every cron job (crontab -r)"
    if files or "-" in command.args:
        return "replaces every cron job of the user (crontab FILE)"
    return ""


def _sed(command: Command, scope: Scope) -> str:
    options, words = operands(command, "ef", ("--expression", "--file"))
    if not any(o.startswith(("-i", "--in-place")) or (not o.startswith("--") and "i" in o[1:]) for o in options):
        return ""
    danger = _first(write_danger(t) for t in _targets(words, command, scope))
    return f"edits {danger.what} in place" if danger is not None else ""


RULES: dict[str, Rule] = {
    "rm": _rm, "unlink": _write_targets("deletes"), "find": _find,
    "shred": _write_targets("shreds", "ns", ("--iterations", "--size", "--random-source"), empties=True),
    "truncate": _write_targets("truncates", "sro", ("--size", "--reference"), empties=True),
    "tee": _write_targets("writes to", empties=True), "cp": _copy_or_move, "mv": _copy_or_move,
    "install": _copy_or_move, "ln": _copy_or_move, "rsync": _rsync, "dd": _dd, "sed": _sed,
    "chmod": _chmod, "chown": _chmod, "chgrp": _chmod, "git": _git,
    "sudo": _privileged, "doas": _privileged, "pkexec": _privileged, "su": _privileged, "run0": _privileged,
    "shutdown": _power, "reboot": _power, "halt": _power, "poweroff": _power, "systemctl": _systemctl,
    "init": _init, "telinit": _init, "kill": _kill, "killall5": lambda c, s: "signals every process",
    "mkfs": _disk_tool("formats a file system"), "mke2fs": _disk_tool("formats a file system"),
    "mkswap": _disk_tool("formats a swap device"), "wipefs": _disk_tool("erases file-system signatures", ("-n",)),
    "fdisk": _disk_tool("repartitions a disk", ("-l", "--list")),
    "sfdisk": _disk_tool("repartitions a disk", ("-l", "--list", "-d", "--dump")),
    "parted": _disk_tool("repartitions a disk", ("-l", "--list", "print")),
    "sgdisk": _disk_tool("repartitions a disk", ("-p", "--print")), "blkdiscard": _disk_tool("erases a disk"),
    "crontab": _crontab,
}


# -- rules that look at every command ------------------------------------------------------------------

def _redirect_reason(command: Command, scope: Scope) -> str:
    for redirect in command.redirects:
        if not redirect.writes_file or redirect.target is None:
            continue
        for target in expand(redirect.target, scope, command.cwd):
            danger = _damage(target)
            if danger is not None:
                return f"writes to {danger.what}"
            whole = everything(target) if redirect.op in (">", ">|") else ""
            if whole and target.removeprefix("./") != ".":
                return f"empties {whole}"
    return ""


def _mass_emptying(script: Script, scope: Scope) -> str:
    """`: > a.py; : > b.py; ...`: one file emptied is routine, a line emptying many is not."""
    emptied: set[str] = set()
    for command in script.commands:
        if command.name not in ("", ":", "true") or command.args:
            continue
        for redirect in command.redirects:
            if redirect.op in (">", ">|") and redirect.target is not None and \
                    not harmless_device(redirect.target.text):
                emptied.add(redirect.target.text)
    return f"empties {len(emptied)} files" if len(emptied) >= MANY_EMPTIED else ""


def _consumes_code(command: Command) -> bool:
    return command.name in SHELLS | INTERPRETERS | {"eval", "source", "."} or command.name.startswith("python3.")


def _code_source_reason(command: Command, scope: Scope) -> str:
    """A shell or interpreter fed code from the network, or decoded at run time, cannot be checked."""
    if not _consumes_code(command):
        return ""
    for word in command.words[1:]:
        reason = _word_code_reason(word, scope)
        if reason:
            return reason
    if command.upstream and stdin_text(command) is None and _reads_program_from_stdin(command):
        return _unknown_code_reason(command.upstream)
    return ""


def _word_code_reason(word: Word, scope: Scope) -> str:
    """The code in `$(...)` or in a variable set from a command (`x=$(curl ...); eval $x`)."""
    sources = [*word.substituted[-1:], *(c for n in word.parameters for c in scope.computed.get(n, ())[-1:])]
    for source in sources:
        text = output_text(source)
        if text is not None:
            reason = dangerous_reason(text)
            if reason:
                return reason
            continue
        reason = _unknown_code_reason((*source.upstream, source))
        if reason:
            return reason
    return ""


def _reads_program_from_stdin(command: Command) -> bool:
    _, files = split(list(command.args), "co" if command.name in SHELLS else "cmWX")
    if command.name in SHELLS:
        return "-c" not in command.args and (not files or "-s" in command.args)
    return not files or files[0] == "-"


def _unknown_code_reason(sources: Iterable[Command]) -> str:
    names = {c.name for c in sources}
    if names & DOWNLOADERS:
        return "downloads a script and pipes it to a shell or interpreter"
    if names & DECODERS:
        return "decodes hidden code at run time and runs it"
    return ""


def _unknown_program_reason(command: Command, scope: Scope) -> str:
    """`$CMD -rf /` or `$(echo rm) -rf ~`: the program is unknown, so dangerous targets decide."""
    if not command.dynamic_name:
        return ""
    danger = _first(_disk_or_tree(t) for t in _targets(command.words[1:], command, scope))
    return f"runs a program computed at run time on {danger.what}" if danger is not None else ""


def _fed_reason(command: Command, scope: Scope) -> str:
    """`find ~ | xargs rm -rf`, `ls | parallel rm`: the command runs on what the pipeline before lists."""
    if command.via not in ("xargs", "parallel") or not command.upstream or stdin_text(command) is not None:
        return ""
    paths = listing(command.upstream[-1])
    if not paths:
        return _fed_by_narrowed_find(command, scope)
    for path in paths:
        words = tuple(Word(w.text.replace("{}", path)) if "{}" in w.text else w for w in command.words)
        fed = Command(words if words != command.words else (*command.words, Word(path)), cwd=command.cwd)
        reason = _first_reason(follow(fed), scope)
        if reason:
            return f"{reason} (fed by {command.upstream[-1].name})"
    return ""


def _fed_by_narrowed_find(command: Command, scope: Scope) -> str:
    """`find ~/old -name '*.log' | xargs rm`: as `find ~/old -name '*.log' -delete`, files picked out of a
    precious directory are its files (the picked ones cannot be named, so the directory decides)."""
    upstream = command.upstream[-1]
    if upstream.name != "find" or command.name not in ("rm", "unlink", "shred", "truncate"):
        return ""
    args = list(upstream.args)
    split_at = next((i for i, a in enumerate(args) if a.startswith(("-", "(", "!"))), len(args))
    for root in _targets(args[:split_at] or ["."], upstream, scope):
        reason = _find_delete_reason(root, args[split_at:], len(args) - split_at)
        if reason:
            return f"{command.name} of files found under {reason.split(' under ', 1)[-1]}"
    return ""


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
