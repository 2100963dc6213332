from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents_app.orchestration.knowledge_ingest import enqueue
from agents_app.services.definitions.files import DefinitionFilesInvalid, definitions_import


class Command(BaseCommand):
    help = (
        "Import agents, prompts and models from DIR/{models,prompts,agents}/<name>.json "
        "(and knowledge bases from DIR/knowledge/<name>.json, their documents from "
        "DIR/knowledge/<name>/, queued for indexing). "
        "All or nothing: on any error nothing is saved and every error is listed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", type=Path, metavar="DIR")

    def handle(self, *args: Any, directory: Path, **options: Any) -> None:
        try:
            report = definitions_import(directory=directory)
        except DefinitionFilesInvalid as exc:
            for line in exc.errors:
                self.stderr.write(line)
            count = len(exc.errors)
            raise CommandError(
                f"Nothing was imported: {count} error{'s' if count != 1 else ''}."
            ) from None
        for document_id in report.queued_documents:  # committed: sent now
            enqueue(document_id)
        for note in report.notes:
            self.stdout.write(self.style.WARNING(note))
        if options["verbosity"] >= 2:
            for label in report.created:
                self.stdout.write(f"created {label}")
            for label in report.updated:
                self.stdout.write(f"updated {label}")
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {len(report.created) + len(report.updated)} definitions from "
                f"{directory}: {len(report.created)} created, {len(report.updated)} updated."
            )
        )
