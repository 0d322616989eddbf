"""Read-only commands: what default mode runs without asking, and look-alikes that still ask."""

from __future__ import annotations

import pytest

from swecli.tools.readonly import is_read_only, why_not_read_only

READ_ONLY = [
    "cat greet.py",
    "ls -la",
    "ls -la src/ | head -20",
    "head -n 50 README.md",
    "tail -n 20 log.txt",
    "wc -l *.py",
    "grep -rn 'def main' src/",
    "rg TODO --type py",
    "git status",
    "git log --oneline -10",
    "git diff HEAD~1 -- src/",
    "git show HEAD:README.md",
    "git -C sub --no-pager log -p",
    "git branch -a",
    "git stash list",
    "git config --get remote.origin.url",
    "find . -name '*.py' -not -path './.venv/*'",
    "find src -name '*.py' -exec grep -l 'import os' {} \\;",
    "sed -n '10,40p' src/app.py",
    "sed -n '/def main/,/^def/ p' src/app.py",
    "cd src && ls && pwd",
    "ls 2>/dev/null || echo none",
    "grep -c x a.txt 2>&1 | sort | uniq -c",
    "PAGER=cat git log -1",
    "for f in *.py; do wc -l $f; done",
    "find . -name '*.py' | xargs grep -n TODO",
    "cat < input.txt",
    "du -sh . && df -h",
    "stat README.md; file README.md",
    "echo hello",
    "jq .name package.json",
    "/usr/bin/ls -l",
    "pip list",
]

NOT_READ_ONLY = [
    ("cat a > b", "redirects output to b"),
    ("echo x >> notes.txt", "redirects output to notes.txt"),
    ("ls $(rm -rf x)", "uses command substitution"),
    ("cat `echo a`", "uses command substitution"),
    ("diff <(ls a) <(ls b)", "uses command substitution"),
    ("rm -rf build", "rm is not on the read-only list"),
    ("python3 -c 'print(1)'", "python3 is not on the read-only list"),
    ("ls | sh", "sh is not on the read-only list"),
    ("bash -c 'ls'", "bash is not on the read-only list"),
    ("find . -delete", "find with these options can write or run programs"),
    ("find . -exec rm {} \\;", "find with these options can write or run programs"),
    ("find . -fprint out.txt", "find with these options can write or run programs"),
    ("sort -o sorted.txt data.txt", "sort with these options can write or run programs"),
    ("uniq in.txt out.txt", "uniq with these options can write or run programs"),
    ("rg --pre ./evil.sh x", "rg with these options can write or run programs"),
    ("sed -i 's/a/b/' f.txt", "sed with these options can write or run programs"),
    ("sed -n '1w out.txt' f.txt", "sed with these options can write or run programs"),
    ("git -c core.pager=./evil log", "git with these options can write or run programs"),
    ("git diff --output=patch.txt", "git with these options can write or run programs"),
    ("git diff --ext-diff", "git with these options can write or run programs"),
    ("git commit -m x", "git with these options can write or run programs"),
    ("git branch new-branch", "git with these options can write or run programs"),
    ("git checkout main", "git with these options can write or run programs"),
    ("git config user.name Bob", "git with these options can write or run programs"),
    ("git push", "git with these options can write or run programs"),
    ("date -s '2020-01-01'", "date with these options can write or run programs"),
    ("env", "env is not on the read-only list"),
    ("printenv OPENAI_API_KEY", "printenv with these options can write or run programs"),
    ("LD_PRELOAD=./x.so ls", "sets an environment variable"),
    ("X=1", "assigns a variable"),
    ("./ls", "runs ./ls, which is not a known read-only program"),
    ("$PAGER README.md", "runs $PAGER, which is not a known read-only program"),
    ("f() { ls; }; f", "defines a function"),
    ("cat ~/.ssh/id_rsa", "reads credentials"),
    ("grep -r token ~/.aws", "reads credentials"),
    ("xargs rm < list.txt", "rm is not on the read-only list"),
    ("pip install requests", "pip with these options can write or run programs"),
]


@pytest.mark.parametrize("command", READ_ONLY)
def test_read_only_commands(command: str) -> None:
    assert is_read_only(command), why_not_read_only(command)


@pytest.mark.parametrize(("command", "reason"), NOT_READ_ONLY)
def test_commands_that_write_run_or_read_secrets_are_not_read_only(command: str, reason: str) -> None:
    assert why_not_read_only(command) == reason


def test_a_line_that_cannot_be_parsed_exactly_is_not_read_only() -> None:
    # The fallback split is approximate: asking is the safe answer.
    assert why_not_read_only("cat a && && ls").startswith("not parsed exactly")


def test_test_commands_are_read_only_now_that_they_parse() -> None:
    assert is_read_only("[[ -f a ]] && cat a")
    assert is_read_only("(( 1 + 2 ))")
    assert why_not_read_only("[[ -f $(rm -rf x) ]]") == "uses command substitution"
