"""Running recurring schedules (the orchestration; decisions are in ``services.automation.schedules``).

A sweep (``schedules_tick`` from beat, every ``STUDIO_SCHEDULE_SWEEP_MS``) claims due
schedules for about one interval, polling every ``STUDIO_SCHEDULE_POLL_MS``, and starts
each claimed run: the thread (new, the standing one, or the one an earlier claimer of the
same run created before it died), then the message posted and the run marked started in
one transaction. Runs whose claimer died before that are claimed again after
``STUDIO_SCHEDULE_STALE_SECONDS``. See docs/automation.md, "Schedules".
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from agents_app.base.errors import DomainError
from agents_app.models import Schedule, ScheduleRun
from agents_app.orchestration import webhook_runner
from agents_app.orchestration.thread_creation import thread_create
from agents_app.services.automation import owner_rights
from agents_app.services.automation import schedules as schedule_service
from agents_app.services.automation.owner_rights import OwnerRefused
from agents_app.services.sessions.lifecycle import owner_id

logger = logging.getLogger("agents_app.schedules")


def run_start(run: ScheduleRun, me: str) -> ScheduleRun:
    """Start one claimed run; a refusal (budget, limits, the agent's mid-run policy) fails it."""
    run = ScheduleRun.objects.select_related("schedule__agent", "schedule__owner").get(pk=run.pk)
    schedule: Schedule = run.schedule
    try:
        held = schedule_service.held_refusal(schedule)
        if held:
            raise OwnerRefused(held)
        thread = schedule_service.thread_for_run(run)
        # The owner as they are now: active, offered the agent, allowed in the standing
        # thread, within their usage limits (their budgets meet the post itself).
        owner_rights.act_as_owner(
            "The schedule",
            schedule.owner,
            schedule.agent,
            counts=("message_post",) if thread else ("thread_create", "message_post"),
            thread_owner_id=thread.owner_id if thread else None,
            thread_action="change" if thread else None,
        )
        if thread is None:
            thread = thread_create(
                user=schedule.owner,
                agent_name=schedule.agent.name,
                tags=[schedule_service.run_tag(run)],
                env=dict(schedule.env) or None,
            )
        schedule_service.run_start(run, me, thread)
    except DomainError as exc:
        schedule_service.run_failed(run, me, exc.message)
    except Exception as exc:  # a failing run must not stop the sweep's other runs
        logger.exception("schedule run %s failed", run.pk)
        schedule_service.run_failed(run, me, f"{type(exc).__name__}: {exc}")
    run.refresh_from_db()
    if run.status == ScheduleRun.Status.FAILED:
        webhook_runner.schedule_run_failed(run)
    return run


def sweep_once(me: str) -> int:
    """Claim what is due now, recover stale claims, start them; how many runs started."""
    now = timezone.now()
    runs: list[ScheduleRun] = []
    for schedule_id, due in schedule_service.due_schedules(now, settings.STUDIO_SCHEDULE_BATCH):
        runs += schedule_service.schedule_claim(schedule_id, due, now, me)
    runs += schedule_service.stale_runs_claim(me, now)
    for run in runs:
        run_start(run, me)
    return len(runs)


def drain_for(seconds: float) -> int:
    """Sweep every ``STUDIO_SCHEDULE_POLL_MS`` for ``seconds`` (one beat interval)."""
    me = owner_id()
    deadline = time.monotonic() + seconds
    started = 0
    while True:
        started += sweep_once(me)
        if time.monotonic() + settings.STUDIO_SCHEDULE_POLL_MS / 1000 > deadline:
            break
        time.sleep(settings.STUDIO_SCHEDULE_POLL_MS / 1000)
    close_old_connections()
    return started
