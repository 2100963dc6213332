"""Purging what only ever expires: used or expired WebSocket tickets and idempotency keys
past their window. Its own task (``agents_app.purge_expired``, beat every
``STUDIO_PURGE_SECONDS``; the embedded sweep in embedded mode), not a hidden duty of the
session sweep."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from agents_app.models import WebSocketTicket
from agents_app.services.access import audit
from agents_app.services.threads.idempotency import idempotency_keys_purge

# A ticket lives a few seconds; kept a little longer so a late use reads "expired", not "unknown".
TICKET_GRACE = timedelta(minutes=5)


def expired_purge() -> dict[str, int]:
    """Delete expired tickets and idempotency keys, and audit events past their retention
    (``STUDIO_AUDIT_RETENTION_DAYS``); how many of each."""
    tickets, _ = WebSocketTicket.objects.filter(
        expires_at__lt=timezone.now() - TICKET_GRACE
    ).delete()
    return {
        "tickets": tickets,
        "idempotency_keys": idempotency_keys_purge(),
        "audit_events": audit.purge_expired(),
    }
