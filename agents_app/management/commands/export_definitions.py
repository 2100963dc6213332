from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents_app.services.definition_files import DefinitionFilesInvalid, definitions_export


class Command(BaseCommand):
    help = (
        "Export every agent, prompt and model to DIR/{models,prompts,agents}/<name>.json. "
        "Only those files are written; secret env values are written as null."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", type=Path, metavar="DIR")
        parser.add_argument(
            "--history",
            action="store_true",
            help="Also write every saved version to DIR/.history/<kind>/<name>.json.",
        )

    def handle(self, *args: Any, directory: Path, **options: Any) -> None:
        try:
            report = definitions_export(directory=directory, history=options["history"])
        except DefinitionFilesInvalid as exc:
            for line in exc.errors:
                self.stderr.write(line)
            raise CommandError("The export did not complete.") from None
        if options["verbosity"] >= 2:
            for verb, labels in (("created", report.created), ("updated", report.updated)):
                for label in labels:
                    self.stdout.write(f"{verb} {label}")
        for label in report.stale:
            self.stdout.write(
                self.style.WARNING(f"{label}: no such definition here; the file was left as is.")
            )
        total = len(report.created) + len(report.updated) + len(report.unchanged)
        self.stdout.write(
            self.style.SUCCESS(
                f"Exported {total} definitions to {directory}: {len(report.created)} created, "
                f"{len(report.updated)} updated, {len(report.unchanged)} unchanged."
            )
        )
