"""Shell command lines as data, for the dangerous-command guard and the read-only classifier.

    script = parse("cd src && sudo rm -rf build | tee log")
    for command in script.walk():       # every command the line would run, at any depth
        command.name, command.args, command.redirects, command.via, command.cwd

`parse` reads the line with tree-sitter-bash (`swecli/tools/bashtree.py`): quotes and backslashes are
removed as bash removes them (`r\\m` is `rm`), and every simple command is found wherever it sits: in
pipelines, `&&`/`;` lists, `if`/`for`/`while`/`case` bodies, functions, subshells, `[[ ]]` and
`$(...)`/`<(...)` substitutions, heredoc'ed or not.

`walk` also follows what a command runs: the command behind a wrapper (`sudo`, `env`, `nohup`,
`timeout`, `xargs`, `busybox`, ...), the code given to `bash -c`/`sh -c`/`eval`/`su -c`/`ssh host`/`watch`/
`parallel`, a function or alias the line defines (with the arguments of the call), and text that reaches a
shell's stdin when it can be known: a literal `echo`/`printf`, a heredoc or here-string, and literal base64
or hex decoded on the way (`echo <b64> | base64 -d | sh`). Each command reached that way carries `via`
("bash -c", "a pipe into sh", "function f", ...), to a bounded depth.

A line tree-sitter-bash cannot parse (a syntax error: bash would refuse it too) is split with shlex at the
control operators instead: words and redirections are still found but the structure is approximate, and
`Script.exact` is False so callers can be careful.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
import shlex
from collections.abc import Iterator
from dataclasses import field, replace

from swecli.records import datarecord

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"})
"""Programs that run shell code from `-c`, a script file, or their stdin."""
MAX_DEPTH = 4
"""How many times `walk` follows code into code (`bash -c "eval '...'"`): enough for real use."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")


@datarecord(frozen=True)
class Word:
    """One shell word after quote removal; expansions are left as written (`$HOME`, `$(cmd)`)."""

    text: str
    parameters: tuple[str, ...] = ()
    """Names of the `$NAME` / `${NAME...}` expansions in the word."""
    substituted: tuple[Command, ...] = ()
    """The commands inside its `$(...)`, backquote and `<(...)` substitutions."""

    @property
    def literal(self) -> bool:
        """True when the word means exactly its text (no expansion is needed to know it)."""
        return not self.parameters and not self.substituted


@datarecord(frozen=True)
class Redirect:
    op: str
    """`>`, `>>`, `>|`, `&>`, `<`, `<<`, `<<<`, `>&`, `<&`, ..."""
    target: Word | None
    """The file (or here-string); None for a duplication such as `2>&1`."""
    fd: int | None = None
    heredoc: str = ""

    @property
    def writes_file(self) -> bool:
        """An output redirection to a file (not a descriptor duplication)."""
        return self.target is not None and self.op in (">", ">>", ">|", "&>", "&>>", "<>", ">&")


