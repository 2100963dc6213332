from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents_app.services.operations.health import ROLES, Unhealthy, check_role


class Command(BaseCommand):
    # A probe every 30 s per container (docker/compose.yaml): the system checks would import
    # the whole API and studio each time (2 s of CPU); the migrate job ran them before the
    # processes it probes started.
    requires_system_checks: list[str] = []

    help = (
        "Exit 0 when this process of the topology does its job (web: Daphne answers HTTP; "
        "worker: the database works and the worker answers a ping; beat: database and broker "
        "reachable), else exit 1 with the reason. Used by docker/compose.yaml."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("role", choices=ROLES)
        parser.add_argument("--port", type=int, default=8000, help="web: Daphne's port")
        parser.add_argument("--node", help="worker: node name (default celery@<hostname>)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            check_role(options["role"], port=options["port"], node=options["node"])
        except Unhealthy as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{options['role']}: healthy")
