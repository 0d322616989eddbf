"""The test MCP server (server.py) imported once and forked for each start: the tests' servers without
the SDK's import (~2.5 s of CPU) at every start.

    python tests/mcp/forkserver.py FOLDER      # listens on FOLDER/socket, removes FOLDER when it ends

swecli does not talk to this process. It runs `launch.py` as the server's command, a real process on
real pipes (stdlib only: ~30 ms), which connects to the socket and hands over its stdin, stdout and stderr
(SCM_RIGHTS), its arguments, environment and working directory. This process forks; the child takes
those descriptors as 0, 1 and 2 and runs `server.main`. The child sends its exit status to the launcher,
which exits with it; if the launcher dies first (swecli's SIGTERM or SIGKILL to its process group), the
child sees the socket close and exits too. This process exits when its stdin closes: the test process
that started it (`tests/mcp/conftest.py` `fork_socket`) has ended or let it go.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Callable


def main(folder: str) -> None:
    import server  # the SDK and the test tools: the import every forked server skips

    signal.signal(signal.SIGCHLD, _reap)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(os.path.join(folder, "socket"))
    listener.listen(64)
    print("ready", flush=True)
    try:
        while True:
            readable, _, _ = select.select([listener, sys.stdin], [], [])
            if sys.stdin in readable:
                return  # nothing is ever written to our stdin: readable means it closed
            conn, _ = listener.accept()
            if os.fork() == 0:
                listener.close()
                _become_server(conn, server.main)
            conn.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _reap(*_: object) -> None:
    """Wait for the children that ended (their CPU time then counts in ours, as `time` reports it)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _become_server(conn: socket.socket, run: Callable[[list[str]], None]) -> None:
    """In the forked child: take the launcher's descriptors, arguments, environment and directory, serve,
    report the exit status to the launcher. Never returns."""
    code = 1
    try:
        message, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
        request = json.loads(message)
        for fd, target in zip(fds, (0, 1, 2), strict=True):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = request["argv"]
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        threading.Thread(target=_exit_with_launcher, args=(conn,), daemon=True).start()
        run(sys.argv[1:])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            conn.send(bytes([code & 0xFF]))
        finally:
            os._exit(code)


def _exit_with_launcher(conn: socket.socket) -> None:
    conn.recv(1)  # the launcher sends nothing after its request: this returns when it is gone
    os._exit(1)


if __name__ == "__main__":
    main(sys.argv[1])
