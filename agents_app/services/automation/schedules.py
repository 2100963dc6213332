"""Recurring schedules: validation, due times, claims and run records (docs/automation.md).

The database schedules, Celery only executes (as for effects, docs/effects.md): a
schedule's ``next_run_at`` is claimed by one conditional UPDATE
(``… SET next_run_at = :next WHERE id = :id AND next_run_at = :due AND NOT paused``)
that also inserts the run rows, in one transaction. Two sweepers that read the same
due time race on that UPDATE; PostgreSQL re-checks the condition after the first
commits, so the second updates nothing and claims nothing. The unique constraint
``schedule_run_once`` (schedule, due time) is the backstop.
"""

from __future__ import annotations

import base64
import binascii
import itertools
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents_app.base.errors import Forbidden, Invalid, NotFound
from agents_app.models import Agent, Schedule, ScheduleRun, Thread
from agents_app.selectors import is_offered
from agents_app.services.threads import messages as message_service

# A cron expression that never fires again (or a year of seconds) is not a schedule.
_MAX_SCAN = 100_000
# The longest interval: a year (a larger one overflowed the date arithmetic into a 500).
MAX_INTERVAL_SECONDS = 366 * 24 * 3600
# How many of a cron expression's next times are compared for the shortest gap: enough to
# meet every gap a day's pattern repeats (minutes and seconds fields repeat within it).
_GAP_SAMPLE = 200
# A schedule's files live in its row and are copied into each run's thread.
ATTACHMENTS_MAX = 10
ATTACHMENT_BYTES_MAX = 5 * 2**20


@dataclass(frozen=True)
class ScheduleSpec:
    cron: str
    timezone: str
    interval_seconds: int | None


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise Invalid(f"timezone: unknown time zone {name!r} (use an IANA name)") from None


def validate_spec(spec: ScheduleSpec) -> None:
    """Exactly one of a cron expression or an interval; a known zone; a parseable expression."""
    if bool(spec.cron.strip()) == (spec.interval_seconds is not None):
        raise Invalid("Give either cron (with timezone) or intervalSeconds, not both or none")
    zone = _zone(spec.timezone)
    shortest = settings.STUDIO_SCHEDULE_MIN_INTERVAL_SECONDS
    if spec.interval_seconds is not None:
        if not shortest <= spec.interval_seconds <= MAX_INTERVAL_SECONDS:
            raise Invalid(
                f"intervalSeconds must be from {shortest} ({_duration(shortest)}) "
                f"to {MAX_INTERVAL_SECONDS} (a year)"
            )
        return
    try:
        times = CronSim(spec.cron, datetime.now(zone))
        previous = next(times)
    except (CronSimError, StopIteration) as exc:
        raise Invalid(f"cron: {exc or 'never fires'}") from None
    for when in itertools.islice(times, _GAP_SAMPLE):
        if (when - previous).total_seconds() < shortest:
            raise Invalid(
                f"cron: runs {_duration(int((when - previous).total_seconds()))} apart; "
                f"a schedule may run at most every {_duration(shortest)}"
            )
        previous = when


def _duration(seconds: int) -> str:
    if seconds % 3600 == 0 and seconds >= 3600:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0 and seconds >= 60:
        return f"{seconds // 60} min"
    return f"{seconds} s"


def times_after(spec: ScheduleSpec, start: datetime) -> Iterator[datetime]:
    """Due times strictly after ``start`` (aware), in UTC. Cron times follow cronsim's DST
    rules: a time skipped by a spring-forward gap runs once at the first valid moment; a
    time repeated by a fall-back runs once, at its first occurrence."""
    if spec.interval_seconds is not None:
        step = timedelta(seconds=spec.interval_seconds)
        when = start
        while True:
            when += step
            yield when
    zone = _zone(spec.timezone)
    for when in CronSim(spec.cron, start.astimezone(zone)):
        yield when.astimezone(ZoneInfo("UTC"))


def next_times(spec: ScheduleSpec, count: int = 5, after: datetime | None = None) -> list[datetime]:
    """The next ``count`` due times (the studio shows five before saving)."""
    validate_spec(spec)
    found = []
    for when in times_after(spec, after or timezone.now()):
        found.append(when)
        if len(found) == count:
            break
    return found


def spec_of(row: Schedule) -> ScheduleSpec:
    return ScheduleSpec(row.cron, row.timezone, row.interval_seconds)


