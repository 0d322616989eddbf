"""The command environment: an allowlist that keeps secrets out by name and by value (issue 22)."""

from __future__ import annotations

import os

import pytest

from swecli.tools.environment import CommandEnvironment, secret_value

USER_SHELL = {
    # the secrets whose names say nothing, and the usual ones
    "DATABASE_URL": "postgres://app:hunter2@db.internal:5432/app",
    "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T000/B000/XXXXXXXX",
    "SENTRY_DSN": "https://0123456789abcdef@o1.ingest.sentry.io/1",
    "CI_JOB_JWT": "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJwcm9qZWN0In0.c2lnbmF0dXJlLWJ5dGVz",
    "DOCKER_AUTH_CONFIG": '{"auths": {"registry.example": {"auth": "dXNlcjpwYXNz"}}}',
    "NPM_CONFIG__AUTH": "dXNlcjpwYXNz",
    "REDIS_URL": "redis://:s3cret@cache:6379/0",
    "MYSQL_PWD": "hunter2",
    "OPENAI_API_KEY": "sk-proj-0000000000000000000000",
    "GITHUB_TOKEN": "ghp_000000000000000000000000000000000000",
    "AZURE_STORAGE_CONNECTION_STRING": "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abc==",
    "PIP_INDEX_URL": "https://user:pass@pypi.internal/simple",  # allowlisted name, secret value
    "MY_APP_SETTING": "plain",
    # what a toolchain needs
    "PATH": "/home/u/.venv/bin:/usr/bin", "HOME": "/home/u", "LANG": "en_US.UTF-8", "LC_ALL": "en_US.UTF-8",
    "TERM": "xterm-256color", "VIRTUAL_ENV": "/home/u/.venv", "JAVA_HOME": "/usr/lib/jvm/java-21",
    "GOPATH": "/home/u/go", "GOPRIVATE": "github.com/acme/*", "CARGO_HOME": "/home/u/.cargo",
    "RUSTUP_HOME": "/home/u/.rustup", "NVM_DIR": "/home/u/.nvm", "CONDA_PREFIX": "/opt/conda",
    "PYTHONPATH": "/home/u/src", "GIT_AUTHOR_NAME": "Ada", "CI": "true", "HTTPS_PROXY": "http://proxy:3128",
}
SECRETS = ["DATABASE_URL", "SLACK_WEBHOOK_URL", "SENTRY_DSN", "CI_JOB_JWT", "DOCKER_AUTH_CONFIG", "NPM_CONFIG__AUTH",
           "REDIS_URL", "MYSQL_PWD", "OPENAI_API_KEY", "GITHUB_TOKEN", "AZURE_STORAGE_CONNECTION_STRING",
           "PIP_INDEX_URL"]
HONEST = ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "VIRTUAL_ENV", "JAVA_HOME", "GOPATH", "GOPRIVATE", "CARGO_HOME",
          "RUSTUP_HOME", "NVM_DIR", "CONDA_PREFIX", "PYTHONPATH", "GIT_AUTHOR_NAME", "CI", "HTTPS_PROXY"]


def test_core_passes_the_toolchain_and_no_secret() -> None:
    env = CommandEnvironment().build(USER_SHELL)
    assert sorted(env) == sorted(HONEST)
    assert CommandEnvironment().withheld(USER_SHELL) == sorted([*SECRETS, "MY_APP_SETTING"])


def test_all_passes_everything_but_secrets_by_name_or_value() -> None:
    env = CommandEnvironment(inherit="all").build(USER_SHELL)
    assert sorted(env) == sorted([*HONEST, "MY_APP_SETTING"])


def test_pass_env_names_what_the_user_wants_secret_or_not() -> None:
    policy = CommandEnvironment(pass_env=("GITHUB_TOKEN", "MY_APP_*"))
    env = policy.build(USER_SHELL)
    assert env["GITHUB_TOKEN"] == USER_SHELL["GITHUB_TOKEN"] and env["MY_APP_SETTING"] == "plain"
    assert "DATABASE_URL" not in env
    assert sorted(CommandEnvironment(inherit="none", pass_env=("LANG",)).build(USER_SHELL)) == ["LANG"]


@pytest.mark.parametrize("value", [
    "https://user:pw@host/x", "amqp://guest@rabbit:5672", "eyJhbGciOiJIUzI1NiJ9.eyJhIjoxfQ.sig",
    "-----BEGIN OPENSSH PRIVATE KEY-----", "xoxb-0000000000-0000000000-abcdefabcdefabcdef", "AKIAABCDEFGHIJKLMNOP",
    "glpat-abcdefghijklmnopqrst", "Server=db;Database=x;Password=hunter2", "https://discord.com/api/webhooks/1/x",
    # found by the independent check: secrets inside variables the allowlist passes (JAVA_OPTS, GRADLE_OPTS, ...)
    "-Xmx2g -Djavax.net.ssl.keyStorePassword=hunter2", "-Dorg.gradle.project.sonatypePassword=hunter2",
    "--token=abc123", "Bearer abcdefghijklmnop", "Basic dXNlcjpwYXNzd29yZA==",
])
def test_secret_values_are_recognized(value: str) -> None:
    assert secret_value(value)


@pytest.mark.parametrize("value", ["/usr/bin:/bin", "en_US.UTF-8", "https://pypi.org/simple", "git@github.com:a/b",
                                   "xterm-256color", "github.com/acme/*", "1", "--max-old-space-size=4096",
                                   "-Dfile.encoding=UTF-8", "-O2 -DTOKEN_MAX=5", "-k test_token -p no:cacheprovider",
                                   "-Dsecret.path=/etc/app"])
def test_ordinary_values_are_not_secrets(value: str) -> None:
    assert not secret_value(value)


@pytest.mark.parametrize("inherit", ["core", "all", "none"])
def test_the_process_environment_is_judged_as_any_mapping_and_followed_when_it_changes(
        inherit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # os.environ is read as it stores it (bytes, decoded only when it changed): the same answer as a copy.
    policy = CommandEnvironment.from_settings(inherit, ["MY_*"])  # type: ignore[arg-type]
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("MY_TOKEN", "x")
    monkeypatch.setenv("DATABASE_URL", "postgres://user:hunter2@db/x")
    first = policy.build(os.environ)
    assert first == policy.build(dict(os.environ))
    assert first.get("MY_TOKEN") == "x" and "DATABASE_URL" not in first
    monkeypatch.setenv("LANG", "fr_FR.UTF-8")
    monkeypatch.delenv("MY_TOKEN")
    second = policy.build(os.environ)
    assert second == policy.build(dict(os.environ)) and "MY_TOKEN" not in second
    assert second.get("LANG") == ("fr_FR.UTF-8" if inherit != "none" else None)
