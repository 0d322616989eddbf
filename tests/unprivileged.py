"""Run swecli as root and as an unprivileged user, for the security tests (issue 22).

CI runs as root, where a sandbox that leaves capabilities in place is escapable; a developer runs as
an ordinary user, where bwrap works differently (no setuid, a user namespace). Security tests run
both: the "invoking" variant as whoever runs the tests (root in CI), the "nobody" one through
`setpriv` as `nobody`, with a throwaway home and project handed over to that user. Run as a non-root
user, the "nobody" variant skips: the invoking variant already runs unprivileged.
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

USERS = ["invoking", pytest.param("nobody", marks=pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="switching to nobody needs root and setpriv (util-linux); the invoking user is unprivileged already"))]
"""The one parametrization of the security tests by user (`pytest.mark.parametrize("user", USERS)` or a
fixture's `params=USERS`); `user_prefix`, `hand_over` and `seed_vocabularies` take its values."""


def user_prefix(user: str) -> list[str]:
    """The argv prefix that runs a command as `user`."""
    if user == "invoking":
        return []
    nobody = pwd.getpwnam("nobody")
    return ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups", "--"]


def hand_over(path: Path, user: str) -> None:
    """Make `path` (recursively) belong to `user`, so that user can work in it as its owner."""
    if user == "invoking":
        return
    nobody = pwd.getpwnam("nobody")
    for directory, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.chown(os.path.join(directory, name), nobody.pw_uid, nobody.pw_gid, follow_symlinks=False)
    os.chown(path, nobody.pw_uid, nobody.pw_gid)


WARM_VOCABULARIES: list[Path] = []
"""The run's decoded vocabularies, filled by `tests/conftest.py` `_warm_vocabularies` (a session fixture,
so set up before any module-scoped fixture of a test that calls `seed_vocabularies`)."""


def link_vocabularies(home: Path, vocabularies: list[Path]) -> None:
    """Link the run's decoded vocabularies into `home`'s `~/.cache`, where a swecli started with that home
    looks for them (a test that rewrites the cache replaces the link, not the shared file)."""
    target = home / ".cache" / "swecli" / "tokenizers"
    target.mkdir(parents=True, exist_ok=True)
    for path in vocabularies:
        (target / path.name).symlink_to(path)


def seed_vocabularies(home: Path) -> None:
    """Copy the run's decoded vocabularies (`tests/conftest.py` links them into every test's cache) into
    `home`'s `~/.cache`, so a swecli started with that home does not decode o200k again (seconds under
    load). A copy, not a link: the shared files live in the run's temp folder, private to root, and
    `hand_over` gives the copy to `nobody` with the rest of the home."""
    target = home / ".cache" / "swecli" / "tokenizers"
    target.mkdir(parents=True, exist_ok=True)
    for path in WARM_VOCABULARIES:
        shutil.copyfile(path, target / path.name)


@contextmanager
def workspace(prefix: str, under: str = "/var/tmp") -> Iterator[Path]:
    """A throwaway directory outside /tmp (which the sandbox replaces) that any user can enter."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=under))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
