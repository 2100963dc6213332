"""What the studio's front page shows: recent threads, live sessions, failed effects, spend.

Every query is bounded (a LIMIT) or served by an index, so the page stays cheap however
large the tables grow.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.utils import timezone

from agents_app.models import ScheduledEffect, Thread, ThreadSession
from agents_app.selectors import spend_since

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
