"""``manage.py set_admin_password``: the way back in for whoever lost the studio's password."""

from __future__ import annotations

import getpass
import sys
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents_app.services.definitions.demo import ADMIN_USERNAME, admin_password_set


class Command(BaseCommand):
    help = (
        "Set the password of the studio's administrator (default 'admin'; created as a "
        "superuser if missing). Asks for it twice; piped in, reads the first line of stdin "
        "(never on the command line, where other users of the machine could read it)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default=ADMIN_USERNAME, help="Default: admin.")

    def handle(self, *args: Any, username: str, **options: Any) -> None:
        password = self._read_password()
        try:
            done = admin_password_set(username=username, password=password)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        what = "Created the superuser" if done.created else "Set the password of"
        self.stdout.write(self.style.SUCCESS(f"{what} '{done.username}'."))
        if not done.staff:
            self.stdout.write(
                self.style.WARNING(
                    f"'{done.username}' is not staff: they can use the chat, not the studio."
                )
            )
        self.stdout.write(f"Log in to the studio at /admin/ as '{done.username}'.")

    def _read_password(self) -> str:
        if not sys.stdin.isatty():
            password = sys.stdin.readline().rstrip("\r\n")
        else:
            password = getpass.getpass("New password: ")
            if getpass.getpass("Again: ") != password:
                raise CommandError("The two passwords differ; nothing was changed.")
        if not password:
            raise CommandError("An empty password: nothing was changed.")
        return password
