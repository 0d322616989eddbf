"""Paths a command must not destroy or see: the root, system directories, home directories, the
user's credentials and shell profiles. Shared by the guard (what a delete or a write would hit), the
read-only classifier (a "read-only" `cat ~/.ssh/id_rsa` still asks) and the sandbox (what it hides).

Paths are classified as written in the command (`~`, `$HOME`, `/home/alice`, `../..`); nothing is
resolved on disk, because the guard judges a command before it runs.

The second half (`PROTECTED_DIRS`, `PROTECTED_FILES`, `protected_write`, `secret_location`) judges
resolved paths on disk: what the sandbox keeps read-only inside the writable project, what the file
tools refuse to read (credentials) or ask before writing (what runs later outside the sandbox).
docs/security/sandbox.md explains each list.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
import posixpath
import re
import threading
from collections.abc import Mapping
from pathlib import Path

from swecli.lazy import regex
from swecli.records import datarecord
from swecli.tools.gitlinks import runs_later

SECRET_PATHS: tuple[str, ...] = (
    # keys and agents
    ".ssh", ".gnupg", ".password-store", ".local/share/keyrings", ".config/op", ".vault-token", ".pki",
    # git and code hosts
    ".git-credentials", ".config/git/credentials", ".gitcookies", ".config/gh", ".config/hub", ".config/glab-cli",
    ".config/github-copilot", ".config/tea", ".subversion/auth",
    # AI tools, swecli itself included (its cache too: `sandbox.writable_paths = ["~/.cache"]` is a common
    # setting, and what swecli reads back from there must not be a command's to write)
    ".config/swecli", ".cache/swecli", ".codex/auth.json", ".claude/.credentials.json", ".claude.json",
    ".cache/huggingface/token",
    ".huggingface/token", ".kaggle", ".gemini/oauth_creds.json", ".config/io.datasette.llm/keys.json",
    ".local/share/opencode/auth.json", ".continue/config.json", ".continue/config.yaml",
    # clouds, cluster and deploy tools
    ".aws", ".azure", ".config/gcloud", ".boto", ".oci", ".kube", ".docker", ".config/doctl", ".config/hcloud",
    ".config/linode-cli", ".fly", ".config/rclone", ".s3cfg", ".mc", ".databrickscfg", ".terraform.d",
    ".terraformrc", ".config/stripe", ".netrc", ".config/configstore", ".config/netlify", ".local/share/com.vercel.cli",
    ".pulumi/credentials.json", ".config/openstack", ".config/scaleway", ".config/ngrok", ".ngrok2", ".cloudflared",
    ".wrangler", ".config/.wrangler", ".minikube", ".tsh", ".config/helm/registry", ".config/containers/auth.json",
    ".bluemix", ".circleci", ".travis", ".sentryclirc", ".jfrog", ".passwd-s3fs", ".smbcredentials",
    ".config/solana",
    # package registries
    ".npmrc", ".yarnrc", ".yarnrc.yml", ".bunfig.toml", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
    ".gem/credentials", ".local/share/gem/credentials", ".bundle/config", ".m2/settings.xml",
    ".m2/settings-security.xml", ".gradle/gradle.properties", ".ivy2/.credentials", ".sbt/.credentials",
    ".composer/auth.json", ".config/composer/auth.json", ".nuget/NuGet/NuGet.Config", ".config/NuGet/NuGet.Config",
    ".pub-cache/credentials.json", ".config/dart/pub-credentials.json", ".hex",
    # databases and their clients
    ".pgpass", ".pg_service.conf", ".my.cnf", ".mylogin.cnf", ".cassandra/cqlshrc", ".snowflake", ".dbt/profiles.yml",
    ".influxdbv2", ".local/share/DBeaverData", ".config/filezilla", ".config/remmina",
    # environment files kept in the home by convention (R's GITHUB_PAT, a personal .env)
    ".Renviron", ".env",
    # shell and REPL histories (they hold the tokens and passwords people type) and editors' registers
    ".bash_history", ".zsh_history", ".zhistory", ".histfile", ".sh_history", ".ksh_history",
    ".local/share/fish/fish_history", ".config/fish/fish_history", ".python_history", ".node_repl_history",
    ".irb_history", ".Rhistory", ".psql_history", ".mysql_history", ".sqlite_history", ".rediscli_history",
    ".dbshell", ".mongosh", ".lesshst", ".viminfo",
    # wallets
    ".bitcoin", ".electrum", ".ethereum",
    # browser and messenger profiles (cookies, session tokens), mail
    ".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware", ".config/microsoft-edge",
    ".config/vivaldi", ".config/opera", ".thunderbird", ".config/Slack", ".config/discord",
)
"""Home-relative paths holding credentials: keys, code-host, cloud and registry tokens, database
passwords, AI tools' logins (swecli's own user config included), password stores, shell histories
and browser profiles. The ONE list: the sandbox hides each of them from commands, the file tools
refuse to read, list or search them, and the guard protects them. Entries under `.config/`,
`.cache/` and `.local/share/` are also found under `$XDG_CONFIG_HOME`, `$XDG_CACHE_HOME` and
`$XDG_DATA_HOME` when those are set elsewhere. Documented in docs/security/sandbox.md."""

SECRET_ENV_PATHS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # variables naming a credential file or directory themselves
    ("GOOGLE_APPLICATION_CREDENTIALS", ("",)), ("CLOUDSDK_CONFIG", ("",)), ("AWS_SHARED_CREDENTIALS_FILE", ("",)),
    ("AWS_CONFIG_FILE", ("",)), ("AZURE_CONFIG_DIR", ("",)), ("KUBECONFIG", ("",)), ("DOCKER_CONFIG", ("",)),
    ("GNUPGHOME", ("",)), ("PASSWORD_STORE_DIR", ("",)), ("PGPASSFILE", ("",)), ("PGSERVICEFILE", ("",)),
    ("MYSQL_TEST_LOGIN_FILE", ("",)), ("NETRC", ("",)), ("GH_CONFIG_DIR", ("",)), ("RCLONE_CONFIG", ("",)),
    ("NPM_CONFIG_USERCONFIG", ("",)), ("TF_CLI_CONFIG_FILE", ("",)), ("BOTO_CONFIG", ("",)),
    ("OCI_CLI_CONFIG_FILE", ("",)), ("DATABRICKS_CONFIG_FILE", ("",)), ("HF_TOKEN_PATH", ("",)),
    ("KAGGLE_CONFIG_DIR", ("",)), ("SSH_AUTH_SOCK", ("",)), ("VAULT_CONFIG_PATH", ("",)),
    # tool homes moved elsewhere: the credential file inside them
    ("CARGO_HOME", ("credentials", "credentials.toml")), ("HF_HOME", ("token",)), ("GRADLE_USER_HOME",
     ("gradle.properties",)), ("COMPOSER_HOME", ("auth.json",)), ("CODEX_HOME", ("auth.json",)),
    ("CLAUDE_CONFIG_DIR", (".credentials.json",)),
)
"""Environment variables that move a credential elsewhere than SECRET_PATHS says (KUBECONFIG may
list several files): (variable, paths inside it; "" is the named path itself). Part of the one list."""

_XDG_HOMES = (("XDG_CONFIG_HOME", ".config/"), ("XDG_CACHE_HOME", ".cache/"), ("XDG_DATA_HOME", ".local/share/"))

SYSTEM_SECRETS: tuple[str, ...] = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssh/ssh_host_*key", "/etc/ssl/private",
    "/etc/kubernetes/admin.conf", "/etc/kubernetes/pki", "/etc/rancher/k3s/k3s.yaml", "/var/lib/kubelet/pki",
)
"""Credentials outside any home that only root can read (password hashes, host and cluster keys): hidden
from commands when the user running swecli can read them (glob patterns allowed)."""

SYSTEM_DIRS = frozenset({"etc", "usr", "bin", "sbin", "boot", "var", "lib", "lib32", "lib64", "libx32", "opt",
                         "root", "sys", "proc", "dev", "snap", "nix", "System", "Library", "Applications"})
"""Top-level directories of the operating system (Linux and macOS). /mnt, /srv and /work-like
directories are not listed: projects live there."""
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")
"""Scratch directories: deleting them whole is dangerous, deleting in them is not."""
_HARMLESS_DEVICES = regex(r"^/dev/(?:null|zero|full|u?random|stdin|stdout|stderr|tty|fd/\d+)$")
_DISKS = regex(r"^/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|md|dm-|mapper/|loop|sr)")
_UNSET_PREFIX = regex(r"^\$\{?(\w+)\}?(/\*?|/\.\*?)?$")


@datarecord(frozen=True)
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
    if any(normalized == d or normalized.startswith(d + "/") for d in SCRATCH):
        return Danger("system", f"a top-level directory ({normalized})") if normalized in SCRATCH else None
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


# -- on disk: what the sandbox keeps read-only and the file tools ask before writing ---------------------

PROTECTED_DIRS: tuple[str, ...] = (".git/hooks", ".swecli", ".vscode", ".idea", ".claude", ".agents", ".devcontainer")
"""Project-relative directories whose contents run later outside the sandbox, or steer the next
session: git hooks, swecli's own settings, skills, agents and hooks, editors' tasks and settings,
Claude Code's settings and hooks, the skills other agents share (`.agents/skills`, loaded into every
session's prompt), dev-container definitions."""
PROTECTED_FILES: tuple[str, ...] = (".git/config", ".envrc", ".mcp.json", "OPENCLI.md", "AGENTS.md", "CLAUDE.md")
"""Project-relative files of the same kind: git's configuration (hooksPath, fsmonitor, filters, aliases),
direnv's script, Claude Code's MCP servers, and the memory files loaded into every session's prompt."""
_PROTECTED_NAMES = frozenset(p for p in (*PROTECTED_DIRS, *PROTECTED_FILES) if "/" not in p)
HOME_PROFILES: tuple[str, ...] = (
    ".profile", ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".zshrc", ".zshenv", ".zprofile",
    ".zlogin", ".zlogout", ".inputrc", ".gitconfig", ".pam_environment", ".xprofile", ".xsessionrc", ".envrc",
)
"""Shell profiles and other home dotfiles run at a login or a shell's start: when the project holds the
home directory, these are kept from being created (the existing dotfiles are all read-only)."""


