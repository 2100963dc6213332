"""The embedded mode's beat for automation: without Celery there is no beat to send
``schedules_tick``, ``webhooks_tick`` and ``purge_expired``, so due schedule runs, webhook
retries and the expired-row purge run here, on the in-process executor's loop
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
import time
from concurrent.futures import Future

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection

from agents_app.orchestration import schedule_runner, webhook_runner
from agents_app.services.housekeeping import expired_purge
from agents_app.services.sessions import owner_id

logger = logging.getLogger("agents_app.schedules")


def _webhook_sweep() -> int:
    try:
        return webhook_runner.sweep()
    finally:
        connection.close()  # a pool thread's own connection


async def run_forever() -> None:
    """Sweep schedules every ``STUDIO_SCHEDULE_SWEEP_MS`` and webhook retries every
    ``STUDIO_WEBHOOK_SWEEP_SECONDS`` until cancelled; a failed sweep is logged and retried."""
    me = owner_id()
    # Webhooks on a task of their own: a sweep waits on receivers (each attempt up to
    # STUDIO_WEBHOOK_TIMEOUT_SECONDS, a batch of them in turn), and due schedules must not.
    webhooks = asyncio.ensure_future(_sweep_webhooks_forever())
    purge_due = 0.0
    try:
        while True:
            await asyncio.sleep(settings.STUDIO_SCHEDULE_SWEEP_MS / 1000)
            try:
                await sync_to_async(schedule_runner.sweep_once)(me)
            except Exception:
                logger.warning("embedded schedule sweep failed", exc_info=True)
            if time.monotonic() >= purge_due:
                purge_due = time.monotonic() + settings.STUDIO_PURGE_SECONDS
                try:
                    await sync_to_async(expired_purge)()
                except Exception:
                    logger.warning("embedded purge failed", exc_info=True)
    finally:
        webhooks.cancel()


async def _sweep_webhooks_forever() -> None:
    while True:
        try:
            # Off the sync thread: a slow receiver must not hold up the server's ORM calls.
            await sync_to_async(_webhook_sweep, thread_sensitive=False)()
        except Exception:
            logger.warning("embedded webhook sweep failed", exc_info=True)
        await asyncio.sleep(settings.STUDIO_WEBHOOK_SWEEP_SECONDS)


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
