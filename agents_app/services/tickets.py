"""WebSocket tickets: single-use, bound to one path, valid for 30 seconds.

Browsers cannot put an ``Authorization`` header on a WebSocket, and a cookie is
sent cross-site; so the page mints a ticket over authenticated HTTP and passes
it as ``?ticket=``. Only the SHA-256 of the ticket is stored; consuming it is one
conditional UPDATE, so a ticket can open exactly one socket.
"""

from __future__ import annotations

import hashlib
import posixpath
import secrets
from datetime import timedelta
from typing import Any

from django.utils import timezone

from agents_app.errors import Invalid
from agents_app.models import WebSocketTicket

TTL_SECONDS = 30
PATH_INVALID = "pathname must be a normalized /api/* path."


def _hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def clean_pathname(pathname: Any) -> str:
    if (
        not isinstance(pathname, str)
        or not pathname.startswith("/api/")
        or len(pathname) > 500
        or any(c in pathname for c in "?#\x00\\")
        or posixpath.normpath(pathname) != pathname
    ):
        raise Invalid(PATH_INVALID)
    return pathname


def ticket_create(*, user: Any, pathname: str) -> str:
    """Mint a ticket for ``user`` to open ``pathname``; returns the raw ticket (64 hex)."""
    pathname = clean_pathname(pathname)
    raw = secrets.token_hex(32)
    WebSocketTicket.objects.create(
        ticket_hash=_hash(raw),
        pathname=pathname,
        user=user,
        expires_at=timezone.now() + timedelta(seconds=TTL_SECONDS),
    )
    return raw


def ticket_consume(*, raw: str, pathname: str) -> Any | None:
    """The ticket's active user if ``raw`` is unused, unexpired and minted for ``pathname``."""
    if not isinstance(raw, str) or len(raw) != 64:
        return None
    now = timezone.now()
    tickets = WebSocketTicket.objects.filter(
        ticket_hash=_hash(raw), pathname=pathname, used_at__isnull=True, expires_at__gt=now
    )
    if tickets.update(used_at=now) != 1:
        return None
    ticket = WebSocketTicket.objects.select_related("user").get(ticket_hash=_hash(raw))
    return ticket.user if ticket.user.is_active else None
