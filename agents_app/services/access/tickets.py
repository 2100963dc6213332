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

from agents_app.base.errors import Invalid
from agents_app.models import WebSocketTicket
from agents_app.services.access.socket_credentials import (
    SocketCredential,
    credential_from_stored,
    credential_valid,
)

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


def ticket_create(*, user: Any, pathname: str, credential: SocketCredential | None = None) -> str:
    """Mint a ticket for ``user`` to open ``pathname``; returns the raw ticket (64 hex).

    ``credential`` is what the minting request authenticated with: the socket the ticket
    opens follows it (closes when it is revoked, ``socket_credentials``)."""
    pathname = clean_pathname(pathname)
    raw = secrets.token_hex(32)
    WebSocketTicket.objects.create(
        ticket_hash=_hash(raw),
        pathname=pathname,
        user=user,
        expires_at=timezone.now() + timedelta(seconds=TTL_SECONDS),
        credential=credential.stored() if credential else "",
    )
    return raw


def ticket_open(*, raw: str, pathname: str) -> tuple[Any, SocketCredential | None] | None:
    """``(user, credential)`` if ``raw`` is unused, unexpired, minted for ``pathname`` by a
    credential that still holds, and its user is active; ``None`` otherwise."""
    if not isinstance(raw, str) or len(raw) != 64:
        return None
    now = timezone.now()
    tickets = WebSocketTicket.objects.filter(
        ticket_hash=_hash(raw), pathname=pathname, used_at__isnull=True, expires_at__gt=now
    )
    if tickets.update(used_at=now) != 1:
        return None
    ticket = WebSocketTicket.objects.select_related("user").get(ticket_hash=_hash(raw))
    credential = credential_from_stored(ticket.credential)
    # Revoked between minting and opening: the revocation's message found no socket yet.
    if not credential_valid(credential, ticket.user):
        return None
    return ticket.user, credential


def ticket_consume(*, raw: str, pathname: str) -> Any | None:
    """The ticket's active user (``ticket_open`` without the credential)."""
    opened = ticket_open(raw=raw, pathname=pathname)
    return opened[0] if opened else None