@datarecord(frozen=True)
class Command:
    """One simple command as the shell would run it."""

    words: tuple[Word, ...]
    assignments: tuple[Word, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    upstream: tuple[Command, ...] = ()
    """The earlier stages of its pipeline, whose output is its stdin (nearest last)."""
    via: str = ""
    """How `walk` reached it when not written directly: "sudo", "bash -c", "a pipe into sh", ..."""
    cwd: str = ""
    """The directory an earlier `cd`/`pushd` in the line moved to, as written (`~`, `/`, `src`); "" for the
    directory the line starts in."""

    @property
    def name(self) -> str:
        """The program, as a bare name (`/usr/bin/rm` is `rm`); "" for a pure assignment."""
        if not self.words:
            return ""
        text = self.words[0].text
        return text.rsplit("/", 1)[-1] if text.startswith("/") else text

    @property
    def args(self) -> tuple[str, ...]:
        return tuple(w.text for w in self.words[1:])

    @property
    def dynamic_name(self) -> bool:
        """The program is computed at run time (`$CMD`, `$(which rm)`), so it cannot be known here."""
        return bool(self.words) and not self.words[0].literal

    def shifted(self, start: int, via: str) -> Command:
        """The command that starts at word `start` (what a wrapper such as `sudo` runs)."""
        return replace(self, words=self.words[start:], assignments=(), via=via)


@datarecord(frozen=True)
class Function:
    name: str
    commands: tuple[Command, ...]
    background: bool
    """Its body starts something with `&`."""


@datarecord(frozen=True)
class Script:
    source: str
    commands: tuple[Command, ...]
    """Every simple command, in order, at any nesting (substitutions included)."""
    functions: tuple[Function, ...] = ()
    variables: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Literal values given to variables in the line (`D=/`, `for d in a b`), for expanding `$D`."""
    exact: bool = True
    """False when tree-sitter-bash could not parse the line and the shlex fallback split it."""
    error: str = ""
    aliases: dict[str, str] = field(default_factory=dict)
    """`alias NAME=VALUE` in the line: NAME at the start of a later command runs VALUE."""
    computed: dict[str, tuple[Command, ...]] = field(default_factory=dict)
    """Variables that hold a command's output: `x=$(curl ...)`, `for f in $(find .)`, `find | while read f`."""

    @property
    def substitutions(self) -> bool:
        return any(w.substituted for c in self.commands for w in (*c.words, *c.assignments)) or any(
            r.target is not None and r.target.substituted for c in self.commands for r in c.redirects)

    def walk(self) -> Iterator[Command]:
        """Every command the line would run: its own, then what wrappers, code strings, and the functions
        and aliases the line defines run."""
        functions = {f.name: f for f in self.functions}
        for command in self.commands:
            yield from follow(command)
            function = functions.get(command.name)
            if function is not None:
                for inner in function.commands:
                    yield from follow(bind(inner, command.words[1:], f"function {function.name}"), 1)
            alias = self.aliases.get(command.name)
            if alias is not None:
                code = " ".join([alias, *(w.text for w in command.words[1:])])
                for inner in parse(code).commands:
                    yield from follow(replace(inner, via=inner.via or f"alias {command.name}"), 1)


_POSITIONAL = re.compile(r"\$\{?([1-9@*])\}?")


def bind(command: Command, args: tuple[Word, ...], via: str) -> Command:
    """A function's command with `$1`, `$@`, ... replaced by the arguments of a call."""
    def value(match: re.Match[str]) -> str:
        key = match[1]
        if key in "@*":
            return " ".join(a.text for a in args)
        index = int(key) - 1
        return args[index].text if index < len(args) else ""

    def bound(word: Word) -> Word:
        names = [n for n in word.parameters if n not in "123456789@*" or len(n) != 1]
        if len(names) == len(word.parameters):
            return word
        extra = tuple(p for a in args for p in a.parameters)
        return Word(_POSITIONAL.sub(value, word.text), tuple(names) + extra, word.substituted)

    return replace(command, words=tuple(bound(w) for w in command.words),
                   redirects=tuple(replace(r, target=bound(r.target)) if r.target is not None else r
                                   for r in command.redirects), via=via)


@functools.lru_cache(maxsize=512)
def parse(line: str) -> Script:
    """Parse a command line; never raises (a line tree-sitter cannot parse is split approximately)."""
    from swecli.tools.bashtree import read

    script = read(line)
    return script if script is not None else _fallback(line, "syntax error (tree-sitter-bash)")


# -- the shlex fallback -----------------------------------------------------------------------------

_CONTROL = {";", "&", "&&", "|", "||", "|&", "(", ")", ";;", "&;", ";&"}
_REDIRECT = re.compile(r"^(?:\d*|&)(?:>>|>\||>&|>|<<<|<<-|<<|<&|<>|<)$")
_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!", "time",
             "coproc", "esac", "in"}


