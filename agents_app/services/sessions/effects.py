"""Scheduled effects in the database: schedule, claim, finish, heartbeat, recover, cancel, run now.

The ``ScheduledEffect`` row is the source of truth; the broker only carries
sweep ticks (see docs/effects.md). Every transition is one transaction:

- *schedule*: insert a ``pending`` row (idempotent on the id the engine chose);
- *claim*: ``SELECT … FOR UPDATE SKIP LOCKED`` on due pending rows (the partial
  index ``effect_due_pending`` serves it), then mark them ``processing`` with
  ``claimed_by``, ``attempts + 1`` and a heartbeat, in the same transaction. Two
  sweepers never get the same row; a duplicate tick finds nothing;
- *finish*: ``UPDATE … WHERE id = … AND status = 'processing' AND claimed_by = me``;
  a worker whose claim was taken over (declared dead) writes nothing;
- *recover*: ``processing`` rows whose heartbeat is older than the stale limit go
  back to ``pending`` (or ``failed`` once their attempts are used up);
- *cancel*: only ``pending`` rows, so a canceled run never starts.

Functions that only change rows return them; the caller announces the change
(``effect_changed``): async callers through their event sink after the commit,
the sync API/admin services here with ``transaction.on_commit``.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from agents_app import wire
from agents_app.base.errors import Conflict
from agents_app.broadcast.events import send_thread_frames
from agents_app.models import ScheduledEffect
from runtime.effects import retry_delay_ms
from runtime.store.events import event
from runtime.store.protocol import CanceledBy

logger = logging.getLogger("agents_app.effects")
Status = ScheduledEffect.Status
TERMINAL = (Status.COMPLETED, Status.FAILED, Status.AGENT_CANCELED, Status.USER_CANCELED)
LOST_TEXT = "Lost mid-execution (the executor restarted) and retry attempts were exhausted."


def effect_changed(row: ScheduledEffect) -> dict[str, Any]:
    """The ``event/effect_changed`` frame for a row (``EffectRun`` without args)."""
    return event("effect_changed", wire.effect_run(row, with_args=False))


def announce_on_commit(rows: list[ScheduledEffect]) -> None:
    """Send ``effect_changed`` for ``rows`` once the current transaction commits."""
    frames = [(str(r.thread_id), effect_changed(r)) for r in rows]

    def send() -> None:
        for thread_id, frame in frames:
            send_thread_frames(thread_id, [frame])

    transaction.on_commit(send)


# --- scheduling ---------------------------------------------------------------------------------


def effect_schedule(
    *,
    thread_id: Any,
    name: str,
    args: Any,
    due_at: datetime,
    effect_id: Any = None,
) -> tuple[ScheduledEffect, bool]:
    """Insert a pending run; an existing row with ``effect_id`` is returned unchanged.

    Returns ``(row, created)``. The row is committed with the caller's transaction.
    """
    defaults = {
        "thread_id": thread_id,
        "name": name,
        "args": args,
        "due_at": due_at,
        "max_attempts": settings.STUDIO_EFFECT_MAX_ATTEMPTS,
    }
    with transaction.atomic():
        return ScheduledEffect.objects.get_or_create(
            id=uuid.UUID(str(effect_id)) if effect_id else uuid.uuid4(), defaults=defaults
        )


def effects_pending(*, thread_id: Any, name: str | None = None) -> list[ScheduledEffect]:
    """A thread's pending runs (of one effect if ``name``), by due time then creation."""
    rows = ScheduledEffect.objects.filter(thread_id=thread_id, status=Status.PENDING)
    if name is not None:
        rows = rows.filter(name=name)
    return list(rows.order_by("due_at", "created_at"))


# --- cancel ---------------------------------------------------------------------------------------


def cancel_pending(*, thread_id: Any, effect_id: Any, by: CanceledBy) -> ScheduledEffect | None:
    """Pending → ``agent_canceled``/``user_canceled`` (one conditional UPDATE); the row, or
    ``None`` when it was not pending. Announcing is the caller's business."""
    status = Status.AGENT_CANCELED if by == "agent" else Status.USER_CANCELED
    now = timezone.now()
    with transaction.atomic():
        changed = ScheduledEffect.objects.filter(
            pk=effect_id, thread_id=thread_id, status=Status.PENDING
        ).update(status=status, completed_at=now, claimed_by="", updated_at=now)
        return ScheduledEffect.objects.get(pk=effect_id) if changed == 1 else None


def effect_cancel(*, effect: ScheduledEffect, by: CanceledBy = "user") -> dict[str, Any]:
    """Cancel a pending run from the API or the admin; ``Conflict`` when it is not pending."""
    with transaction.atomic():
        row = cancel_pending(thread_id=effect.thread_id, effect_id=effect.pk, by=by)
        if row is None:
            raise Conflict(f"No pending effect found for ID {effect.pk}")
        announce_on_commit([row])
    return {"action": "canceled", "id": str(effect.pk), "canceledBy": by}


# --- claims and outcomes ----------------------------------------------------------------------------


def effects_due_exist() -> bool:
    """Whether any pending run is due (a read without locks, so idle sweeps write nothing)."""
    # ORDER BY due_at LIMIT 1 keeps the planner on the partial index ``effect_due_pending``
    # (a bare EXISTS may pick a sequential scan, expecting many rows to match).
    due = ScheduledEffect.objects.filter(status=Status.PENDING, due_at__lte=timezone.now())
    return bool(due.order_by("due_at").values_list("id", flat=True)[:1])


