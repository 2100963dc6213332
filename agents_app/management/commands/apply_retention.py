from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents_app.services.operations.retention import retention_apply


class Command(BaseCommand):
    help = (
        "Apply the retention policy now (the studio's, over STUDIO_RETENTION_* settings): "
        "delete old threads, logs and finished effects, trim old log bodies. "
        "With --dry-run, only report what would go."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="Change nothing; report.")
        parser.add_argument(
            "--max-seconds",
            type=float,
            default=None,
            help="Stop after this long (default STUDIO_RETENTION_MAX_SECONDS).",
        )

    def handle(self, *args: Any, dry_run: bool, max_seconds: float | None, **options: Any) -> None:
        try:
            report = retention_apply(dry_run=dry_run, max_seconds=max_seconds)
        except ValueError as exc:
            raise CommandError(f"The retention policy cannot be applied: {exc}") from None
        p = report.policy
        self.stdout.write(
            f"Policy (days, 0 = forever): threads {p.thread_days}, logs {p.log_days}, "
            f"log bodies {p.log_body_days}, finished effects {p.effect_days}"
        )
        for line in report.lines():
            self.stdout.write(line)
