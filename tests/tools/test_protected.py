"""What a delete or a write would hit: root, system and home directories, credentials, profiles, disks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from swecli.tools.protected import (
    broad_project_warning,
    delete_danger,
    home_form,
    protected_write,
    secret_danger,
    secret_location,
    write_danger,
)
from tests.unprivileged import USERS, user_prefix, workspace


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


# -- on disk: protected paths and credentials (issue 22) --------------------------------------------------


@pytest.mark.parametrize("rel", [".git/hooks/pre-commit", ".git/config", ".git/info/attributes", "sub/.git/config",
                                 ".swecli/config.toml", ".swecli/skills/x/SKILL.md", ".envrc", "web/.envrc",
                                 ".vscode/tasks.json", ".idea/workspace.xml", ".claude/settings.json", ".mcp.json",
                                 ".devcontainer/devcontainer.json", "OPENCLI.md", "AGENTS.md", "CLAUDE.md",
                                 ".agents/skills/x/SKILL.md"])
def test_protected_project_paths(tmp_path: Path, rel: str) -> None:
    root = tmp_path / "project"
    assert protected_write(root, root / rel, home=tmp_path / "home"), rel


@pytest.mark.parametrize("rel", ["src/app.py", "README.md", ".gitignore", ".gitattributes", ".github/workflows/ci.yml",
                                 "docs/git/config.md", ".env.example"])
def test_ordinary_project_paths(tmp_path: Path, rel: str) -> None:
    root = tmp_path / "project"
    assert protected_write(root, root / rel, home=tmp_path / "home") == "", rel


def test_home_dotfiles_and_credentials_are_protected_when_the_project_holds_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert "dotfile" in protected_write(home, home / ".bashrc", home=home)
    assert "dotfile" in protected_write(tmp_path, home / ".config" / "autostart" / "x.desktop", home=home)
    assert protected_write(home, home / ".ssh" / "authorized_keys", home=home) == "~/.ssh holds credentials"
    assert protected_write(home, home / "notes" / ".bashrc", home=home) == ""  # not at the home's top
    assert secret_location(home / ".codex" / "auth.json", home) == "~/.codex/auth.json"
    assert secret_location(home / ".codex" / "config.toml", home) == ""


def test_starting_in_home_or_root_warns(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert "started in your home directory" in broad_project_warning(home, home)
    assert "started in /:" in broad_project_warning(Path("/"), home)
    assert broad_project_warning(home / "project", home) == ""


def test_credential_locations_resolve_as_realpath_does(tmp_path: Path) -> None:
    """The locations' resolved forms are computed a directory at a time (`_Resolver`): for every path over
    real, symlinked (absolute, relative, dangling, looping) and missing components, the same as realpath."""
    from swecli.tools.protected import _Resolver

    (tmp_path / "real" / "inner").mkdir(parents=True)
    (tmp_path / "real" / "file").write_text("x")
    links = {"abs": tmp_path / "real", "rel": Path("real/inner"), "dangling": tmp_path / "gone",
             "loop": tmp_path / "loop", "tofile": tmp_path / "real" / "file", "up": Path("..")}
    for name, target in links.items():
        (tmp_path / name).symlink_to(target)
        (tmp_path / "real" / "inner" / name).symlink_to(target)
    parts = ["real", "inner", "file", "missing", ".", "..", *links]
    paths = [f"{tmp_path}/{a}/{b}/{c}" for a in parts for b in parts for c in parts]
    paths += [f"{tmp_path}/{a}" for a in parts] + [f"{tmp_path}/{a}/{b}" for a in parts for b in parts]
    resolve = _Resolver()
    assert [resolve(p) for p in paths] == [os.path.realpath(p) for p in paths]


@pytest.mark.parametrize("user", USERS)
def test_a_directory_that_cannot_be_listed_still_has_its_symlinks_resolved(user: str) -> None:
    """A directory its user may pass through but not list (mode 711): its symlinks are found by `lstat`."""
    with workspace("resolve-") as base:
        (base / "real").mkdir(mode=0o755)
        hidden = base / "hidden"
        hidden.mkdir()
        (hidden / "link").symlink_to(base / "real")
        hidden.chmod(0o711)
        paths = [f"{hidden}/link", f"{hidden}/link/.ssh", f"{hidden}/missing/x"]
        script = ("import os, sys; from swecli.tools.protected import _Resolver; r = _Resolver(); "
                  "print([r(p) for p in sys.argv[1:]] == [os.path.realpath(p) for p in sys.argv[1:]], "
                  "os.path.realpath(sys.argv[1]))")
        out = subprocess.run([*user_prefix(user), sys.executable, "-c", script, *paths], capture_output=True,
                             text=True, check=True, cwd=Path(__file__).resolve().parents[2]).stdout.split()
        assert out == ["True", str(base / "real")]