_PLACEHOLDERS: set[Path] = set()
_PLACEHOLDER_LOCK = threading.Lock()


def add_placeholder(path: Path) -> bool | None:
    """Make `path` an empty placeholder directory (the sandbox covers a missing protected directory with
    one): True for the first one this process made, False for a later one, None if it cannot be made."""
    with _PLACEHOLDER_LOCK:
        try:
            path.mkdir(mode=0o755)
        except OSError:
            return None
        first = not _PLACEHOLDERS
        _PLACEHOLDERS.add(path)
        return first


def is_placeholder(path: Path) -> bool:
    """Whether `path` is one of this process's placeholders and still empty (list_files leaves it out)."""
    return path in _PLACEHOLDERS and not any(path.iterdir())


def remove_placeholders() -> None:
    """Remove the placeholder directories that are still empty (at exit)."""
    with _PLACEHOLDER_LOCK:
        for path in sorted(_PLACEHOLDERS, key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):  # not empty (swecli or the user put something in it): keep it
                path.rmdir()
        _PLACEHOLDERS.clear()


def home_directory() -> Path:
    """The user's home directory, resolved (cached per value of $HOME: the file tools ask per entry)."""
    return _resolved_home(os.environ.get("HOME") or os.path.expanduser("~"))


@functools.lru_cache(maxsize=4)
def _resolved_home(home: str) -> Path:
    return Path(home).resolve()


