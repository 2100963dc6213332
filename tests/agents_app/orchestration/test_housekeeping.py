"""Expired rows are purged by a task of their own (``agents_app.purge_expired``, on beat),
not as a hidden duty of the session sweep."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from agents_app.models import WebSocketTicket
from agents_app.services.access.tickets import ticket_create
from agents_app.services.sessions.lifecycle import sessions_sweep
from agents_app.tasks import session_tasks as tasks


def _ticket(user: Any, *, expired_minutes_ago: int) -> str:
    ticket_create(user=user, pathname="/api/events")
    row = WebSocketTicket.objects.latest("created_at")
    row.expires_at = timezone.now() - timedelta(minutes=expired_minutes_ago)
    row.save(update_fields=["expires_at"])
    return str(row.pk)


def test_the_purge_task_deletes_expired_tickets_and_the_session_sweep_does_not(
    make_user: Any,
) -> None:
    alice = make_user("alice")
    _ticket(alice, expired_minutes_ago=10)
    recent = _ticket(alice, expired_minutes_ago=1)
    assert sessions_sweep() == []
    assert WebSocketTicket.objects.count() == 2  # the session sweep only sweeps sessions
    assert tasks.purge_expired() == {"tickets": 1, "idempotency_keys": 0, "audit_events": 0}
    assert [str(pk) for pk in WebSocketTicket.objects.values_list("pk", flat=True)] == [recent]


def test_beat_sends_the_purge() -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["purge-expired"]
    assert entry["task"] == tasks.purge_expired.name == "agents_app.purge_expired"
    assert entry["schedule"] == float(settings.STUDIO_PURGE_SECONDS)
