"""The shell parser: commands, words, redirections, and what `walk` follows into."""

from __future__ import annotations

import base64

from swecli.tools.shell import parse, stdin_text


def names(line: str) -> list[tuple[str, tuple[str, ...], str]]:
    return [(c.name, c.args, c.via) for c in parse(line).walk()]


def test_quotes_and_backslashes_are_removed_as_bash_removes_them() -> None:
    assert [c.name for c in parse(r"""r\m -rf x; 'r'm y; "rm" z; /bin/rm w""").commands] == ["rm"] * 4
    assert parse(r'\"rm\" z').commands[0].name == '"rm"'  # escaped quotes are part of the word
    assert parse("echo 'a  b' \"c $HOME\"").commands[0].args == ("a  b", "c $HOME")


def test_every_command_is_found_at_any_nesting() -> None:
    line = "if true; then (cd src && make); fi | tee log; for f in *.py; do wc -l $f; done; x=$(git rev-parse HEAD)"
    assert [c.name for c in parse(line).commands] == ["true", "cd", "make", "tee", "wc", "git", ""]
    script = parse("f() { ls; }; f")
    assert [f.name for f in script.functions] == ["f"] and script.functions[0].commands[0].name == "ls"


def test_words_know_their_expansions() -> None:
    command = parse('cat "$HOME/x" ${FILE:-y} $(ls) plain').commands[-1]
    assert [w.parameters for w in command.words[1:]] == [("HOME",), ("FILE",), (), ()]
    assert [c.name for c in command.words[3].substituted] == ["ls"]
    assert command.words[4].literal and not command.words[3].literal
    assert parse("$CMD -x").commands[0].dynamic_name


def test_redirections() -> None:
    command = parse("cmd < in.txt > out.txt 2>&1 >> log 2>/dev/null").commands[0]
    ops = [(r.op, r.target.text if r.target else None, r.fd, r.writes_file) for r in command.redirects]
    assert ops == [("<", "in.txt", None, False), (">", "out.txt", None, True), (">&", None, 2, False),
                   (">>", "log", None, True), (">", "/dev/null", 2, True)]


def test_pipeline_stages_know_what_feeds_them() -> None:
    a, b, c = parse("curl x | grep y | sh").commands
    assert [u.name for u in c.upstream] == ["curl", "grep"] and a.upstream == ()
    assert [u.name for u in b.upstream] == ["curl"]


def test_wrappers_are_peeled() -> None:
    assert names("sudo -u root env A=1 nice -n 5 timeout 10 ls -l")[-1] == ("ls", ("-l",), "timeout")
    assert names("xargs -I{} -n1 grep foo")[-1] == ("grep", ("foo",), "xargs")
    assert names("echo a b | xargs rm")[-1] == ("rm", ("a", "b"), "xargs")  # literal input is appended


def test_code_strings_are_followed() -> None:
    assert names("bash -lc 'git status'")[-1] == ("git", ("status",), "bash -c")
    assert names("sh -o pipefail -c 'ls | wc'")[-2:] == [("ls", (), "sh -c"), ("wc", (), "sh -c")]
    assert names("eval 'echo hi'")[-1] == ("echo", ("hi",), "eval")
    assert names("ssh -p 22 host 'uptime'")[-1] == ("uptime", (), "ssh")
    assert names("bash script.sh")[-1] == ("bash", ("script.sh",), "")  # a file, not code on the line


def test_text_piped_into_a_shell_is_known_when_the_line_fixes_it() -> None:
    encoded = base64.b64encode(b"git status\n").decode()
    assert names(f"echo {encoded} | base64 -d | sh")[-1] == ("git", ("status",), "a pipe into sh")
    assert names("printf 'ls\\n' | bash")[-1] == ("ls", (), "a pipe into bash")
    assert names("bash <<'EOF'\nmake test\nEOF")[-1] == ("make", ("test",), "a pipe into bash")
    assert names("sh <<< 'id'")[-1] == ("id", (), "a pipe into sh")
    assert stdin_text(parse("cat file | sh").commands[-1]) is None  # a file's content is not known here


