"""Exit 1 with a sentence when the server could not listen on HOST:PORT (run.sh's check).

Standard library only: run.sh calls it before installing anything, so a busy port is
reported first, before any URL is printed (issue #40).
"""

from __future__ import annotations

import errno
import socket
import sys


def problem(host: str, port_text: str) -> str | None:
    """Why the server could not listen there, in words; None when it could."""
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return f"PORT must be a number from 1 to 65535, not {port_text!r}."
    port = int(port_text)
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # As Daphne binds: a port left in TIME_WAIT by a server just stopped is free to use.
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind((host, port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return (
                f"Port {port} is already in use on {host} (another server, or this one "
                f"started earlier?). Stop it, or choose another port: PORT={port + 1} "
                "./scripts/run.sh"
            )
        if exc.errno == errno.EACCES:
            return f"Port {port} needs administrator rights; choose one above 1023: PORT=8000"
        return f"Cannot listen on {host}:{port}: {exc.strerror}."
    finally:
        probe.close()
    return None


if __name__ == "__main__":
    found = problem(sys.argv[1], sys.argv[2])
    if found:
        print(found, file=sys.stderr)
        sys.exit(1)
