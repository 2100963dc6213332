from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents_app.services.access.api_keys import ApiKeyNameInvalid, api_key_create


class Command(BaseCommand):
    help = "Create an API key for USERNAME and print it (it is shown only this once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", metavar="USERNAME")
        parser.add_argument("--name", default="Command line", help="A label for the key.")

    def handle(self, *args: Any, username: str, name: str, **options: Any) -> None:
        User = get_user_model()
        try:
            user = User.objects.get(**{User.USERNAME_FIELD: username})
        except User.DoesNotExist:
            raise CommandError(f"There is no user named '{username}'.") from None
        try:
            key, raw = api_key_create(user=user, name=name)
        except ApiKeyNameInvalid as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(
            f"API key '{key.name}' for {username}. Store it now: it cannot be shown again.",
            style_func=self.style.SUCCESS,
        )
        # The key alone on stdout, so scripts can capture it: KEY=$(manage.py create_api_key …)
        self.stdout.write(raw)