def _first_after(spec: ScheduleSpec, start: datetime, now: datetime) -> datetime:
    """The first due time after ``now``, counted from ``start`` (interval schedules keep
    their phase)."""
    if spec.interval_seconds is not None and now > start:
        step = spec.interval_seconds
        periods = int((now - start).total_seconds() // step) + 1
        return start + timedelta(seconds=periods * step)
    return next(times_after(spec, max(start, now) if spec.interval_seconds is None else start))


# --- writes --------------------------------------------------------------------------------


def schedule_create(
    *,
    owner: Any,
    agent_name: str,
    message: str,
    cron: str = "",
    tz: str = "UTC",
    interval_seconds: int | None = None,
    env: dict[str, str] | None = None,
    target: str = Schedule.Target.NEW_THREAD,
    catch_up: int = 0,
    name: str = "",
    paused: bool = False,
    attachments: list[dict[str, Any]] | None = None,
) -> Schedule:
    agent = Agent.objects.filter(name=agent_name).first()
    if agent is None or not is_offered(owner, agent.pk):
        # As POST /api/threads: a draft's or another group's agent is not confirmed to exist.
        raise NotFound(f"Agent not found: {agent_name}")
    if not message.strip():
        raise Invalid("message: required")
    if target not in Schedule.Target.values:
        raise Invalid("target must be new_thread or standing_thread")
    if catch_up < 0:
        raise Invalid("catchUp must be 0 or more")
    if env and not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise Invalid("env: names and values must be strings")
    files = attachments_checked(attachments or [])
    spec = ScheduleSpec(cron.strip(), tz or "UTC", interval_seconds)
    validate_spec(spec)
    now = timezone.now()
    row = Schedule(
        attachments=files,
        owner=owner,
        agent=agent,
        name=name,
        cron=spec.cron,
        timezone=spec.timezone,
        interval_seconds=interval_seconds,
        message=message,
        target=target,
        catch_up=catch_up,
        paused=paused,
        next_run_at=_first_after(spec, now, now),
    )
    row.env = env or {}
    row.save(force_insert=True)
    return row


def attachments_checked(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The files a schedule's runs attach, as stored: ``{name, mimeType, data}`` with base64
    data, at most ``ATTACHMENTS_MAX`` files and ``ATTACHMENT_BYTES_MAX`` bytes in all (the
    row carries them); refused with the item named otherwise."""
    if len(items) > ATTACHMENTS_MAX:
        raise Invalid(f"attachments: at most {ATTACHMENTS_MAX} files")
    out, total = [], 0
    for index, item in enumerate(items):
        name = str(item.get("name") or "").strip()
        mime = str(item.get("mimeType") or "application/octet-stream")
        if not name or len(name) > 255:
            raise Invalid(f"attachments.{index}.name: required, at most 255 characters")
        try:
            total += len(base64.b64decode(str(item.get("data") or ""), validate=True))
        except (binascii.Error, ValueError):
            raise Invalid(f"attachments.{index}.data: not valid base64") from None
        out.append({"name": name, "mimeType": mime[:200], "data": str(item.get("data"))})
    if total > ATTACHMENT_BYTES_MAX:
        raise Invalid(f"attachments: at most {ATTACHMENT_BYTES_MAX // 2**20} MiB in all")
    return out


def schedule_saved_in_studio(
    row: Schedule, *, spec_changed: bool, editor: Any = None, words_changed: bool = False
) -> None:
    """Validate a schedule the studio form built, and (re)compute its next due time when
    its timing changed: due times then count from now.

    A run posts its message into its owner's threads as them, so when someone else (a
    holder of ``manage_others_schedule``) changes what it posts or where, the schedule is
    paused until its owner resumes it: no run ever posts words its owner did not confirm."""
    spec = spec_of(row)
    validate_spec(spec)
    if row.owner_id is not None and not is_offered(row.owner, row.agent_id):
        raise Invalid(f"agent: {row.owner} may not use the agent {row.agent.name}")
    if spec_changed or row.next_run_at is None:
        now = timezone.now()
        row.next_run_at = _first_after(spec, now, now)
    by_owner = editor is not None and editor.pk == row.owner_id
    if row.paused_reason:
        # Held for its owner: their own save without "paused" is their confirmation.
        if by_owner and row.owner.is_active and not row.paused:
            row.paused_reason = ""
        else:
            row.paused = True
    if words_changed and editor is not None and not by_owner:
        row.paused = True
        row.paused_reason = (
            f"Edited by {editor.get_username()}: paused until its owner "
            f"({row.owner.get_username()}) resumes it."
        )


@transaction.atomic
def schedule_pause(schedule: Schedule, paused: bool, *, actor: Any = None) -> Schedule:
    """Pause (no claims), or resume from now on: due times missed while paused never run.

    A schedule the platform paused (edited by someone else, its owner deactivated) is
    resumed by its owner alone: resuming is their confirmation."""
    row = Schedule.objects.select_for_update().select_related("owner").get(pk=schedule.pk)
    if not paused and row.paused_reason:
        if actor is None or actor.pk != row.owner_id or not row.owner.is_active:
            raise Forbidden(f"{row.paused_reason} Only its owner can resume it.")
        row.paused_reason = ""
    row.paused = paused
    if not paused:
        now = timezone.now()
        row.next_run_at = _first_after(spec_of(row), now, now)
    row.save(update_fields=["paused", "paused_reason", "next_run_at", "updated_at"])
    return row


def held_refusal(schedule: Schedule) -> str | None:
    """Why a manual run may not start now (the schedule waits for its owner)."""
    return schedule.paused_reason or None


# --- claims --------------------------------------------------------------------------------


def due_schedules(now: datetime, batch: int) -> list[tuple[Any, datetime]]:
    """(id, next_run_at) of schedules due at ``now`` (the partial index ``schedule_due``)."""
    rows = Schedule.objects.filter(paused=False, next_run_at__lte=now).order_by("next_run_at")
    return [(pk, due) for pk, due in rows.values_list("pk", "next_run_at")[:batch] if due]


def _due_runs(row: Schedule, due: datetime, now: datetime) -> tuple[list[datetime], int, datetime]:
    """The due times to run (the latest and up to ``catch_up`` missed before it), how many
    were dropped, and the next due time after ``now``."""
    spec = spec_of(row)
    kept: deque[datetime] = deque([due], maxlen=row.catch_up + 1)
    total = 1
    times = times_after(spec, due)
    when = next(times)
    while when <= now and total < _MAX_SCAN:
        kept.append(when)
        total += 1
        when = next(times)
    if when <= now:  # an outage longer than the scan: start again from now
        when = _first_after(spec, due, now)
    return list(kept), total - len(kept), when


def schedule_claim(schedule_id: Any, due: datetime, now: datetime, me: str) -> list[ScheduleRun]:
    """Claim ``due`` of a schedule: move ``next_run_at`` on and record the runs, or nothing
    when another sweeper (or a pause, or an edit) changed the row first."""
    with transaction.atomic():
        row = Schedule.objects.filter(pk=schedule_id).first()
        if row is None or row.paused or row.next_run_at != due:
            return []
        due_times, skipped, following = _due_runs(row, due, now)
        claimed = Schedule.objects.filter(pk=schedule_id, next_run_at=due, paused=False).update(
            next_run_at=following, updated_at=now
        )
        if claimed != 1:
            return []
        runs = [
            ScheduleRun(
                schedule_id=schedule_id,
                due_at=when,
                claimed_by=me,
                claimed_at=now,
                skipped=skipped if index == 0 else 0,
            )
            for index, when in enumerate(due_times)
        ]
        ScheduleRun.objects.bulk_create(runs)
        return runs


def manual_run(schedule: Schedule, me: str) -> ScheduleRun:
    """A run now (the API's and the studio's "Run now"), outside the due times; refused
    while the schedule waits for its owner (``paused_reason``)."""
    if schedule.paused_reason:
        raise Forbidden(f"{schedule.paused_reason} It does not run until then.")
    now = timezone.now()
    return ScheduleRun.objects.create(
        schedule=schedule, due_at=now, manual=True, claimed_by=me, claimed_at=now
    )


def stale_runs_claim(me: str, now: datetime) -> list[ScheduleRun]:
    """Runs whose claimer died before starting them (claimed longer ago than
    ``STUDIO_SCHEDULE_STALE_SECONDS``), claimed again by ``me``."""
    stale = now - timedelta(seconds=settings.STUDIO_SCHEDULE_STALE_SECONDS)
    with transaction.atomic():
        rows = list(
            ScheduleRun.objects.select_for_update(skip_locked=True)
            .filter(status=ScheduleRun.Status.CLAIMED, claimed_at__lt=stale)
            .order_by("claimed_at")[:50]
        )
        ScheduleRun.objects.filter(pk__in=[r.pk for r in rows]).update(
            claimed_by=me, claimed_at=now
        )
    for row in rows:
        row.claimed_by, row.claimed_at = me, now
    return rows


def run_tag(run: ScheduleRun) -> str:
    """The tag of a run's new thread: a claimer that died after creating it finds it again."""
    return f"schedule-run-{run.pk.hex}"


def thread_for_run(run: ScheduleRun) -> Thread | None:
    """The thread the run posts to when it exists already: the standing thread, or the
    thread a previous claimer of this run created before it died."""
    schedule = run.schedule
    if schedule.target == Schedule.Target.STANDING_THREAD and schedule.standing_thread_id:
        return schedule.standing_thread
    tag = run_tag(run)
    # JSON containment (``tags__contains``) does not exist on SQLite (embedded mode); the tag
    # holds the run's id, so a text match finds its thread alone, checked exactly here.
    found = Thread.objects.filter(tags__icontains=tag)
    return next((t for t in found if tag in (t.tags or [])), None)


@transaction.atomic
def run_start(run: ScheduleRun, me: str, thread: Thread) -> bool:
    """Post the schedule's message to ``thread`` and mark the run started, in one
    transaction under the run's lock: only the run's current claimer does it, once."""
    row = ScheduleRun.objects.select_for_update().select_related("schedule").get(pk=run.pk)
    if row.status != ScheduleRun.Status.CLAIMED or row.claimed_by != me:
        return False
    schedule = row.schedule
    files = [
        message_service.NewAttachment(a["name"], a["mimeType"], a["data"])
        for a in schedule.attachments or []
    ]
    posted = message_service.message_post(
        thread=thread, role="user", content=schedule.message, attachments=files or None
    )
    row.status = ScheduleRun.Status.STARTED
    row.thread = thread
    row.message_id = posted.message_id
    row.started_at = timezone.now()
    row.save(update_fields=["status", "thread", "message_id", "started_at"])
    if schedule.target == Schedule.Target.STANDING_THREAD and schedule.standing_thread_id is None:
        Schedule.objects.filter(pk=schedule.pk).update(standing_thread=thread)
    return True


def run_failed(run: ScheduleRun, me: str, error: str) -> bool:
    """Record a run that could not start (budget used up, agent refused …)."""
    updated = ScheduleRun.objects.filter(
        pk=run.pk, status=ScheduleRun.Status.CLAIMED, claimed_by=me
    ).update(status=ScheduleRun.Status.FAILED, error=error[:2000], started_at=timezone.now())
    return updated == 1


# --- reads ---------------------------------------------------------------------------------


def schedule_wire(row: Schedule, *, upcoming: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": str(row.pk),
        "name": row.name,
        "agent": row.agent.name,
        "cron": row.cron or None,
        "timezone": row.timezone,
        "intervalSeconds": row.interval_seconds,
        "message": row.message,
        "envNames": list(row.env_names),  # values may be secrets: names only
        "attachments": [
            {"name": a["name"], "mimeType": a["mimeType"]} for a in row.attachments or []
        ],
        "target": row.target,
        "standingThreadId": str(row.standing_thread_id) if row.standing_thread_id else None,
        "paused": row.paused,
        "pausedReason": row.paused_reason or None,
        "owner": row.owner.get_username() if row.owner_id else None,
        "catchUp": row.catch_up,
        "nextRunAt": row.next_run_at.isoformat() if row.next_run_at and not row.paused else None,
    }
    if upcoming:
        out["nextRuns"] = [t.isoformat() for t in next_times(spec_of(row), upcoming)]
    return out


def run_wire(row: ScheduleRun) -> dict[str, Any]:
    return {
        "id": str(row.pk),
        "dueAt": row.due_at.isoformat(),
        "manual": row.manual,
        "status": row.status,
        "threadId": str(row.thread_id) if row.thread_id else None,
        "messageId": str(row.message_id) if row.message_id else None,
        "startedAt": row.started_at.isoformat() if row.started_at else None,
        "skipped": row.skipped,
        "error": row.error or None,
    }
