"""The seccomp filter sandboxed commands run under (bwrap `--seccomp FD`).

Always: the kernel keyring is refused (`keyctl`, `add_key`, `request_key`: EPERM, as in Docker's
default profile). Keyrings are not confined by the sandbox's namespaces: the session keyring swecli was
started in (a login's Kerberos tickets, ecryptfs and AFS keys, `keyctl` secrets) is inherited, and
without a user namespace of its own (a setuid bwrap) so is the user's keyring. Also refused:
`ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)`, which push keystrokes into a terminal's input (commands get no
terminal today; this keeps it so if one ever reaches them). And setting the setuid or setgid bit
(`chmod`, `fchmod`, `fchmodat(2)`, and `open`/`openat`/`creat`/`mknod(at)` creating a file with them):
root inside is root outside, so `cp /bin/bash x; chmod u+s x` in the project would leave a root shell for
any local user; `openat2`, whose mode the filter cannot see, answers ENOSYS (callers fall back to openat).

When the network is off, also unix and vsock sockets:

The network namespace (`bwrap --unshare-net`) already cuts off TCP/UDP and abstract unix sockets,
but two ways out are not namespaced: a unix socket on the file system (`/run/...`, a database's or
a container engine's socket, any socket some other program left in a directory the command can
see) and vsock (the hypervisor's host). A mount layout cannot hide every socket path without
hiding the directories that hold them, so the filter refuses to create such sockets instead, as
Claude Code's sandbox does (`socket(AF_UNIX)` fails with EPERM):

- `socket(AF_UNIX, ...)` and `socket(AF_VSOCK, ...)`: EPERM;
- `socketpair(AF_UNIX, SOCK_DGRAM | SOCK_SEQPACKET)`: EPERM, since a datagram socket can `sendto`
  any socket path even when paired; stream pairs (asyncio's self-pipe, multiprocessing) keep working;
- `io_uring_setup`: ENOSYS, since io_uring can open and connect sockets without the `socket`
  system call (programs fall back to ordinary I/O, as they must on kernels without io_uring).

The filter is compiled with libseccomp (the `pyseccomp` binding, libseccomp2 from the system),
which also handles the 32-bit x86 ABI and refuses foreign ones. Without libseccomp the sandbox
still runs, and `unavailable()` says what is left open.
"""

from __future__ import annotations

import errno
import functools
import os
import socket
import stat
import tempfile
import threading
from typing import Any

AF_VSOCK = 40
TIOCSTI = 0x5412
TIOCLINUX = 0x541C
_SOCK_TYPE_MASK = 0xF
MISSING_LIBSECCOMP = ("Sandboxed commands can still reach unix sockets outside the project (a database's, a "
                      "container engine's), because libseccomp is not available: install it (`sudo apt-get install "
                      "libseccomp2`, or your distribution's libseccomp package).")


def unavailable() -> str:
    """"" when the filter can be built here, else one sentence saying what stays open and the fix."""
    return "" if _filter(False) is not None else MISSING_LIBSECCOMP


def filter_fd(*, network: bool) -> int | None:
    """A readable file descriptor holding the compiled filter, for one bwrap run (bwrap reads it to the
    end, so each run needs its own); the caller closes it. None when libseccomp is missing."""
    program = _filter(network)
    if program is None:
        return None
    read, write = os.pipe()
    try:
        os.write(write, program)  # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(write)
    return read


_FILTER_LOCK = threading.Lock()


def _filter(network: bool) -> bytes | None:
    """`_built`, once even when the start's probe and a spare sandbox's start ask at the same time."""
    with _FILTER_LOCK:
        return _built(network)


@functools.lru_cache(maxsize=2)
def _built(network: bool) -> bytes | None:
    sonames = _found_without_a_compiler("c", "seccomp")
    if sonames is None:
        return None
    try:
        seccomp = _binding(sonames)
    except (ImportError, OSError, AttributeError, RuntimeError):  # no binding; no libseccomp.so (RuntimeError)
        return None
    deny = seccomp.ERRNO(errno.EPERM)
    program = seccomp.SyscallFilter(seccomp.ALLOW)
    if seccomp.system_arch() == seccomp.Arch.X86_64:
        program.add_arch(seccomp.Arch.X86)  # 32-bit programs get the same rules, not a way around them
    for name in ("keyctl", "add_key", "request_key"):
        program.add_rule(deny, name)
    for request in (TIOCSTI, TIOCLINUX):
        program.add_rule(deny, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, request))
    _no_setuid_files(seccomp, program, deny)
    if not network:
        _no_sockets(seccomp, program, deny)
    with tempfile.TemporaryFile() as compiled:
        program.export_bpf(compiled)
        compiled.seek(0)
        return compiled.read()


