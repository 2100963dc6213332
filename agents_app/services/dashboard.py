"""What the studio's front page shows: recent threads, live sessions, failed effects, spend.

Every query is bounded (a LIMIT) or served by an index, so the page stays cheap however
large the tables grow.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Q, Sum
from django.utils import timezone

from agents_app.models import Log, ScheduledEffect, Thread, ThreadSession
from agents_app.models.timestamps import now_us

LIST_SIZE = 8
ACTIVE = (ThreadSession.Status.QUEUED, ThreadSession.Status.RUNNING)


@dataclass(frozen=True)
class Dashboard:
    recent_threads: list[Thread]
    running_sessions: list[ThreadSession]
    running_total: int
    failed_effects: list[ScheduledEffect]
    spend_today: Decimal
    spend_month: Decimal


def spend_since(start: datetime, *, threads_of: Q | None = None) -> Decimal:
    """Total cost (USD) of the logs written since ``start`` (in the threads ``threads_of``
    selects, e.g. ``Q(owner_id=…)``; all threads when ``None``).

    Log has no index on ``created_at`` alone; its (thread, created_at) index serves this
    instead. A log is written inside a session, and releasing a session stamps its
    thread's ``last_activity_at`` (an indexed column), so every log since ``start``
    belongs to a thread active since then or to a session still running.
    """
    threads = (
        Thread.objects.filter(threads_of or Q())
        .filter(Q(last_activity_at__gte=start) | Q(sessions__status__in=ACTIVE))
        .values("pk")
    )
    start_us = int(start.timestamp() * 1_000_000)
    total = Log.objects.filter(
        thread__in=threads, created_at__gte=start_us, created_at__lte=now_us()
    ).aggregate(total=Sum("cost_total"))["total"]
    return total or Decimal(0)


def dashboard_summary(now: datetime | None = None) -> Dashboard:
    now = timezone.localtime(now or timezone.now())
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    running = ThreadSession.objects.filter(status__in=ACTIVE)
    return Dashboard(
        recent_threads=list(
            Thread.objects.select_related("agent", "owner").order_by("-last_activity_at")[
                :LIST_SIZE
            ]
        ),
        running_sessions=list(
            running.select_related("thread__agent").order_by("-created_at")[:LIST_SIZE]
        ),
        running_total=running.count(),
        failed_effects=list(
            ScheduledEffect.objects.filter(status=ScheduledEffect.Status.FAILED)
            .select_related("thread__agent")
            .order_by("-due_at")[:LIST_SIZE]
        ),
        spend_today=spend_since(day),
        spend_month=spend_since(day.replace(day=1)),
    )
