"""Daphne on the configured event loop: ``python -m studio.serve <daphne's arguments>``.

Daphne creates its loop (and Twisted's reactor on it) when ``daphne.server`` is first
imported, before any of our code runs; this entry point sets the loop policy first
(``studio/event_loop.py``), then hands over to Daphne's own command line, whose access log
shows trigger tokens redacted (``agents_app.base.telemetry.redact_trigger_tokens``).
"""

from __future__ import annotations

from typing import Any

from studio.event_loop import install_policy


def main() -> None:
    install_policy()
    from daphne.cli import CommandLineInterface
    from daphne.server import Server

    from agents_app.base.telemetry import redact_trigger_tokens

    class RedactingServer(Server):
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