def test_case_test_commands_and_arithmetic_are_read_exactly() -> None:
    # bashlex implemented none of these, so such lines used to fall back to the approximate split.
    script = parse("[[ -f a ]] && rm -rf b; case $x in y) echo z;; esac; echo $((1+2)); (( i++ ))")
    assert script.exact and not script.error
    assert [(c.name, c.args) for c in script.commands] == [
        ("[[", ("-f", "a")), ("rm", ("-rf", "b")), ("echo", ("z",)), ("echo", ("$((1+2))",)), ("((", ("i++",))]
    assert [c.name for c in parse("echo $((`git reset --hard` + 1))").commands] == ["git", "echo"]


def test_unparseable_lines_fall_back_to_shlex() -> None:
    script = parse("if then; rm -rf b")
    assert not script.exact and script.error
    assert ("rm", ("-rf", "b")) in [(c.name, c.args) for c in script.commands]
    glued = parse("rm -rf b && && git clean -fd")
    assert not glued.exact and ("git", ("clean", "-fd")) in [(c.name, c.args) for c in glued.commands]
    assert parse("echo 'unterminated").commands[0].name == "echo"


def test_literal_variables_are_remembered() -> None:
    assert parse("D=/tmp/x; for f in a b; do echo $f; done").variables == {"D": ("/tmp/x",), "f": ("a", "b")}


def test_real_shell_constructs_are_read_as_bash_reads_them() -> None:
    # heredocs (quoted, `<<-`, delimiters with spaces), and the pipeline or list that follows the heredoc's start
    assert names("cat <<'EOF' | sh\nrm -rf ~\nEOF")[-1] == ("rm", ("-rf", "~"), "a pipe into sh")
    assert stdin_text(parse("cat <<-EOF\n\tx\n\tEOF").commands[0]) == "x\n"
    assert stdin_text(parse('python3 << "EOF SPACE"\nprint(1)\nEOF SPACE').commands[0]) == "print(1)\n"
    # quoting: $'...' is decoded, adjacent quotes join, a backslash-newline joins a word as bash does
    assert parse("$'\\x72m' -rf x").commands[0].name == "rm"
    assert parse("echo 'a''b' \"c\"d").commands[0].args == ("ab", "cd")
    assert parse("r\\\nm -rf x").commands[0].name == "rm"
    assert parse("echo foo`date`bar").commands[-1].args == ("foo`date`bar",)
    # arrays, `[[ ]]`, `(( ))`, case and loops
    assert parse("a=(x y); for f in a b; do :; done").variables == {"a": ("x", "y"), "f": ("a", "b")}
    assert [c.name for c in parse("case $1 in a) ls;; *) pwd;; esac").commands] == ["ls", "pwd"]


def test_what_tree_sitter_leaves_outside_a_command_is_given_back() -> None:
    # tree-sitter-bash drops a lone `-` before a redirection and files words after a redirection's target
    # among its destinations; bash passes both to the command.
    assert parse("sqlfluff lint - 2>&1").commands[0].args == ("lint", "-")
    assert parse("echo x | sqlfluff lint - 2>&1 | head").commands[1].args == ("lint", "-")
    assert parse("python3 - <<'EOF'\nprint(1)\nEOF").commands[0].args == ("-",)
    assert parse("rm -rf 2>/dev/null /").commands[0].args == ("-rf", "/")
    assert [r.op for r in parse("cd x && grep y 2>/dev/null").commands[1].redirects] == [">"]  # on grep, as in bash
    assert parse("1A=2 git status").commands[0].name == "1A=2"  # not a name: bash runs it as the program


def test_the_line_remembers_directories_functions_aliases_and_computed_values() -> None:
    script = parse("cd ~ && rm -rf a; (cd /tmp; rm b); pushd src; rm c; popd; rm d")
    assert [(c.name, c.cwd) for c in script.commands if c.name == "rm"] == [
        ("rm", "~"), ("rm", "/tmp"), ("rm", "~/src"), ("rm", "~")]
    assert names('f(){ rm -rf "$1"; }; f ~')[-1] == ("rm", ("-rf", "~"), "function f")
    assert names("alias x='rm -rf'\nx ~")[-1] == ("rm", ("-rf", "~"), "alias x")
    computed = parse("x=$(curl -s u); for f in $(find . -type f); do :; done; ls | while read g; do :; done").computed
    assert {name: [c.name for c in cmds] for name, cmds in computed.items()} == {
        "x": ["curl"], "f": ["find"], "g": ["ls"]}
