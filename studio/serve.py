"""Daphne on the configured event loop: ``python -m studio.serve <daphne's arguments>``.

Daphne creates its loop (and Twisted's reactor on it) when ``daphne.server`` is first
imported, before any of our code runs; this entry point sets the loop policy first
(``studio/event_loop.py``), then hands over to Daphne's own command line, whose access log
shows trigger tokens redacted (``agents_app.base.telemetry.redact_trigger_tokens``) and
whose TCP sockets listen with a backlog of ``STUDIO_LISTEN_BACKLOG`` connections (default
1024; Twisted's is 50).

Why the backlog: connections the kernel has accepted but the server has not yet taken wait in
that queue. With 50, a burst of a few hundred clients opening connections at once (a flood of
posts, every tab reconnecting after a deploy) overflowed it, and one client of 200 saw its
connection reset with no answer at all (``tests/integration/test_post_flood.py``), where it
should get a 202 or a JSON 503. The kernel caps it at ``net.core.somaxconn`` (4096 on
current kernels); nginx's default is 511.
"""

from __future__ import annotations

import os
from typing import Any

from studio.event_loop import install_policy

DEFAULT_BACKLOG = 1024


def with_backlog(endpoint: str, backlog: int) -> str:
    """A Twisted endpoint description with ``backlog`` set, unless it is not TCP or says its
    own (``-e tcp:port=8000:backlog=64`` keeps 64)."""
    kind = endpoint.split(":", 1)[0]
    if kind not in ("tcp", "tcp6") or ":backlog=" in endpoint:
        return endpoint
    return f"{endpoint}:backlog={backlog}"


def listen_backlog() -> int:
    """``STUDIO_LISTEN_BACKLOG``, or the default; a value that is not a count stops the start
    with a message saying so."""
    raw = os.environ.get("STUDIO_LISTEN_BACKLOG", "").strip()
    if not raw:
        return DEFAULT_BACKLOG
    if not raw.isdigit() or int(raw) < 1:
        raise SystemExit(f"STUDIO_LISTEN_BACKLOG must be a whole number above 0, not {raw!r}")
    return int(raw)


def main() -> None:
    install_policy()
    from daphne.cli import CommandLineInterface
    from daphne.server import Server

    from agents_app.base.telemetry import redact_trigger_tokens

    backlog = listen_backlog()

    class RedactingServer(Server):
        def __init__(self, application: Any, endpoints: Any = None, **options: Any) -> None:
            endpoints = [with_backlog(e, backlog) for e in endpoints or ()]
            super().__init__(application, endpoints=endpoints, **options)

        def log_action(self, protocol: str, action: str, details: dict[str, Any]) -> None:
            # The access log prints each request's path, and a trigger's path is its
            # credential (docs/automation.md, "Triggers").
            if isinstance(details.get("path"), str):
                details = {**details, "path": redact_trigger_tokens(details["path"])}
            super().log_action(protocol, action, details)

    class Cli(CommandLineInterface):
        server_class = RedactingServer

    Cli.entrypoint()


if __name__ == "__main__":
    main()
