"""What a delete or a write would hit: root, system and home directories, credentials, profiles, disks."""

from __future__ import annotations

import os
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