def _fallback(line: str, error: str) -> Script:
    lexer = shlex.shlex(_newlines_to_semicolons(line), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    try:
        tokens = [piece for token in lexer for piece in _operators(token)]
    except ValueError:  # unbalanced quotes: bash would refuse the line too; split on blanks to see the words
        tokens = line.replace(";", " ; ").replace("|", " | ").replace("&", " & ").split()
    commands: list[Command] = []
    upstream: tuple[Command, ...] = ()
    segment: list[str] = []
    for token in [*tokens, ";"]:
        if token not in _CONTROL:
            segment.append(token)
            continue
        command = _segment_command(segment, upstream)
        segment = []
        if command is not None:
            commands.append(command)
        upstream = (*upstream, command) if token in ("|", "|&") and command is not None else ()
    return Script(line, (*_substituted_commands(line), *commands), exact=False, error=error)


_SUBSTITUTION = re.compile(r"`([^`]+)`|\$\(([^()]*)\)")


def _substituted_commands(line: str) -> list[Command]:
    """The commands inside `...` and $(...) of a line that cannot be parsed: bash runs them before it
    notices the rest is wrong (`echo $((x`cmd`y))`)."""
    found: list[Command] = []
    for match in _SUBSTITUTION.finditer(line):
        inner = match[1] or match[2]
        if inner and inner != line:
            found.extend(parse(inner).commands)
    return found


_OPERATORS = ("<<<", "&>>", ">>", "<<", "&&", "||", "|&", ";;", ">&", "<&", "&>", ">|", ";", "&", "|", "(", ")", "<",
              ">")


def _operators(token: str) -> list[str]:
    """shlex glues adjacent punctuation (`));`, `&&(`): split it into bash's operators, longest first."""
    if not token or set(token) - set(";&|()<>"):
        return [token]
    pieces: list[str] = []
    while token:
        operator = next(op for op in _OPERATORS if token.startswith(op))
        pieces.append(operator)
        token = token[len(operator):]
    return pieces


def _segment_command(tokens: list[str], upstream: tuple[Command, ...]) -> Command | None:
    while tokens and (tokens[0] in _KEYWORDS or tokens[0].endswith(")")):
        tokens = tokens[1:]
    if tokens[:1] in (["for"], ["case"], ["select"]):
        return None  # `for x in a b` / `case $x in`: the loop's header, not a command
    words: list[Word] = []
    redirects: list[Redirect] = []
    assignments: list[Word] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if _REDIRECT.match(token):
            target = _fallback_word(tokens[i + 1]) if i + 1 < len(tokens) else None
            redirects.append(Redirect(token.lstrip("0123456789"), target))
            i += 2
            continue
        if not words and re.match(r"^[A-Za-z_]\w*=", token):
            assignments.append(_fallback_word(token))
        else:
            words.append(_fallback_word(token))
        i += 1
    if not words and not assignments:
        return None
    return Command(tuple(words), tuple(assignments), tuple(redirects), upstream)


def _fallback_word(text: str) -> Word:
    names = tuple(m.group(1) or m.group(2) for m in re.finditer(r"\$\{?([A-Za-z_]\w*)|\$([0-9@*#?$!])", text))
    return Word(text, names)


def _newlines_to_semicolons(line: str) -> str:
    """shlex treats newlines as blanks; outside quotes they separate commands."""
    out: list[str] = []
    quote = ""
    escaped = False
    for char in line:
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "\n":
            char = ";"
        out.append(char)
    return "".join(out)


# -- following what a command runs ------------------------------------------------------------------

def follow(command: Command, depth: int = 0) -> Iterator[Command]:
    """The command, then (recursively) the command a wrapper runs and the commands in code it runs."""
    yield command
    if depth >= MAX_DEPTH:
        return
    inner = unwrap(command)
    if inner is not None:
        yield from follow(_with_xargs_input(command, inner), depth + 1)
    for code, via in code_strings(command):
        for nested in parse(code).commands:
            yield from follow(replace(nested, via=nested.via or via), depth + 1)


# Wrappers that run the rest of their arguments as a command: the short options that take a value, and the
# long ones that take the next word.
_WRAPPERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "sudo": ("ugpChDrtTU", ("--user", "--group", "--prompt", "--host", "--chdir", "--role", "--type",
                            "--close-from", "--other-user")),
    "doas": ("uC", ()), "env": ("uSCP", ("--unset", "--chdir", "--split-string")), "nohup": ("", ()),
    "nice": ("n", ("--adjustment",)), "ionice": ("cnp", ("--class", "--classdata", "--pid")),
    "timeout": ("sk", ("--signal", "--kill-after")), "time": ("fo", ("--format", "--output")),
    "command": ("", ()), "exec": ("a", ()), "builtin": ("", ()), "stdbuf": ("ioe", ()),
    "xargs": ("aIdELnPsJ", ("--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-lines",
                            "--max-chars", "--eof", "--process-slot-var")),
    "parallel": ("jSnNLPIkXa", ("--jobs", "--sshlogin", "--max-args", "--max-replace-args", "--arg-file",
                                "--delimiter", "--joblog", "--results", "--tmpdir", "--workdir", "--timeout")),
    "setsid": ("", ()), "chronic": ("", ()), "torsocks": ("", ()), "proxychains": ("f", ()),
    "proxychains4": ("f", ()), "unbuffer": ("", ()), "nsenter": ("tSGwr", ()), "chroot": ("", ()),
    "caffeinate": ("", ()), "flock": ("wEc", ()), "strace": ("eoOpsuP", ()), "ltrace": ("eoOpsuP", ()),
    "firejail": ("", ()), "rlwrap": ("", ()), "busybox": ("", ()), "toybox": ("", ()), "coproc": ("", ()),
}
_POSITIONAL_FIRST = {"timeout": 1, "chroot": 1, "flock": 1}
"""Wrappers whose first positional argument is theirs (a duration, a directory, a lock file)."""


