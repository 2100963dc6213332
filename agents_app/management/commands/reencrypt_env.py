from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from agents_app.services.env.keys import MissingKeys, env_reencrypt


class Command(BaseCommand):
    help = (
        "Re-encrypt every env value with the newest key of STUDIO_ENCRYPTION_KEYS (the first). "
        "Run after prepending a new key; afterwards the old key can be removed. Idempotent."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = env_reencrypt()
        except MissingKeys as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"{report.reencrypted} env value(s) re-encrypted with key '{report.key_id}', "
            f"{report.already_current} already current, {report.total} in total.",
            style_func=self.style.SUCCESS,
        )
