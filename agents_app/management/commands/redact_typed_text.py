from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from agents_app.services.env.redaction_backfill import redact_typed_text


class Command(BaseCommand):
    help = (
        "Redact secrets from text stored before typed text was redacted on write: thread "
        "previews, queued and stored message contents, KV values. Idempotent."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        report = redact_typed_text()
        changed = ", ".join(f"{n} {what}" for what, n in report.changed.items())
        self.stdout.write(
            f"{report.threads} thread(s) checked; redacted: {changed}.",
            style_func=self.style.SUCCESS,
        )