def unwrap(command: Command) -> Command | None:
    """The command a wrapper runs (`sudo rm x` -> `rm x`), or None when it is not a wrapper (or, as with
    `command -v git`, only names the program)."""
    spec = _WRAPPERS.get(command.name)
    if spec is None:
        return None
    if command.name == "parallel" and any(w.text.startswith(":::") for w in command.words):
        return None  # the arguments are the inputs: code_strings() runs them
    start = _wrapped_start(command, spec)
    if start is None or start >= len(command.words):
        return None
    return command.shifted(start, command.name)


def _wrapped_start(command: Command, spec: tuple[str, tuple[str, ...]]) -> int | None:
    takes_value, long_values = spec
    skip_positional = _POSITIONAL_FIRST.get(command.name, 0)
    words = command.words
    i = 1
    while i < len(words):
        text = words[i].text
        if text == "--":
            return i + 1
        if command.name == "env" and (("=" in text and not text.startswith("-")) or text == "-"):
            i += 1
            continue
        if command.name == "command" and text.startswith("-") and set(text[1:]) & {"v", "V"}:
            return None  # `command -v git` prints where git is; nothing runs
        if text.startswith("-") and len(text) > 1:
            short = len(text) == 2 and text[1] in takes_value
            i += 2 if short or text in long_values else 1
            continue
        if skip_positional:
            skip_positional -= 1
            i += 1
            continue
        return i
    return i