def secret_location(path: Path, home: Path | None = None) -> str:
    """The credential location (`~/.ssh`, `$KUBECONFIG`, ...) that the resolved `path` is in, or ""."""
    locations = credential_locations(home)
    text = str(path)
    while text:
        label = locations.get(text)
        if label:
            return label
        head = text.rpartition("/")[0]
        text = head if head != text else ""
    return ""


def credential_locations(home: Path | None = None, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every credential location of the one list as an absolute path (also its resolved form, when it is a
    symlink), mapped to how it is named for people: `~/.ssh`, `$XDG_CONFIG_HOME/gh`, `$KUBECONFIG`."""
    home = home_directory() if home is None else home
    env = os.environ if env is None else env
    names = tuple(name for name, _ in (*SECRET_ENV_PATHS, *_XDG_HOMES))
    return _credential_locations(str(home), tuple((name, env.get(name, "")) for name in names))


@functools.lru_cache(maxsize=8)
def _credential_locations(home: str, env: tuple[tuple[str, str], ...]) -> dict[str, str]:
    values = dict(env)
    found = {f"{home}/{rel}": f"~/{rel}" for rel in SECRET_PATHS}
    for variable, prefix in _XDG_HOMES:
        base = values.get(variable, "")
        if base.startswith("/") and base.rstrip("/") != f"{home}/{prefix.rstrip('/')}":
            found.update({f"{base.rstrip('/')}/{rel[len(prefix):]}": f"${variable}/{rel[len(prefix):]}"
                          for rel in SECRET_PATHS if rel.startswith(prefix)})
    for variable, inside in SECRET_ENV_PATHS:
        for entry in (e for e in values.get(variable, "").split(os.pathsep) if e.startswith("/")):
            found.update({posixpath.join(entry, rel).rstrip("/"): f"${variable}" + (f"/{rel}" if rel else "")
                          for rel in inside})
    resolve = _Resolver()
    for location, label in list(found.items()):
        with contextlib.suppress(OSError, RuntimeError):
            found.setdefault(resolve(location), label)
    return found


class _Resolver:
    """`os.path.realpath`, each directory resolved once: the ~140 locations share ~30 directories, and
    `realpath` (pure Python, an `lstat` per component) walked each one's from `/` again (~12 M instructions
    on every start). The resolved form of `dir/name` is that of `dir` joined with `name`, resolved again only
    when that is a symlink, which is what `realpath` computes component by component."""

    def __init__(self) -> None:
        self._directories: dict[str, str] = {}
        self._links: dict[str, frozenset[str] | None] = {}

    def __call__(self, path: str) -> str:
        parts = path.split("/")
        # realpath itself for what is not a plain absolute path: after a symlink loop it leaves the rest
        # unresolved, and a `..` there is then taken away by text, not by the directory's resolved form.
        if parts[0] or ".." in parts or "." in parts or "" in parts[1:]:
            return os.path.realpath(path)
        head, name = posixpath.split(path)
        real_head = self._directories.get(head)
        if real_head is None:
            real_head = self._directories[head] = self(head) if head != "/" else "/"
        joined = posixpath.join(real_head, name)
        return os.path.realpath(joined) if self._is_link(real_head, name, joined) else joined

    def _is_link(self, directory: str, name: str, path: str) -> bool:
        """From one listing of `directory` (most locations do not exist: an `lstat` each raised and caught an
        error); `lstat` itself where the directory cannot be listed but may be passed through."""
        if directory not in self._links:
            self._links[directory] = _symlinks_in(directory)
        links = self._links[directory]
        return posixpath.islink(path) if links is None else name in links


def _symlinks_in(directory: str) -> frozenset[str] | None:
    """The names of the symlinks in `directory`; empty if it is missing or no directory; None if unknown."""
    try:
        with os.scandir(directory) as entries:
            return frozenset(entry.name for entry in entries if entry.is_symlink())
    except (FileNotFoundError, NotADirectoryError):
        return frozenset()
    except OSError:
        return None


def system_secrets() -> list[Path]:
    """The existing SYSTEM_SECRETS this user can read (for root: password hashes, host keys)."""
    paths = [Path(p) for pattern in SYSTEM_SECRETS for p in sorted(glob.glob(pattern))]
    return [path for path in paths if os.access(path, os.R_OK)]


def protected_write(root: Path, path: Path, home: Path | None = None) -> str:
    """Why writing the resolved `path` under the project `root` needs a person's approval (it runs later
    outside the sandbox, or holds credentials), or "" for an ordinary project file."""
    home = home_directory() if home is None else home
    secret = secret_location(path, home)
    if secret:
        return f"{secret} holds credentials"
    rel = path.relative_to(root).parts if path.is_relative_to(root) else path.parts
    if ".git" in rel:
        return "it is inside .git, whose hooks and config git runs later, outside the sandbox"
    hooked = runs_later(root, path)
    if hooked:
        return hooked
    named = next((part for part in rel if part in _PROTECTED_NAMES), "")
    if named:
        return f"{named} is a protected path: its contents run later outside the sandbox or steer the next session"
    if home.is_relative_to(root) and path.is_relative_to(home):
        first = path.relative_to(home).parts[:1]
        if first and first[0].startswith("."):
            return f"~/{first[0]} is a dotfile of the home directory, which runs or is read later outside the sandbox"
    return ""


def broad_project_warning(root: Path, home: Path | None = None) -> str:
    """The warning when the project holds the home directory (swecli started in `$HOME` or `/`), or ""."""
    home = home_directory() if home is None else home
    if not home.is_relative_to(root):
        return ""
    where = "/" if root == Path("/") else "your home directory" if root == home else f"{root}, which holds your home"
    system = ", system directories" if root == Path("/") else ""
    return (f"swecli started in {where}: the project is that whole tree. The home directory's dotfiles (shell "
            f"profiles, .gitconfig, ...){system} stay read-only to commands and the file tools ask before writing "
            "them; credentials (~/.ssh, ~/.aws, ...) stay hidden. Start swecli in a project directory instead.")
