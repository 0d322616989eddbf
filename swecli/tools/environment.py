"""The environment a command gets: an allowlist, not the user's whole environment.

A user's shell holds secrets whose names say nothing (`DATABASE_URL` with a password,
`SLACK_WEBHOOK_URL`, `SENTRY_DSN`, `CI_JOB_JWT`, `DOCKER_AUTH_CONFIG`), so filtering by name alone
misses them. Like Codex's `shell_environment_policy.inherit = "core"`, commands get only named
variables by default (`inherit_env = "core"`):

- Codex's core set (HOME, LOGNAME, PATH, SHELL, USER, USERNAME, TMPDIR, TEMP, TMP), plus what a
  terminal and a toolchain need to work as they do in the user's shell: locale and terminal
  (LANG, LC_*, TERM, TZ, ...), interpreters and build tools (VIRTUAL_ENV, CONDA_*, PYTHON*, JAVA_HOME,
  GOPATH, CARGO_HOME, RUSTUP_HOME, NVM_DIR, CC, CFLAGS, PKG_CONFIG_PATH, ...), certificates and proxies,
  and CI markers (CI, GITHUB_ACTIONS) that test suites look at;
- never a variable whose name says secret (KEY, TOKEN, SECRET, PASSWORD, PASSWD, PWD_, CREDENTIAL, AUTH,
  JWT, COOKIE, SESSION, PRIVATE, WEBHOOK, DSN), nor one whose value looks like one (a URL with a user or
  password in it, a JWT, a private key, a token in a well-known format), even when its name is allowed;
- and whatever the user names in `sandbox.pass_env` (names or shell patterns), secret or not: the
  user's explicit choice (`GITHUB_TOKEN` for `gh`).

`inherit_env = "all"` passes everything but the secret-looking names and values (the old behaviour,
with the value check added); `"none"` passes only `pass_env` and TMPDIR. The policy applies to every
command swecli runs for the model, sandboxed or not (`sandbox.mode = "off"` turns off bubblewrap,
not this), since it protects secrets without any sandbox.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Iterable, Mapping
from typing import Literal

from swecli.lazy import regex
from swecli.records import datarecord

Inherit = Literal["core", "all", "none"]

CORE_NAMES = frozenset({
    # Codex's core set
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP",
    # terminal, locale, editor
    "LANG", "LANGUAGE", "TERM", "COLORTERM", "TERMINFO", "TERMINFO_DIRS", "TZ", "COLUMNS", "LINES", "NO_COLOR",
    "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "EDITOR", "VISUAL", "PAGER", "LESS", "MANPATH", "INFOPATH",
    "PWD", "HOSTNAME", "HOSTTYPE", "OSTYPE", "MACHTYPE", "SHLVL", "DISPLAY", "WAYLAND_DISPLAY",
    # interpreters, compilers, build tools
    "VIRTUAL_ENV", "VIRTUAL_ENV_PROMPT", "UV_PYTHON", "PIPX_HOME", "PIPX_BIN_DIR", "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL", "PIP_NO_CACHE_DIR", "PIP_DISABLE_PIP_VERSION_CHECK", "PIP_REQUIRE_VIRTUALENV",
    "POETRY_HOME", "POETRY_VIRTUALENVS_IN_PROJECT", "PDM_HOME", "HATCH_ENV_TYPE_VIRTUAL_PATH",
    "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "PKG_CONFIG_PATH",
    "CC", "CXX", "CPP", "LD", "AR", "FC", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "MAKEFLAGS", "MAKE",
    "CMAKE_PREFIX_PATH", "CMAKE_GENERATOR", "CCACHE_DIR", "CLASSPATH", "JAVA_OPTS", "JDK_JAVA_OPTIONS",
    "MAVEN_OPTS", "GRADLE_OPTS", "GOROOT", "GOPATH", "GOBIN", "GOFLAGS", "GOPROXY", "GOPRIVATE", "GONOSUMDB",
    "GONOPROXY", "GOSUMDB", "GOTOOLCHAIN", "GOOS", "GOARCH", "CGO_ENABLED", "GOCACHE", "GOMODCACHE", "GO111MODULE",
    "RUSTFLAGS", "RUST_BACKTRACE", "RUST_LOG", "RUSTC_WRAPPER", "NODE_PATH", "NODE_ENV", "NODE_OPTIONS",
    "NODE_EXTRA_CA_CERTS", "NPM_CONFIG_PREFIX", "NPM_CONFIG_CACHE", "NPM_CONFIG_REGISTRY", "YARN_CACHE_FOLDER",
    "COREPACK_HOME", "BUN_INSTALL", "DENO_DIR", "DENO_INSTALL", "GEM_HOME", "GEM_PATH", "BUNDLE_PATH",
    "BUNDLE_GEMFILE", "BUNDLE_APP_CONFIG", "RBENV_ROOT", "RBENV_VERSION", "PERL5LIB", "PERL_LOCAL_LIB_ROOT",
    "R_HOME", "R_LIBS", "R_LIBS_USER", "JULIA_DEPOT_PATH", "JULIA_PROJECT", "DOTNET_ROOT",
    "DOTNET_CLI_TELEMETRY_OPTOUT", "NUGET_PACKAGES", "OPAMROOT", "OPAMSWITCH", "STACK_ROOT", "CABAL_DIR",
    "ANDROID_SDK_ROOT", "NDK_HOME", "FLUTTER_ROOT", "PUB_CACHE", "SWIFTLY_HOME_DIR", "ZIG_GLOBAL_CACHE_DIR",
    "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "DEBIAN_FRONTEND",
    # certificates and proxies (a proxy URL with a password in it is dropped by the value check)
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
    # CI markers test suites look at
    "CI", "CONTINUOUS_INTEGRATION", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "CIRCLECI", "TRAVIS",
    "JENKINS_URL", "TF_BUILD",
    # who commits
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
})
"""Names every command gets (when set and not secret-looking by value) under `inherit_env = "core"`."""

CORE_PATTERNS = ("LC_*", "XDG_*", "*_HOME", "CONDA_*", "PYTHON*", "PYENV_*", "UV_*", "NVM_*", "PNPM_*",
                 "VOLTA_*", "ASDF_*", "MISE_*", "SDKMAN_*", "JAVA_*", "CARGO_*", "RUSTUP_*", "PIXI_*",
                 "MAMBA_*", "MICROMAMBA_*", "PYTEST_*", "HYPOTHESIS_*", "COVERAGE_*", "TOX_*", "NOX_*")
"""Shell patterns of names every command gets (when not secret-looking by name or value)."""

SECRET_NAME = regex(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD_|_PWD$|CREDENTIAL|AUTH(?!OR)|JWT|COOKIE|SESSION|"
                         r"PRIVATE|WEBHOOK|DSN|SIGNATURE|CERT_PASS|SSH_AUTH_SOCK", re.IGNORECASE)
"""Names that say a secret (Codex's default excludes `*KEY*`, `*SECRET*`, `*TOKEN*`, and more)."""

_SECRET_VALUES = (
    regex(r"[a-z][a-z0-9+.-]*://[^/\s@]+@", re.IGNORECASE),  # a URL with a user (and password): DSNs
    regex(r"\beyJ[\w-]{6,}\.[\w-]{6,}\.[\w-]*"),  # a JWT
    regex(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    regex(r"\b(?:gh[pousr]_|github_pat_|glpat-|xox[abposr]-|sk-|sk_live_|rk_live_|pk_live_|hf_|npm_|pypi-|"
               r"AKIA|ASIA|AIza|ya29\.|dop_v1_|SG\.)[A-Za-z0-9_\-.]{16,}"),  # well-known token formats
    regex(r"hooks\.slack\.com/|discord(?:app)?\.com/api/webhooks/|\.webhook\.office\.com/", re.IGNORECASE),
    regex(r"(?:^|;)\s*(?:password|pwd|accountkey|sharedaccesskey)\s*=", re.IGNORECASE),  # connection strings
    regex(r"\"auths?\"\s*:"),  # docker / registry auth JSON
    # a secret passed as an option inside an allowed variable: JAVA_OPTS="-Djavax.net.ssl.keyStorePassword=..",
    # GRADLE_OPTS="-Dorg.gradle.project.sonatypePassword=..", MAVEN_OPTS="-Dpassword=..", "--token=.."
    regex(r"(?:^|[\s;,.\-_])[\w.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|credentials?)"
               r"\s*[=:]\s*[^\s;,]", re.IGNORECASE),
    regex(r"\b(?:Basic|Bearer)\s+[A-Za-z0-9+/=._~-]{8,}"),  # an HTTP Authorization value
)
"""Values that are secrets whatever the variable is called."""


def secret_value(value: str) -> bool:
    """Whether `value` looks like a credential (a URL with a user or password, a JWT, a key, a token)."""
    return any(pattern.search(value) for pattern in _SECRET_VALUES)


@datarecord(frozen=True)
class CommandEnvironment:
    """Which of swecli's environment variables a command it runs for the model gets."""

    inherit: Inherit = "core"
    pass_env: tuple[str, ...] = ()
    """Names or shell patterns passed in whatever they hold (`sandbox.pass_env`)."""

    @classmethod
    def from_settings(cls, inherit: Inherit, pass_env: Iterable[str]) -> CommandEnvironment:
        return cls(inherit=inherit, pass_env=tuple(pass_env))

    def build(self, env: Mapping[str, str]) -> dict[str, str]:
        """The variables of `env` a command gets (the same environment is judged once: the value checks
        cost a few milliseconds, and every bash call asks)."""
        raw = getattr(env, "_data", None) if env is os.environ else None
        if isinstance(raw, dict):  # os.environ holds bytes: its items() decodes every name and value, each call
            return dict(self._build_process(raw))
        return dict(self._build(tuple(env.items())))

    def _build_process(self, raw: dict[bytes, bytes]) -> dict[str, str]:
        """`_build` of the process's environment as `os.environ` keeps it (decoded as it decodes it), kept
        while this policy and that environment are the same: every bash call asks twice (the next spare's
        order, then the command), and comparing the dicts (in C) costs far less than a tuple of every entry
        to look the result up by. One tuple, replaced whole: another thread sees one build or the other."""
        last = _LAST_PROCESS_BUILD[0] if _LAST_PROCESS_BUILD else None
        if last is None or last[0] != self or last[1] != raw:
            built = self._build(tuple((os.fsdecode(name), os.fsdecode(value)) for name, value in raw.items()))
            last = (self, dict(raw), dict(built))
            _LAST_PROCESS_BUILD[:] = [last]
        return last[2]

    @functools.lru_cache(maxsize=4)  # noqa: B019 (a frozen, hashable settings object: a handful per process)
    def _build(self, items: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        return tuple((name, value) for name, value in items if self.passes(name, value))

    def passes(self, name: str, value: str) -> bool:
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in self.pass_env):
            return True
        if self.inherit == "none" or secret_value(value):
            return False
        if name in CORE_NAMES:  # reviewed one by one: GOPRIVATE holds module paths, not a secret
            return True
        if SECRET_NAME.search(name):
            return False
        return self.inherit == "all" or any(fnmatch.fnmatchcase(name, pattern) for pattern in CORE_PATTERNS)

    def withheld(self, env: Mapping[str, str]) -> list[str]:
        """The names of `env` a command does not get (for the docs' and the tests' explanations)."""
        return sorted(name for name, value in env.items() if not self.passes(name, value))


_LAST_PROCESS_BUILD: list[tuple[CommandEnvironment, dict[bytes, bytes], dict[str, str]]] = []
"""The last `CommandEnvironment._build_process`: its policy, a copy of the process's environment, the result."""
