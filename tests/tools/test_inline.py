"""Inline interpreter code in the guard: Python through `ast`, other languages by their primitives."""

from __future__ import annotations

import pytest

from swecli.tools.guard import dangerous_reason


@pytest.mark.parametrize(("command", "reason"), [
    ("python3 -c 'import shutil; shutil.rmtree(\"/\")'", "inline python3 code: recursive delete of the root directory"),
    ("python3 -c 'import shutil,os; p=os.path.join(os.environ[\"HOME\"]); shutil.rmtree(p)'",
     "inline python3 code: recursive delete of the home directory"),
    ("python -c 'from pathlib import Path; (Path.home() / \".ssh\" / \"id_rsa\").unlink()'",
     "inline python code: deletes credentials (~/.ssh)"),
    ("python3 -c 'open(\"/etc/hosts\", \"a\").write(\"x\")'",
     "inline python3 code: writes to a system directory (/etc/hosts)"),
    ("python3 -c 'import os; os.system(\"git push --force\")'",
     "inline python3 code: force push (rewrites the remote's history)"),
    ("python3 -c 'import subprocess as s; s.check_call([\"sudo\", \"ls\"])'",
     "inline python3 code: runs with root privileges"),
    ("python3 -uc 'import shutil; shutil.rmtree(\"/home/bob\")'",
     "inline python3 code: recursive delete of a home directory"),
    ("echo 'import shutil; shutil.rmtree(\"/\")' | python3",
     "inline python3 code: recursive delete of the root directory"),
    ("perl -e 'system(\"rm -rf ~\")'", "inline perl code: recursive delete of the home directory"),
    ("node -e \"require('fs').rmSync('/', {recursive: true})\"", "inline node code: deletes the root directory"),
])
def test_dangerous_inline_code(command: str, reason: str) -> None:
    assert dangerous_reason(command) == reason


@pytest.mark.parametrize("command", [
    "python3 -c 'import shutil; shutil.rmtree(\"build\")'",
    "python3 -c 'import shutil, tempfile; d = tempfile.mkdtemp(); shutil.rmtree(d)'",  # common in real sessions
    "python3 -c 'open(\"out.txt\", \"w\").write(\"x\")'",
    "python3 -c 'import subprocess; subprocess.run([\"pytest\", \"-q\"])'",
    "python3 -c 'print(open(\"/etc/hosts\").read())'",
    "python3 script.py --rmtree /",  # a script file: its arguments are not code
    "python3 -m pytest -k rmtree",
    "node -e 'console.log(require(\"fs\").readdirSync(\"/\"))'",
    "perl -ne 'print if /unlink/' src/x.pl",
])
def test_harmless_inline_code(command: str) -> None:
    assert dangerous_reason(command) == ""
