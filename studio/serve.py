"""Daphne on the configured event loop: ``python -m studio.serve <daphne's arguments>``.

Daphne creates its loop (and Twisted's reactor on it) when ``daphne.server`` is first
imported, before any of our code runs; this entry point sets the loop policy first
(``studio/event_loop.py``), then hands over to Daphne's own command line.
"""

from __future__ import annotations

from studio.event_loop import install_policy


def main() -> None:
    install_policy()
    from daphne.cli import CommandLineInterface

    CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()
