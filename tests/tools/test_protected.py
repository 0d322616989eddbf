"""What a delete or a write would hit: root, system and home directories, credentials, profiles, disks."""

from __future__ import annotations

import os

import pytest

from swecli.tools.protected import delete_danger, home_form, secret_danger, write_danger


@pytest.mark.parametrize(("path", "kind"), [
    ("/", "root"), ("/*", "root"), ("/..", "root"), ("/etc", "system"), ("/usr/local/lib", "system"),
    ("/tmp", "system"), ("/work", "root"), ("~", "home"), ("~/", "home"), ("$HOME", "home"), ("${HOME}/*", "home"),
    ("~/Documents", "home"), ("~bob", "home"), ("/home/alice", "home"), ("/home", "home"), ("/home/*", "home"),
    ("/home/alice/project", "home"), ("~/.ssh", "secret"), ("~/.config/gcloud/x", "secret"), (".", "here"),
    ("./*", "here"), ("*", "here"), ("..", "parent"), ("../..", "parent"), ("$OUT/", "unset"), ("${OUT}/*", "unset"),
])
def test_dangerous_delete_targets(path: str, kind: str) -> None:
    danger = delete_danger(path)
    assert danger is not None and danger.kind == kind, (path, danger)


@pytest.mark.parametrize("path", ["build", "build/", "./dist", "/tmp/x", "/var/tmp/cache", "/home/alice/project/build",
                                  "~/projects/demo/build", "~/.cache/pip", "*.egg-info", "$OUT", "src/../build",
                                  "/mnt/data/project/out", "/work/project"])
def test_ordinary_delete_targets(path: str) -> None:
    assert delete_danger(path) is None


def test_write_targets() -> None:
    assert write_danger("~/.bashrc") is not None and write_danger("/etc/hosts") is not None
    assert write_danger("/dev/sda1") is not None and write_danger("/dev/nvme0n1") is not None
    assert write_danger("~/.ssh/config") is not None
    for harmless in ("/dev/null", "/dev/stderr", "out.txt", "~/notes.txt", "~/.config/app/settings.json", "/tmp/x"):
        assert write_danger(harmless) is None, harmless


def test_the_real_home_path_counts_as_home() -> None:
    home = os.path.expanduser("~")
    assert home_form(f"{home}/.ssh/id_rsa") == "~/.ssh/id_rsa"
    danger = secret_danger(f"{home}/.aws/credentials")
    assert danger is not None and danger.what == "credentials (~/.aws)"
