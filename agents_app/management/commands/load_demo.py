from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents_app.services.definitions.demo import (
    ADMIN_PASSWORD_ENV,
    demo_admin_ensure,
    demo_definitions_load,
)
from agents_app.services.definitions.files import DefinitionFilesInvalid


class Command(BaseCommand):
    help = (
        "Load the demo agents (support_agent, debate_agent, intent_classifier, all on the "
        "test provider) and create the superuser 'admin' if there is no administrator yet."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--reset",
            action="store_true",
            help="Also restore demo definitions that were edited to their shipped version.",
        )

    def handle(self, *args: Any, reset: bool, **options: Any) -> None:
        try:
            report = demo_definitions_load(reset=reset)
        except DefinitionFilesInvalid as exc:
            for line in exc.errors:
                self.stderr.write(line)
            raise CommandError("The demo definitions did not load.") from None
        self.stdout.write(
            f"Demo definitions: {len(report.created)} created, {len(report.updated)} updated"
            + ("" if reset else " (existing ones left as they are; --reset restores them)")
            + "."
        )
        self._report_admin()

    def _report_admin(self) -> None:
        admin = demo_admin_ensure()
        reset = (
            "Lost it? Set a new one: .venv/bin/python manage.py set_admin_password "
            f"--username {admin.username}"
        )
        if admin.status == "blocked":
            self.stdout.write(
                self.style.WARNING(
                    f"A user '{admin.username}' exists but is not a superuser; create one with "
                    "'manage.py createsuperuser' to log in to the studio."
                )
            )
            return
        if admin.status == "created" and admin.generated_password:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Created the superuser '{admin.username}' with the password: "
                    f"{admin.generated_password}\n"
                    "It is shown only this once: note it now (you can change it in the studio). "
                    f"Set {ADMIN_PASSWORD_ENV} to choose it yourself."
                )
            )
        elif admin.status == "created":
            self.stdout.write(
                self.style.SUCCESS(
                    f"Created the superuser '{admin.username}' with the password from "
                    f"{ADMIN_PASSWORD_ENV}."
                )
            )
        elif admin.status == "password_set":
            self.stdout.write(
                self.style.SUCCESS(
                    f"Set the password of '{admin.username}' from {ADMIN_PASSWORD_ENV} (applied "
                    "on every run while it is set)."
                )
            )
        elif admin.status == "other_admin" and admin.password_given:
            self.stdout.write(
                self.style.WARNING(
                    f"{ADMIN_PASSWORD_ENV} is not applied: the studio's administrator is "
                    f"'{admin.username}', not 'admin'. {reset}"
                )
            )
        how = {
            "created": "",
            "password_set": f" with the password from {ADMIN_PASSWORD_ENV}",
            "exists": f" with the password from {ADMIN_PASSWORD_ENV} (applied on every run "
            "while it is set)"
            if admin.password_given
            else f" (its password was printed when it was created). {reset} or run again "
            f"with {ADMIN_PASSWORD_ENV} set",
            "other_admin": f" with your password. {reset}",
        }[admin.status]
        self.stdout.write(f"Log in to the studio at /admin/ as '{admin.username}'{how}.")
