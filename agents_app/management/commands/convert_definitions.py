from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents_app.services.definitions.convert import definitions_convert
from agents_app.services.definitions.files import DefinitionFilesInvalid
from runtime.core.spec import SPEC_0_2, SPEC_VERSIONS


class Command(BaseCommand):
    help = (
        "Convert a folder of definitions (DIR/{models,prompts,agents}/<name>.json) to spec "
        "0.2.0 and print what changes in each file. A dry run unless --write is given."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", type=Path, metavar="DIR")
        parser.add_argument(
            "--write", action="store_true", help="Rewrite the files (default: only show)."
        )
        parser.add_argument(
            "--to",
            choices=SPEC_VERSIONS,
            default=SPEC_0_2,
            help="The spec generation to convert to (default 0.2.0).",
        )

    def handle(self, *args: Any, directory: Path, **options: Any) -> None:
        target, write = options["to"], options["write"]
        try:
            report = definitions_convert(directory=directory, target=target, write=write)
        except DefinitionFilesInvalid as exc:
            for line in exc.errors:
                self.stderr.write(line)
            count = len(exc.errors)
            raise CommandError(
                f"Nothing was converted: {count} file{'s' if count != 1 else ''} cannot be."
            ) from None
        for change in report.changed:
            self.stdout.write(f"{change.label}:")
            for line in change.changes:
                self.stdout.write(f"  - {line}")
        for label in report.unchanged:
            self.stdout.write(f"{label}: already {target}, unchanged.")
        for line in report.skipped:
            self.stdout.write(self.style.WARNING(line))
        count = len(report.changed)
        files = f"{count} file{'s' if count != 1 else ''}"
        if write:
            self.stdout.write(self.style.SUCCESS(f"Converted {files} to spec {target}."))
        else:
            self.stdout.write(
                f"Dry run: {files} would change. Run again with --write to rewrite them."
            )
