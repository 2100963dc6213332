from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents_app.services.definitions.files import DefinitionFilesInvalid, definitions_export
from runtime.core.spec import SPEC_0_2, SPEC_VERSIONS


class Command(BaseCommand):
    help = (
        "Export every agent, prompt, model and knowledge base to "
        "DIR/{models,prompts,agents,knowledge}/<name>.json (--documents: knowledge documents "
        "too), "
        "written for spec 0.2.0 (--spec 0.1.0 for the older shape). Only those files are "
        "written; secret env values are written as null."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", type=Path, metavar="DIR")
        parser.add_argument(
            "--history",
            action="store_true",
            help="Also write every saved version to DIR/.history/<kind>/<name>.json.",
        )
        parser.add_argument(
            "--documents",
            action="store_true",
            help="Also write each knowledge base's documents to DIR/knowledge/<name>/.",
        )
        parser.add_argument(
            "--spec",
            choices=SPEC_VERSIONS,
            default=SPEC_0_2,
            help="The spec generation to write (default 0.2.0). A definition the chosen one "
            "cannot express is refused with the reason, and nothing is written.",
        )

    def handle(self, *args: Any, directory: Path, **options: Any) -> None:
        try:
            report = definitions_export(
                directory=directory,
                history=options["history"],
                spec=options["spec"],
                documents=options["documents"],
            )
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
        if report.documents:
            self.stdout.write(f"Wrote {len(report.documents)} knowledge documents.")
        total = len(report.created) + len(report.updated) + len(report.unchanged)
        self.stdout.write(
            self.style.SUCCESS(
                f"Exported {total} definitions (spec {options['spec']}) to {directory}: "
                f"{len(report.created)} created, "
                f"{len(report.updated)} updated, {len(report.unchanged)} unchanged."
            )
        )