def effects_claim(*, owner: str, limit: int) -> list[ScheduledEffect]:
    """Claim up to ``limit`` due pending runs for ``owner``, oldest due first.

    ``FOR UPDATE SKIP LOCKED`` makes concurrent sweepers take disjoint rows; the
    UPDATE in the same transaction makes the claim visible to everyone at commit.
    """
    now = timezone.now()
    with transaction.atomic():
        due = (
            ScheduledEffect.objects.select_for_update(skip_locked=True)
            .filter(status=Status.PENDING, due_at__lte=now)
            .order_by("due_at")
            .values_list("id", flat=True)[:limit]
        )
        ids = list(due)
        if not ids:
            return []
        ScheduledEffect.objects.filter(id__in=ids).update(
            status=Status.PROCESSING,
            claimed_by=owner,
            attempts=F("attempts") + 1,
            started_at=now,
            heartbeat_at=now,
            updated_at=now,
        )
        return list(ScheduledEffect.objects.filter(id__in=ids).order_by("due_at"))


def effect_claim_now(*, effect: ScheduledEffect, owner: str) -> ScheduledEffect:
    """Claim one pending run for a manual run (``Conflict`` unless it is pending)."""
    now = timezone.now()
    with transaction.atomic():
        changed = ScheduledEffect.objects.filter(pk=effect.pk, status=Status.PENDING).update(
            status=Status.PROCESSING,
            claimed_by=owner,
            attempts=F("attempts") + 1,
            started_at=now,
            heartbeat_at=now,
            manual_run=True,
            manual_run_at=now,
            updated_at=now,
        )
        if changed != 1:
            current = ScheduledEffect.objects.filter(pk=effect.pk).values_list("status", flat=True)
            raise Conflict(
                f"Effect {effect.pk} cannot be run from status {current.first() or 'unknown'}"
            )
        row = ScheduledEffect.objects.get(pk=effect.pk)
        announce_on_commit([row])
        return row


def effect_replay(*, effect: ScheduledEffect, owner: str) -> ScheduledEffect:
    """A new run of a finished one (``replayed_from`` links them), created already claimed
    by ``owner`` so no sweeper can take it first."""
    now = timezone.now()
    with transaction.atomic():
        row = ScheduledEffect.objects.create(
            thread_id=effect.thread_id,
            name=effect.name,
            args=effect.args,
            due_at=now,
            status=Status.PROCESSING,
            attempts=1,
            max_attempts=1,
            claimed_by=owner,
            started_at=now,
            heartbeat_at=now,
            manual_run=True,
            manual_run_at=now,
            replayed_from=effect,
        )
        announce_on_commit([row])
        return row


def retry_delay(attempts: int) -> timedelta:
    """Backoff before the next attempt: base × 2^(attempts-1), capped."""
    base, cap = settings.STUDIO_EFFECT_RETRY_BASE_MS, settings.STUDIO_EFFECT_RETRY_MAX_MS
    return timedelta(milliseconds=retry_delay_ms(attempts, base, cap))


def effect_finish(
    *,
    row: ScheduledEffect,
    owner: str,
    error: str | None = None,
    permanent: bool = False,
    retry: bool = True,
) -> ScheduledEffect | None:
    """Record the outcome of a claimed run; ``None`` when ``owner`` no longer holds the claim.

    Success → ``completed``. A failure → ``pending`` again, due after a backoff,
    while attempts remain (and ``retry``, and the error is not permanent), else
    ``failed``. The error text stays on the row either way. One guarded UPDATE.
    """
    now = timezone.now()
    changes: dict[str, Any] = {"claimed_by": "", "heartbeat_at": None, "updated_at": now}
    if error is None:
        changes.update(status=Status.COMPLETED, completed_at=now, error="")
    elif retry and not permanent and row.attempts < row.max_attempts:
        changes.update(status=Status.PENDING, due_at=now + retry_delay(row.attempts), error=error)
    else:
        changes.update(status=Status.FAILED, completed_at=now, error=error)
    changed = ScheduledEffect.objects.filter(
        pk=row.pk, status=Status.PROCESSING, claimed_by=owner
    ).update(**changes)
    if changed != 1:
        logger.warning("effect %s: claim lost before its outcome was recorded", row.pk)
        return None
    for field, value in changes.items():
        setattr(row, field, value)
    return row


def effects_heartbeat(*, owner: str) -> int:
    """Refresh the heartbeat of every run ``owner`` is processing; how many."""
    return ScheduledEffect.objects.filter(status=Status.PROCESSING, claimed_by=owner).update(
        heartbeat_at=timezone.now()
    )


def effects_recover(*, stale_seconds: float, limit: int = 500) -> list[ScheduledEffect]:
    """Runs whose worker died (heartbeat older than ``stale_seconds``): back to pending,
    or failed when their attempts are used up. Returns the changed rows."""
    now = timezone.now()
    with transaction.atomic():
        rows = list(
            ScheduledEffect.objects.select_for_update(skip_locked=True).filter(
                status=Status.PROCESSING, heartbeat_at__lt=now - timedelta(seconds=stale_seconds)
            )[:limit]
        )
        for row in rows:
            exhausted = row.attempts >= row.max_attempts
            row.status = Status.FAILED if exhausted else Status.PENDING
            row.completed_at = now if exhausted else None
            row.error = LOST_TEXT if exhausted else (row.error or "")
            row.claimed_by, row.heartbeat_at, row.updated_at = "", None, now
        fields = ["status", "completed_at", "error", "claimed_by", "heartbeat_at", "updated_at"]
        ScheduledEffect.objects.bulk_update(rows, fields)
    if rows:
        logger.warning("recovered %d effect run(s) whose worker stopped", len(rows))
    return rows
