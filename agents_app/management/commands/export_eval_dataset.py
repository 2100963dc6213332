from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents_app.models import EvalDataset
from agents_app.services.evals import files as eval_files


class Command(BaseCommand):
    help = (
        'Write an eval dataset as a JSON (or JSON Lines) file (docs/observability.md, "Dataset '
        'files"): to --out, or to the standard output. import_eval_dataset and run_eval '
        "--dataset-file read either back."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the dataset's name")
        parser.add_argument("--out", type=Path, help="the file to write (default: stdout)")
        parser.add_argument(
            "--format",
            choices=("json", "jsonl"),
            default="json",
            help="json (default): one object; jsonl: the head, then one case a line",
        )

    def handle(
        self, *args: Any, name: str, out: Path | None = None, format: str = "json", **options: Any
    ) -> None:
        dataset = EvalDataset.objects.filter(name=name).first()
        if dataset is None:
            known = ", ".join(EvalDataset.objects.order_by("name").values_list("name", flat=True))
            raise CommandError(f"No dataset called {name} (there are: {known or 'none'})")
        lines = format == "jsonl"
        text = eval_files.dataset_lines(dataset) if lines else eval_files.dataset_text(dataset)
        if out is None:
            self.stdout.write(text, ending="")
            return
        out.write_text(text, encoding="utf-8")
        count = dataset.cases.count()
        self.stderr.write(f"Wrote {name} ({count} case{'s' if count != 1 else ''}) to {out}")