def _found_without_a_compiler(*libraries: str) -> dict[str, str] | None:
    """Each library's soname as `ldconfig -p` lists it (None unless it lists every one), as
    `ctypes.util.find_library` asks it first. pyseccomp's import finds libc and libseccomp with
    `find_library`, which, for a library ldconfig does not list (musl systems such as Alpine, a libseccomp
    outside the cache or not installed), runs `gcc` or `cc`, `ld` and `objdump` from PATH, in swecli's own
    process tree: a project folder on PATH (direnv's `PATH_add bin`) would have run a `gcc` the repository
    planted. So pyseccomp is imported only when ldconfig lists both, and its import is answered from this
    listing (`_binding`); otherwise seccomp is unavailable, as when libseccomp is missing."""
    found = {name: _listed_soname(name) for name in libraries}
    return None if None in found.values() else {name: soname for name, soname in found.items() if soname}


def _listed_soname(name: str) -> str | None:
    """`ctypes.util._findSoname_ldconfig(name)`'s answer (the same pattern, for this machine's ABI), from one
    `ldconfig -p` run per process: ctypes runs it for each library it is asked for, and the start's probe
    asked four times (~2 ms of the interpreter and ~10 ms each)."""
    import re
    import struct

    machine = os.uname().machine + ("-32" if struct.calcsize("l") == 4 else "-64")
    abi = _ABI_TYPES.get(machine, "libc6")
    found = re.search(os.fsencode(rf"\s+(lib{re.escape(name)}\.[^\s]+)\s+\({abi}"), _ldconfig_listing())
    return os.fsdecode(found.group(1)) if found else None


_ABI_TYPES = {"x86_64-64": "libc6,x86-64", "ppc64-64": "libc6,64bit", "sparc64-64": "libc6,64bit",
              "s390x-64": "libc6,64bit", "ia64-64": "libc6,IA-64"}
"""ctypes.util's table: the ABI tag ldconfig prints for this machine's libraries."""


@functools.lru_cache(maxsize=1)
def _ldconfig_listing() -> bytes:
    """`/sbin/ldconfig -p`'s output, as ctypes runs it (b"" when it cannot run)."""
    import subprocess

    try:
        with subprocess.Popen(["/sbin/ldconfig", "-p"], stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, env={"LC_ALL": "C", "LANG": "C"}) as child:
            assert child.stdout is not None
            return child.stdout.read()
    except OSError:
        return b""


_BINDING_LOCK = threading.Lock()


def _binding(sonames: dict[str, str]) -> Any:
    """pyseccomp, imported with `ctypes.util.find_library` answering from `sonames` on this thread (no
    second and third `ldconfig -p`, and no compiler fallback for a name it would ask besides)."""
    import ctypes.util

    with _BINDING_LOCK:
        asked, importer = ctypes.util.find_library, threading.get_ident()

        def find_library(name: str) -> str | None:
            return sonames.get(name) if threading.get_ident() == importer else asked(name)

        ctypes.util.find_library = find_library
        try:
            import pyseccomp
        finally:
            ctypes.util.find_library = asked
    return pyseccomp


def _no_setuid_files(seccomp: Any, program: Any, deny: Any) -> None:
    """Refuse every way of giving a file the setuid or setgid bit (see the module docstring)."""
    for bit in (stat.S_ISUID, stat.S_ISGID):
        def mode(index: int, bit: int = bit) -> Any:
            return seccomp.Arg(index, seccomp.MASKED_EQ, bit, bit)

        for name, index in (("chmod", 1), ("fchmod", 1), ("fchmodat", 2), ("fchmodat2", 2), ("creat", 1),
                            ("mknod", 1), ("mknodat", 2)):
            program.add_rule(deny, name, mode(index))
        for creating in (os.O_CREAT, os.O_TMPFILE & ~os.O_DIRECTORY):  # the mode counts only when creating
            flag = seccomp.Arg(1, seccomp.MASKED_EQ, creating, creating)
            program.add_rule(deny, "open", flag, mode(2))
            program.add_rule(deny, "openat", seccomp.Arg(2, seccomp.MASKED_EQ, creating, creating), mode(3))
    program.add_rule(seccomp.ERRNO(errno.ENOSYS), "openat2")


def _no_sockets(seccomp: Any, program: Any, deny: Any) -> None:
    for family in (socket.AF_UNIX, AF_VSOCK):
        program.add_rule(deny, "socket", seccomp.Arg(0, seccomp.EQ, family))
    for kind in (socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
        program.add_rule(deny, "socketpair", seccomp.Arg(0, seccomp.EQ, socket.AF_UNIX),
                         seccomp.Arg(1, seccomp.MASKED_EQ, _SOCK_TYPE_MASK, kind))
    program.add_rule(seccomp.ERRNO(errno.ENOSYS), "io_uring_setup")
