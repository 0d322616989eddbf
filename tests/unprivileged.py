"""Run swecli as root and as an unprivileged user, for the security tests (issue 22).

CI runs as root, where a sandbox that leaves capabilities in place is escapable; a developer runs as
an ordinary user, where bwrap works differently (no setuid, a user namespace). Security tests run
both: the root variant as is, the unprivileged one through `setpriv` as `nobody`, with a throwaway
home and project handed over to that user. Run as a non-root user, the root variant skips and the
"nobody" variant runs as that user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

USERS = ["root", "nobody"]


def user_prefix(user: str) -> list[str]:
    """The argv prefix that runs a command as `user` (skips the test where that cannot be done)."""
    if user == "root":
        if os.geteuid() != 0:
            pytest.skip("the root variant needs to run as root (CI does)")
        return []
    if os.geteuid() != 0:
        return []  # already unprivileged
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed, so the unprivileged variant cannot run")
    nobody = pwd.getpwnam("nobody")
    return ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups", "--"]


def hand_over(path: Path, user: str) -> None:
    """Make `path` (recursively) belong to `user`, so that user can work in it as its owner."""
    if user == "root" or os.geteuid() != 0:
        return
    nobody = pwd.getpwnam("nobody")
    for directory, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.chown(os.path.join(directory, name), nobody.pw_uid, nobody.pw_gid, follow_symlinks=False)
    os.chown(path, nobody.pw_uid, nobody.pw_gid)


@contextmanager
def workspace(prefix: str, under: str = "/var/tmp") -> Iterator[Path]:
    """A throwaway directory outside /tmp (which the sandbox replaces) that any user can enter."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=under))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
