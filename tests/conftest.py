"""Test-wide guards: no test may reach a real provider, and no test touches the user's config."""

from __future__ import annotations

import ipaddress
import socket
import sys
from pathlib import Path

import pytest

_real_connect = socket.socket.connect


def pytest_configure(config: pytest.Config) -> None:
    """Compile swecli's modules once, in the controlling process, before any test starts a swecli process.

    With `PYTHONDONTWRITEBYTECODE` set (CI machines set it) and an editable install, nothing writes the
    bytecode, so every one of the suite's hundreds of `swecli` processes compiled the source it imported
    again: ~0.3 s of CPU a start. `compileall` writes it whatever that variable says, as pip does for an
    installed package; a module edited later is compiled again by its own process, as always.

    For the same reason every pytest process (each xdist worker) rewrote every test module's asserts again on
    every run (~9 s of CPU per process, measured by suitectx); pytest keeps its rewritten modules unless
    bytecode writing is off, so it is switched on for this process (children keep the variable)."""
    sys.dont_write_bytecode = False
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has done it
        return
    import compileall

    import swecli

    compileall.compile_dir(Path(swecli.__file__).parent, quiet=1, workers=1)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (the README's `pytest`): one worker more than xdist would start, one per core.

    About a fifth of a worker's time is spent waiting, not computing: on the swecli processes, servers and
    ptys its tests start, which run on the other core. With one worker per core the suite used 162-170% of
    2 cores; a third worker fills those waits. Measured on 2 cores, same checkout, one run after the other:
    `-n 2` 231 s, `-n 3` 203 s, the same CPU (374 s user + sys both); docs/testing.md. A count the user
    gives (`-n 4`, `PYTEST_XDIST_AUTO_NUM_WORKERS`) or `-n logical` is left to xdist."""
    import os

    from xdist.plugin import pytest_xdist_auto_num_workers as one_per_core

    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") or config.option.numprocesses != "auto":
        return None
    return one_per_core(config) + 1


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


@pytest.fixture(scope="session")
def _warm_vocabularies(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The decoded vocabularies (`tokens.ranks_cache_path`), made once per run and shared by every test.

    Each test gets a fresh `$XDG_CACHE_HOME`, so without this every `swecli` a test starts would decode
    the o200k vocabulary again (seconds under load) and write its own copy. Under pytest-xdist the
    workers share the run's base folder; writes are atomic, so two workers building it at once is
    harmless. Tests of the cache itself point `$XDG_CACHE_HOME` elsewhere and start cold."""
    import os

    from swecli.context import tokens

    root = tmp_path_factory.getbasetemp()
    shared = (root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root) / "warm-cache"
    paths = []
    for name in ("o200k_base", "cl100k_base"):
        saved = os.environ.get("XDG_CACHE_HOME")
        os.environ["XDG_CACHE_HOME"] = str(shared)
        try:
            tokens._read_ranks(name)  # reads the shared copy, or decodes and writes it
            paths.append(Path(tokens.ranks_cache_path(name, tokens._SPECS[name].sha256)))
        finally:
            if saved is None:
                del os.environ["XDG_CACHE_HOME"]
            else:
                os.environ["XDG_CACHE_HOME"] = saved
    from tests import unprivileged

    unprivileged.WARM_VOCABULARIES[:] = [path for path in paths if path.is_file()]
    return unprivileged.WARM_VOCABULARIES


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory,
                  _warm_vocabularies: list[Path]) -> None:
    """Provider keys and SWECLI_* settings from the developer's shell must not leak into tests."""
    import os

    for name in list(os.environ):
        if name.startswith("SWECLI_") or name.endswith(("_API_KEY", "_BASE_URL")):
            monkeypatch.delenv(name, raising=False)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))  # the context-window cache
    monkeypatch.setenv("HOME", str(home))
    from tests.unprivileged import link_vocabularies

    link_vocabularies(home, _warm_vocabularies)


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