def _with_xargs_input(wrapper: Command, inner: Command) -> Command:
    """`echo a b | xargs rm` runs `rm a b`, and `echo x | xargs -I{} sh -c {}` runs `sh -c x`: the words
    xargs reads, when the line fixes them."""
    if wrapper.name not in ("xargs", "parallel"):
        return inner
    options = [w.text for w in wrapper.words[1:len(wrapper.words) - len(inner.words)]]
    text = stdin_text(wrapper)
    if not text or any(o in ("-a", "--arg-file") or o.startswith(("-a", "--arg-file=")) for o in options):
        return inner
    replaced = _replace_string(options, wrapper.name)
    if replaced is None or (not any(replaced in w.text for w in inner.words) and wrapper.name == "parallel"):
        return replace(inner, words=inner.words + tuple(Word(token) for token in text.split()))
    line = text.strip().split("\n")[0]
    return replace(inner, words=tuple(Word(w.text.replace(replaced, line)) for w in inner.words))


def _replace_string(options: list[str], program: str) -> str | None:
    """The placeholder xargs substitutes with each input line (`-I{}`, `-i`, `--replace`, BSD `-J %`)."""
    if program == "parallel":
        return "{}"
    for i, option in enumerate(options):
        if option in ("-I", "-J") and i + 1 < len(options):
            return options[i + 1]
        if option.startswith(("-I", "-J")) and len(option) > 2:
            return option[2:]
        if option in ("-i", "--replace", "--replace="):
            return "{}"
        if option.startswith(("-i", "--replace=")):
            return option.split("=", 1)[1] if option.startswith("--") else option[2:]
    return None


def _parallel_code(command: Command) -> list[tuple[str, str]]:
    """`parallel CMD ::: a b` runs `CMD a` and `CMD b` through a shell; `parallel ::: 'ls' 'pwd'` runs each
    argument as a command line."""
    args = [w.text for w in command.words]
    start = _wrapped_start(replace(command, words=tuple(w for w in command.words if not w.text.startswith(":::"))),
                           _WRAPPERS["parallel"]) or 1
    rest = args[start:]
    marker = next((i for i, a in enumerate(rest) if a.startswith(":::")), None)
    if marker is None or rest[marker] != ":::":
        return []  # fed by stdin (unwrap follows it) or by files (`::::`)
    template, items = rest[:marker], [a for a in rest[marker + 1:] if not a.startswith(":::")]
    codes = []
    for item in items:
        if not template:
            codes.append((item, "parallel"))
        elif any("{}" in t for t in template):
            codes.append((shlex.join(t.replace("{}", item) for t in template), "parallel"))
        else:
            codes.append((shlex.join([*template, item]), "parallel"))
    return codes


def code_strings(command: Command) -> list[tuple[str, str]]:
    """Shell code the command runs, as (code, how): `bash -c CODE`, `eval`, `su -c`, `ssh HOST CMD`,
    `watch CMD`, and the text piped, here-doc'ed or here-string'ed into a shell when it can be known."""
    name, args = command.name, command.args
    if name in SHELLS:
        code = _shell_code(command)
        if code is not None:
            return [(code, f"{name} -c")]
        if _reads_stdin(command):
            text = stdin_text(command)
            return [(text, f"a pipe into {name}")] if text is not None else []
        return []
    if name == "eval":
        return [(" ".join(args), "eval")]
    if name in ("su", "runuser") and "-c" in args:
        index = args.index("-c")
        return [(args[index + 1], name + " -c")] if index + 1 < len(args) else []
    if name == "ssh":
        remote = _ssh_command(args)
        return [(remote, "ssh")] if remote else []
    if name == "watch":
        rest = _after_options(args, "nd")
        return [(" ".join(rest), "watch")] if rest else []
    if name == "parallel":
        return _parallel_code(command)
    return []


def _shell_code(command: Command) -> str | None:
    """The code of `sh -c CODE` (also `-lc`, `-ec`, `-o pipefail -c`), or None."""
    args = command.args
    seen_c = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith(("-", "+")) and len(arg) > 1 and arg != "--":
            seen_c = seen_c or ("c" in arg[1:] and not arg.startswith("--"))
            i += 2 if arg in ("-o", "+o", "-O", "+O") else 1
            continue
        return arg if seen_c else None
    return None


