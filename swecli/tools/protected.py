"""Paths a command must not destroy or see: the root, system directories, home directories, the
user's credentials and shell profiles. Shared by the guard (what a delete or a write would hit), the
read-only classifier (a "read-only" `cat ~/.ssh/id_rsa` still asks) and the sandbox (what it hides).

Paths are classified as written in the command (`~`, `$HOME`, `/home/alice`, `../..`); nothing is
resolved on disk, because the guard judges a command before it runs.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass

SECRET_PATHS: tuple[str, ...] = (
    ".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".netrc", ".git-credentials",
    ".config/gh", ".config/hub", ".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
    ".gem/credentials", ".terraform.d", ".vault-token", ".password-store", ".local/share/keyrings",
    ".config/op", ".config/swecli", ".mozilla", ".config/google-chrome", ".config/chromium",
)
"""Home-relative paths holding credentials: keys, cloud and registry tokens, password stores, browser
profiles (cookies) and swecli's own user config (API keys). The sandbox hides them; the guard protects them."""

SYSTEM_DIRS = frozenset({"etc", "usr", "bin", "sbin", "boot", "var", "lib", "lib32", "lib64", "libx32", "opt",
                         "root", "sys", "proc", "dev", "snap", "nix", "System", "Library", "Applications"})
"""Top-level directories of the operating system (Linux and macOS). /mnt, /srv and /work-like
directories are not listed: projects live there."""
_SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")
_HARMLESS_DEVICES = re.compile(r"^/dev/(?:null|zero|full|u?random|stdin|stdout|stderr|tty|fd/\d+)$")
_DISKS = re.compile(r"^/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|md|dm-|mapper/|loop|sr)")
_UNSET_PREFIX = re.compile(r"^\$\{?(\w+)\}?(/\*?|/\.\*?)?$")


@dataclass(frozen=True)
class Danger:
    kind: str
    """root | system | home | secret | here | parent | disk | dotfile | unset"""
    what: str
    """For people: "the home directory", "credentials (~/.ssh)", ..."""


def home_form(path: str, home: str | None = None) -> str:
    """`$HOME/x`, `${HOME}/x` and the absolute home path written as `~/x`; other paths unchanged."""
    home = (home if home is not None else os.path.expanduser("~")).rstrip("/")
    path = re.sub(r"^(?:\$HOME|\$\{HOME\})(?=/|$)", "~", path)
    if home and home != "/" and (path == home or path.startswith(home + "/")):
        path = "~" + path[len(home):]
    return path


def _clean(path: str) -> str:
    if len(path) > 1 and path.endswith("/"):
        path = path.rstrip("/") or "/"
    return path


def delete_danger(path: str) -> Danger | None:
    """What deleting `path` (recursively) would destroy, or None for an ordinary path such as `build/`."""
    unset = _UNSET_PREFIX.match(path)
    if unset and unset[2] and unset[1] != "HOME":
        return Danger("unset", f"`{path}` (the root directory when ${unset[1]} is empty)")
    path = _clean(home_form(path))
    if path.startswith("~"):
        return _home_danger(path, depth_limit=1)
    if path.startswith("/"):
        return _absolute_danger(path)
    parts = [p for p in path.split("/") if p]
    if parts and all(p in (".", "*", ".*", "..") for p in parts):
        if ".." in parts:
            return Danger("parent", "a parent directory")
        return Danger("here", "the current directory (everything in it)")
    return None


def write_danger(path: str) -> Danger | None:
    """What writing to, truncating or deleting the file `path` would damage, or None."""
    path = _clean(home_form(path))
    if path.startswith("/dev/"):
        return Danger("disk", f"a disk device ({path})") if _DISKS.match(path) else None
    if path.startswith("~"):
        return _home_file_danger(path)
    if path.startswith("/"):
        danger = _absolute_danger(path)
        return danger if danger is not None and danger.kind in ("root", "system", "secret") else None
    return None


def secret_danger(path: str) -> Danger | None:
    """The credentials `path` points into (`~/.ssh/id_rsa`, `$HOME/.aws`), or None."""
    path = _clean(home_form(path))
    if not path.startswith("~/"):
        return None
    rel = posixpath.normpath(path[2:])
    for secret in SECRET_PATHS:
        if rel == secret or rel.startswith(secret + "/"):
            return Danger("secret", f"credentials (~/{secret})")
    return None


def _home_danger(path: str, depth_limit: int) -> Danger | None:
    head, _, rest = path.partition("/")
    owner = "the home directory" if head == "~" else f"{head[1:]}'s home directory"
    secret = secret_danger(path) if head == "~" else None
    if secret is not None:
        return secret
    parts = [p for p in posixpath.normpath(rest).split("/") if p and p != "."] if rest else []
    if not parts or parts in (["*"], [".*"]) or parts[0] == "..":
        return Danger("home", owner)
    if len(parts) <= depth_limit:
        return Danger("home", f"a top-level folder of {owner} ({path})")
    return None


def _home_file_danger(path: str) -> Danger | None:
    secret = secret_danger(path)
    if secret is not None:
        return secret
    parts = [p for p in path[2:].split("/") if p]
    if len(parts) == 1 and parts[0].startswith("."):
        return Danger("dotfile", f"a shell profile or dotfile (~/{parts[0]})")
    return None


def _absolute_danger(path: str) -> Danger | None:
    normalized = posixpath.normpath(path)
    if normalized in ("/", "/*", "/.*") or normalized.startswith("/.."):
        return Danger("root", "the root directory")
    if any(normalized == d or normalized.startswith(d + "/") for d in _SCRATCH):
        return Danger("system", f"a top-level directory ({normalized})") if normalized in _SCRATCH else None
    parts = normalized.strip("/").split("/")
    if parts[0] in ("home", "Users"):
        if len(parts) <= 2 or parts[2:] in (["*"], [".*"]):
            return Danger("home", "a home directory" if len(parts) == 2 else "every home directory")
        return _home_danger("~/" + "/".join(parts[2:]), depth_limit=1)
    if len(parts) == 1 or parts[1:] in (["*"], [".*"]):
        return Danger("system" if parts[0] in SYSTEM_DIRS else "root", f"a top-level directory (/{parts[0]})")
    if parts[0] in SYSTEM_DIRS:
        return Danger("system", f"a system directory ({normalized})")
    return None


def harmless_device(path: str) -> bool:
    """/dev/null, /dev/stdout and friends: writing there changes nothing."""
    return bool(_HARMLESS_DEVICES.match(path))
