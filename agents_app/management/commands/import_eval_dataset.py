from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents_app.base.errors import DomainError
from agents_app.services.evals import files as eval_files


class Command(BaseCommand):
    help = (
        "Read an eval dataset file (JSON, as export_eval_dataset writes it) into the database: "
        "the dataset it names is created, or made to hold exactly the file's cases (matched "
        "by name; the others are deleted)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)

    def handle(self, *args: Any, file: Path, **options: Any) -> None:
        try:
            raw = file.read_bytes()
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc.strerror}") from None
        try:
            dataset, counts = eval_files.import_text(raw)
        except DomainError as exc:
            raise CommandError(f"{file}: {exc.message}") from None
        self.stdout.write(f"Dataset {dataset.name}: {eval_files.counts_text(counts)}.")
