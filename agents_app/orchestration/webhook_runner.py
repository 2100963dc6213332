"""Sending webhook deliveries (the orchestration; ``services.automation.webhooks`` decides).

A delivery is sent by a Celery task enqueued after its row commits
(``agents_app.webhook_deliver``), so a session never waits on a receiver; retries are
due rows that the beat's ``webhooks_tick`` sends (no countdown on the broker, as for
effects). Without Celery (embedded) the first attempt runs on a daemon thread.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Coroutine
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from agents_app.base.task_names import WEBHOOK_DELIVER
from agents_app.models import Thread
from agents_app.services.automation import webhooks
from runtime.core import egress

logger = logging.getLogger("agents_app.webhooks")


# Only the status code matters: a receiver's body is read up to this much, then dropped.
RESPONSE_BYTES = 4096


def deliver(delivery_id: str) -> str | None:
    """One attempt of a delivery, if it is due and nobody else sends it; its new status.

    The attempt (connect, send, the answer's headers and up to ``RESPONSE_BYTES`` of its
    body) has ``STUDIO_WEBHOOK_TIMEOUT_SECONDS`` in all: httpx's timeouts are per read, so
    without one deadline a receiver dripping a byte at a time could hold an attempt, and
    the sweep behind it, as long as it liked."""
    row = webhooks.claim(delivery_id)
    if row is None:
        return None
    limit = settings.STUDIO_WEBHOOK_TIMEOUT_SECONDS
    try:
        body, headers = webhooks.request_of(row)
        code = _run(_post(row.subscription.url, body, headers, limit))
        error = f"HTTP {code}" if code >= 300 else ""
    except TimeoutError:
        code, error = None, f"no complete answer within {limit:g} s"
    except Exception as exc:  # a refused connection, a missing secret …
        code, error = None, f"{type(exc).__name__}: {exc}"
    return webhooks.attempt_done(row, code=code, error=error).status


async def _post(url: str, body: bytes, headers: dict[str, str], limit: float) -> int:
    # Cancelling the request at the deadline closes its connection (the client's exit too).
    async with asyncio.timeout(limit):
        # The egress policy again at send time: the name may resolve elsewhere by now.
        async with egress.client(timeout=None) as client:  # the deadline bounds it all
            request = client.build_request("POST", url, content=body, headers=headers)
            response = await client.send(request, stream=True)
            try:
                read = 0
                async for chunk in response.aiter_raw():  # raw: nothing to decompress
                    read += len(chunk)
                    if read >= RESPONSE_BYTES:
                        break
            finally:
                await response.aclose()
            return response.status_code


def _run(coroutine: Coroutine[Any, Any, int]) -> int:
    """``coroutine`` on a loop of its own (senders are sync: tasks, threads, the sweep)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            # Not asyncio.run: it waits for the default executor, where a name lookup may
            # still run past the deadline (it holds no connection; it ends on its own).
            loop.close()


def enqueue(delivery_ids: list[str]) -> None:
    """Send each delivery after the current transaction commits (never in the caller)."""
    for delivery_id in delivery_ids:
        transaction.on_commit(functools.partial(_start, delivery_id))


def _start(delivery_id: str) -> None:
    try:
        if settings.STUDIO_EXECUTOR == "celery":
            current_app.send_task(WEBHOOK_DELIVER, (delivery_id,))
        else:
            threading.Thread(
                target=_deliver_in_thread, args=(delivery_id,), name="webhook-delivery", daemon=True
            ).start()
    except Exception as exc:  # the broker is down: the sweep sends it
        logger.warning("webhook %s not enqueued (%s); the sweep sends it", delivery_id, exc)


def _deliver_in_thread(delivery_id: str) -> None:
    try:
        deliver(delivery_id)
    finally:
        connection.close()  # this thread's own connection


def sweep() -> int:
    """Send the due retries (and deliveries whose task was lost); how many were attempted."""
    due = webhooks.due_deliveries(timezone.now())
    for delivery_id in due:
        deliver(delivery_id)
    return len(due)


def session_ended(
    thread_id: str, session_id: str, status: str, error: str, *, known_active: bool = False
) -> None:
    """Record and enqueue the session's events; a failure here never touches the session.

    ``known_active``: the caller read already that a subscription is active (the release's
    own read, ``sessions.Released.webhooks``), so it is not asked again."""
    try:
        if not known_active and not webhooks.any_active():
            return  # the common case: one indexed query, no read of the thread
        thread = Thread.objects.select_related("agent").filter(pk=thread_id).first()
        if thread is None:
            return
        enqueue(
            webhooks.session_events(
                thread_id=thread_id,
                session_id=session_id,
                agent_id=thread.agent_id,
                agent=thread.agent.name,
                status=str(status),
                error=error,
            )
        )
    except Exception:
        logger.exception("webhook events of session %s not recorded", session_id)


def schedule_run_failed(run: Any) -> None:
    try:
        schedule = run.schedule
        payload = {
            "agent": schedule.agent.name,
            "scheduleId": str(schedule.pk),
            "runId": str(run.pk),
            "dueAt": run.due_at.isoformat(),
            "error": run.error,
        }
        enqueue(
            webhooks.record_event(schedule.agent_id, "schedule.run_failed", str(run.pk), payload)
        )
    except Exception:
        logger.exception("webhook event of schedule run %s not recorded", run.pk)
