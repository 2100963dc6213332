"""Periodic work is declared once (issue #53, ``agents_app/base/periodic_jobs.py``): beat's
schedule is the table, every job has a Celery task and exactly one home in embedded mode,
and the jobs the embedded mode skipped before (tool-wait expiry, retention) run there."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import pytest
from django.conf import settings

from agents_app.base.periodic_jobs import JOBS
from agents_app.models import Message, Thread
from agents_app.orchestration import embedded_automation, executor, periodic
from runtime.core import waits
from tests.agents_app.services.retention_support import make_agent, make_threads

HOMES = {"automation": periodic.AUTOMATION, "sessions": periodic.SESSIONS}


def test_beats_schedule_is_the_table() -> None:
    assert set(settings.CELERY_BEAT_SCHEDULE) == {job.beat_name for job in JOBS}
    for job in JOBS:
        entry = settings.CELERY_BEAT_SCHEDULE[job.beat_name]
        assert entry["task"] == job.task and entry["schedule"] == job.seconds(settings)


def test_every_job_has_a_celery_task_and_exactly_one_embedded_home() -> None:
    from studio.celery import app

    app.loader.import_default_modules()
    declared = {job.task for job in JOBS}
    for job in JOBS:
        assert job.task in app.tasks, f"{job.task}: no Celery task of that name"
        homes = [h for h, jobs in HOMES.items() if job.task in jobs]
        homes += ["effects"] if job.task in periodic.EFFECTS else []
        assert homes == [job.embedded], f"{job.task}: embedded in {homes}, declared {job.embedded}"
    # And nothing runs embedded that the table does not declare (the two cannot diverge).
    runners = {*periodic.AUTOMATION, *periodic.SESSIONS, *periodic.EFFECTS}
    assert runners == declared


@pytest.mark.django_db(transaction=True)
def test_the_sessions_sweep_expires_tool_waits_in_both_modes(settings: Any) -> None:
    """The Celery task and the in-process executor's sweep run ``sessions_tick``, which gives
    a call whose wait ran out its "timed out" result (embedded mode never did)."""
    agent = make_agent()
    [thread] = make_threads(agent, 1, idle_days=0)
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    wait = waits.wait_object("approval", call, 1, waits.now_ms() - 10_000)
    Message.objects.create(
        thread=thread,
        role="assistant",
        content="",
        tool_calls=[call],
        created_at=1,
    )
    row = Message.objects.create(
        thread=thread,
        role="tool",
        tool_call_id="call_1",
        status="pending",
        metadata={waits.WAIT_KEY: wait},
        created_at=2,
    )
    assert periodic.SESSIONS["agents_app.sweep_sessions"] is periodic.sessions_tick
    settings.STUDIO_SESSION_SWEEP_SECONDS = 0.05

    def expired() -> bool:
        row.refresh_from_db()
        return waits.decision_of(row) is not None

    _run_until(executor._sweep_forever(executor.inprocess), expired)
    assert waits.decision_of(row) == waits.expired(), "the in-process sweep left the wait"


@pytest.mark.django_db(transaction=True)
def test_the_embedded_loop_applies_retention(settings: Any) -> None:
    """Retention ran only on beat; the embedded loop now runs it on its interval."""
    settings.STUDIO_RETENTION_THREAD_DAYS = 30
    settings.STUDIO_RETENTION_INTERVAL_SECONDS = 0.05
    agent = make_agent()
    old = make_threads(agent, 2, idle_days=90)
    recent = make_threads(agent, 1, idle_days=1)
    gone = lambda: not Thread.objects.filter(pk__in=[t.pk for t in old]).exists()  # noqa: E731
    _run_until(embedded_automation.run_forever(), gone)
    assert not Thread.objects.filter(pk__in=[t.pk for t in old]).exists()
    assert Thread.objects.filter(pk=recent[0].pk).exists()


def _run_until(sweeps: Any, done: Any, bound: float = 10.0) -> None:
    """Run ``sweeps`` on a loop of its own until ``done()`` holds (or ``bound`` seconds, a
    bound on waiting, not a timing requirement), then cancel it and let it finish."""
    stop = threading.Event()

    async def run() -> None:
        task = asyncio.ensure_future(sweeps)
        await asyncio.to_thread(stop.wait, bound + 5)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    runner = threading.Thread(target=lambda: asyncio.run(run()), name="periodic-test")
    runner.start()
    try:
        for _ in range(int(bound / 0.05)):
            if done():
                break
            threading.Event().wait(0.05)
    finally:
        stop.set()
        runner.join(bound)
