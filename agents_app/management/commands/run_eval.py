from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections

from agents_app.base.errors import DomainError
from agents_app.base.people_format import money_fine
from agents_app.bridge import async_commit
from agents_app.models import EvalRun, ThreadSession
from agents_app.orchestration.eval_runs import advance, run_start
from agents_app.services.evals import checks as evals
from agents_app.services.evals import files as eval_files
from studio.event_loop import new_loop


def _version(text: str) -> tuple[str, int]:
    key, _, number = text.partition("=")
    if not key or not number.isdigit():
        raise CommandError(f"--pin takes NAME=NUMBER (support-prompt=4), not {text!r}")
    return key, int(number)


async def _close_connections() -> None:
    """What running sessions on the command's loop opened: the engine's commit connection
    and the connections of the threads the ORM ran on."""
    await async_commit.close()
    await sync_to_async(connections.close_all)()


def _is_file_path(value: str) -> bool:
    """``--dataset evals/oracle.eval.json`` names a file; ``--dataset oracle-set`` a stored
    dataset (a dataset's name has no slash, and a name ending in .json would read as a file:
    the studio's names are words)."""
    return "/" in value or value.endswith((".json", ".jsonl"))


class Command(BaseCommand):
    help = (
        "Run an agent over an eval dataset and wait for the result; exits 1 when the pass "
        "rate is below --threshold (for CI pipelines; docs/observability.md)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument(
            "--dataset",
            metavar="NAME_OR_FILE",
            help="the name of a dataset stored in the studio, or a dataset file (a value "
            "ending in .json or .jsonl, or with a / in it, is read as a file: see --dataset-file)",
        )
        source.add_argument(
            "--dataset-file",
            type=Path,
            metavar="FILE",
            help="a dataset file (JSON, docs/observability.md): imported first, so a fresh "
            "database and a repository are enough",
        )
        parser.add_argument("--agent", required=True)
        parser.add_argument(
            "--pin",
            action="append",
            default=[],
            metavar="NAME=N",
            help="a definition version to run on, e.g. support-prompt=4 or "
            "prompts/support-prompt=4 (repeat; the rest: newest)",
        )
        parser.add_argument("--concurrency", type=int, default=4)
        parser.add_argument("--threshold", type=float, default=1.0, help="0 to 1 (default 1: all)")
        parser.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait")
        parser.add_argument("--label", default="")

    loop: asyncio.AbstractEventLoop | None = None

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            self._handle(**options)
        finally:
            if self.loop is not None:
                self.loop.run_until_complete(_close_connections())
                self.loop.close()
                self.loop = None

    def _handle(self, **options: Any) -> None:
        if not 0 <= options["threshold"] <= 1:
            raise CommandError("--threshold must be from 0 to 1")
        versions = dict(_version(v) for v in options["pin"])
        named = options["dataset"]
        if named and _is_file_path(named):
            dataset = self._import(Path(named))
        else:
            dataset = named or self._import(options["dataset_file"])
        try:
            run = run_start(
                dataset=dataset,
                agent=options["agent"],
                user=None,
                versions=versions,
                concurrency=options["concurrency"],
                label=options["label"] or "manage.py run_eval",
            )
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"Eval run {run.pk}: {run.agent} over {run.dataset.name}")
        deadline = time.monotonic() + options["timeout"]
        while True:
            advance(str(run.pk))
            run.refresh_from_db()
            if run.status != EvalRun.Status.RUNNING:
                break
            if time.monotonic() > deadline:
                raise CommandError(
                    f"Timed out after {options['timeout']:.0f} s; run {run.pk} goes on"
                )
            if settings.STUDIO_EXECUTOR == "none":
                self._run_sessions_here(run)
            else:
                time.sleep(0.5)  # the workers run the sessions; look again shortly
        self._report(run, options["threshold"])

    def _import(self, file: Path) -> str:
        """The dataset file, read into the database; the dataset's name."""
        try:
            dataset, counts = eval_files.import_text(file.read_bytes())
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc.strerror}") from None
        except DomainError as exc:
            raise CommandError(f"{file}: {exc.message}") from None
        self.stdout.write(f"Dataset {dataset.name} from {file}: {eval_files.counts_text(counts)}")
        return dataset.name

    def _run_sessions_here(self, run: EvalRun) -> None:
        """No executor configured: run the run's queued sessions in this process, on one
        loop of the command's own (one engine connection for the whole command)."""
        from agents_app.orchestration.runner import run_session_job

        threads = [
            t
            for pair in run.results.values_list("thread_id", "judge_thread_id")
            for t in pair
            if t is not None
        ]
        queued = ThreadSession.objects.filter(
            thread_id__in=threads, status=ThreadSession.Status.QUEUED
        )
        if self.loop is None:
            self.loop = new_loop()
        for session_id in queued.values_list("pk", flat=True):
            self.loop.run_until_complete(run_session_job(str(session_id)))

    def _report(self, run: EvalRun, threshold: float) -> None:
        for result in run.results.select_related("case"):
            mark = {"passed": "PASS", "failed": "FAIL"}.get(result.status, result.status.upper())
            why = "; ".join(c["detail"] for c in result.checks if not c.get("passed"))
            self.stdout.write(f"{mark:<9} {result.case.name}" + (f"  ({why})" if why else ""))
        summary = evals.totals(run)
        done = summary["done"] or 0
        rate = summary["pass_rate"] or 0.0
        line = (
            f"{summary['passed']}/{summary['cases']} passed ({rate:.0%}), cost {money_fine(summary['cost'])}"
            f", threshold {threshold:.0%}"
        )
        if run.status == EvalRun.Status.CANCELLED or done < summary["cases"] or rate < threshold:
            raise CommandError(f"Eval failed: {line}")
        self.stdout.write(self.style.SUCCESS(f"Eval passed: {line}"))
