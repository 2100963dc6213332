"""The embedded mode's beat for automation: without Celery there is no beat, so the jobs
``agents_app/base/periodic_jobs.py`` homes here (due schedule runs, webhook retries, the
expired-row purge, retention) run on the in-process executor's loop
(docs/automation.md, "Embedded mode").

Started beside the effect sweeper (``executor.LoopCapture``) only when
``STUDIO_EXECUTOR == "inprocess"``; both sweeps are the same functions the Celery tasks
run, so claims stay exactly-once however many processes sweep.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection

from agents_app.base.periodic_jobs import JOBS, PeriodicJob
from agents_app.orchestration.periodic import AUTOMATION

logger = logging.getLogger("agents_app.schedules")


async def run_forever() -> None:
    """Run every ``automation`` job of ``periodic_jobs.JOBS`` on its interval until
    cancelled; a failed run is logged and the job runs again at its next interval."""
    jobs = [asyncio.ensure_future(_every(job)) for job in JOBS if job.embedded == "automation"]
    try:
        await asyncio.gather(*jobs)
    finally:
        for job in jobs:
            job.cancel()


# Jobs that wait on others (receivers) or run for minutes (retention) run off the server's
# sync thread, each on a task of its own: due schedules and the server's ORM calls must not
# wait behind them. The others stay on it, as the server's own writes are (SQLite).
OFF_THREAD = frozenset({"agents_app.webhooks_tick", "agents_app.apply_retention"})


def _off_thread(work: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        try:
            return work()
        finally:
            connection.close()  # a pool thread's own connection

    return run


async def _every(job: PeriodicJob) -> None:
    work = AUTOMATION[job.task]
    if job.task in OFF_THREAD:
        run = sync_to_async(_off_thread(work), thread_sensitive=False)
    else:
        run = sync_to_async(work)
    while True:
        await asyncio.sleep(job.seconds(settings))
        try:
            await run()
        except Exception:
            logger.warning("embedded %s failed", job.beat_name, exc_info=True)


_running: Future[None] | None = None
_lock = threading.Lock()


def start(loop: asyncio.AbstractEventLoop) -> None:
    """Start the sweeps on ``loop`` once per process (idempotent; in-process executor only)."""
    global _running
    if settings.STUDIO_EXECUTOR != "inprocess":
        return
    with _lock:
        if _running is None or _running.done():
            _running = asyncio.run_coroutine_threadsafe(run_forever(), loop)


def stop(timeout: float = 10) -> None:
    global _running
    with _lock:
        running, _running = _running, None
    if running is not None:
        running.cancel()
        with contextlib.suppress(BaseException):  # cancelled, as asked
            running.result(timeout)
