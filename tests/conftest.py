"""Test-wide guards: no test may reach a real provider, and no test touches the user's config."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

import pytest

_real_connect = socket.socket.connect


def _is_loopback(address: object) -> bool:
    if not isinstance(address, tuple) or not address:
        return True  # AF_UNIX paths and the like
    host = str(address[0])
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def guarded_connect(sock: socket.socket, address: object) -> object:
        if not _is_loopback(address):
            raise AssertionError(f"test tried to reach a non-loopback address: {address!r}")
        return _real_connect(sock, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Provider keys and SWECLI_* settings from the developer's shell must not leak into tests."""
    import os

    for name in list(os.environ):
        if name.startswith("SWECLI_") or name.endswith(("_API_KEY", "_BASE_URL")):
            monkeypatch.delenv(name, raising=False)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))  # the context-window cache
    monkeypatch.setenv("HOME", str(home))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project directory."""
    root = tmp_path / "project"
    root.mkdir()
    return root


def path_without(tmp_path: Path, *commands: str) -> str:
    """A PATH that finds every program the current one finds except `commands` (as on a machine without
    them): one folder of links to the first of each name, so nothing else changes."""
    import os

    folder = tmp_path / f"path-without-{'-'.join(commands)}"
    folder.mkdir(exist_ok=True)
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        try:
            names = os.listdir(directory or ".")
        except OSError:
            continue
        for name in names:
            link = folder / name
            source = os.path.join(directory, name)
            if name in commands or link.exists() or link.is_symlink() or not os.access(source, os.X_OK):
                continue
            link.symlink_to(source)
    return str(folder)


@pytest.fixture(params=["rg", "no-rg"])
def ripgrep(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> bool:
    """Run the test once as it is and once with `rg` absent from PATH, so both search engines are covered
    on machines (CI) where ripgrep is installed. The value says whether rg is reachable."""
    import shutil

    if request.param == "no-rg":
        monkeypatch.setenv("PATH", path_without(tmp_path, "rg"))
        assert shutil.which("rg") is None
        return False
    if shutil.which("rg") is None:
        pytest.skip("ripgrep (rg) is not installed")
    return True
