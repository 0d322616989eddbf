"""What swecli runs as a forked test server's command (see forkserver.py): a real process on real pipes,
stdlib only, that hands them to a pre-imported copy of server.py and exits with its exit status.

    python -S tests/mcp/launch.py SOCKET [server.py's arguments]
"""

from __future__ import annotations

import json
import os
import socket
import sys


def main(path: str, args: list[str]) -> int:
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn:
        conn.connect(path)
        request = {"argv": ["server.py", *args], "cwd": os.getcwd(), "env": dict(os.environ)}
        socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
        status = conn.recv(1)  # the server's exit status; nothing if it was killed
    return status[0] if status else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