def _reads_stdin(command: Command) -> bool:
    """A shell that will read its program from stdin: no script file, or `-s`."""
    positional = [a for a in command.args if not a.startswith(("-", "+"))]
    return not positional or "-s" in command.args


def stdin_text(command: Command) -> str | None:
    """The text the command reads on stdin when it is fixed by the line itself, else None.

    Known: a heredoc or here-string; a pipe from `echo`/`printf` with literal words, passed through
    `cat`, `base64 -d` (decoded), `xxd -r -p` (hex decoded) or `rev`.
    """
    for redirect in command.redirects:
        if redirect.op in ("<<", "<<-"):
            return redirect.heredoc
        if redirect.op == "<<<" and redirect.target is not None:
            return redirect.target.text + "\n" if redirect.target.literal else None
    if not command.upstream:
        return None
    source = command.upstream[-1]
    return output_text(source)


def output_text(command: Command) -> str | None:
    """What the command writes to stdout when the line itself fixes it (`echo`, `printf`, decoders
    of a known input), else None."""
    if any(not w.literal for w in command.words):
        return None
    name, args = command.name, command.args
    if name == "echo":
        words = [a for a in args if a not in ("-n", "-e", "-E")]
        return " ".join(words) + "\n"
    if name == "printf" and args:
        return _printf(args[0], args[1:])
    path = _path_printed(command)
    if path is not None:
        return path + "\n"
    upstream_text = stdin_text(command)
    if upstream_text is None:
        return None
    return _transform(name, args, upstream_text)


_GIT_PATHS = {"--git-dir": ".git", "--absolute-git-dir": ".git", "--show-toplevel": ".", "--show-cdup": "."}


def _path_printed(command: Command) -> str | None:
    """The path `pwd`, `realpath X`, `readlink -f X` and `git rev-parse --git-dir/--show-toplevel` print, as the
    line knows it (`.` is the directory the line is in): `rm -rf "$(pwd)"` deletes the current directory."""
    name, args = command.name, [a for a in command.args if not a.startswith("-")]
    if name == "pwd":
        return command.cwd or "."
    if (name == "realpath" or (name == "readlink" and "-f" in command.args)) and len(args) == 1:
        return args[0]
    if name == "git" and command.args[:1] == ("rev-parse",) and len(command.args) == 2:
        return _GIT_PATHS.get(command.args[1])
    return None


def _printf(template: str, values: tuple[str, ...]) -> str | None:
    template = template.replace("\\n", "\n")
    if "%" not in template:
        return template
    if template.rstrip("\n") == "%s":
        return " ".join(values) + template[2:]
    return None  # other formats: not worth emulating


def _transform(name: str, args: tuple[str, ...], text: str) -> str | None:
    if name == "cat" and not [a for a in args if a != "-"]:
        return text
    if name == "rev":
        return "\n".join(line[::-1] for line in text.split("\n"))
    try:
        if name in ("base64", "base32") and any(a in ("-d", "--decode", "-D") for a in args):
            blob = "".join(text.split())
            decoded = base64.b64decode(blob + "=" * (-len(blob) % 4)) if name == "base64" else \
                base64.b32decode(blob)
            return decoded.decode("utf-8", errors="replace")
        if name == "xxd" and "-r" in args:
            return binascii.unhexlify("".join(text.split())).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        return None
    return None


_SSH_VALUE_OPTIONS = set("BbcDEeFIiJLlmOoPpQRSWw")


def _ssh_command(args: tuple[str, ...]) -> str:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        flag = args[i]
        i += 2 if len(flag) == 2 and flag[1] in _SSH_VALUE_OPTIONS else 1
    return " ".join(args[i + 1:])  # args[i] is the host


def _after_options(args: tuple[str, ...], takes_value: str) -> tuple[str, ...]:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        flag = args[i]
        i += 2 if len(flag) == 2 and flag[1] in takes_value else 1
    return args[i:]
