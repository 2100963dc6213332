"""Sockets follow their credentials: which credential opened a WebSocket, whether it still
holds, and telling its sockets when it is revoked.

A socket authenticates once, when it connects (``consumers.WebSocketAuthMiddleware``),
with an API key, a login token, the session cookie, or a ticket minted by one of those.
It records that credential (``SocketCredential``) and joins the credential's channel-layer
group; revoking a key (``api_key_revoke``) or signing out (``login_token_revoke``, Django's
``logout``) sends ``credential.revoked`` to that group once the revocation is committed,
and every socket in it, on any web process, closes with 4401. A login token is a Django
session that no cookie carries, so tokens and cookie sessions are one kind here.

The group message is at most once (the Pub/Sub layer drops what it cannot deliver), so a
socket that acts on the credential's behalf (the bridge, which receives calls and records
answers) also checks ``credential_valid`` before each of those.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from importlib import import_module
from typing import Any, Literal

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.db import transaction

from agents_app.models import ApiKey

logger = logging.getLogger("agents_app.socket_credentials")

REVOKED_EVENT = "credential.revoked"
CLOSE_REVOKED = 4401
REVOKED_ERROR = "Unauthorized: the credential this socket was opened with was revoked"

Kind = Literal["key", "session"]


@dataclass(frozen=True)
class SocketCredential:
    """An API key (``ref``: its id) or a Django session, cookie or login token (``ref``:
    the session key)."""

    kind: Kind
    ref: str

    @property
    def group(self) -> str:
        # Group names travel to Redis and into logs: a session key, itself a credential,
        # appears only hashed.
        if self.kind == "key":
            return f"cred-key-{self.ref}"
        return f"cred-session-{hashlib.sha256(self.ref.encode()).hexdigest()[:40]}"

    def stored(self) -> str:
        """The form a ticket keeps (``WebSocketTicket.credential``)."""
        return f"{self.kind}:{self.ref}"


def key_credential(key_id: Any) -> SocketCredential:
    return SocketCredential("key", str(key_id))


def session_credential(session_key: str) -> SocketCredential:
    return SocketCredential("session", session_key)


def credential_from_stored(text: str) -> SocketCredential | None:
    kind, _, ref = (text or "").partition(":")
    if kind in ("key", "session") and ref:
        return SocketCredential(kind, ref)  # type: ignore[arg-type]
    return None


def credential_valid(credential: SocketCredential | None, user: Any) -> bool:
    """Whether ``credential`` still authenticates ``user`` (``None``: a socket opened
    before sockets recorded their credential, judged by the user alone)."""
    if user is None or not getattr(user, "is_active", False):
        return False
    if credential is None:
        return True
    if credential.kind == "key":
        return ApiKey.objects.filter(
            pk=credential.ref, user_id=user.pk, revoked_at__isnull=True, user__is_active=True
        ).exists()
    engine = import_module(settings.SESSION_ENGINE)
    data = engine.SessionStore(credential.ref).load()  # {} when deleted or expired
    return str(data.get(SESSION_KEY, "")) == str(user.pk)


def credential_revoked(credential: SocketCredential) -> None:
    """Close ``credential``'s sockets once the revocation is committed (never raises: the
    revocation itself has happened, and the bridge re-checks before acting)."""
    transaction.on_commit(lambda: _announce(credential))


def _announce(credential: SocketCredential) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(credential.group, {"type": REVOKED_EVENT})
    except Exception:
        logger.warning("could not tell the sockets of a revoked credential", exc_info=True)


def user_sockets_group(user_id: Any) -> str:
    """Every socket of a user joins this group too: deactivating the account closes them
    all, whatever credential opened them."""
    return f"cred-user-{user_id}"


def user_sockets_close(user_id: Any) -> None:
    """Close every socket of ``user_id`` once the caller's transaction commits."""
    transaction.on_commit(lambda: _announce_to(user_sockets_group(user_id)))


def _announce_to(group: str) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, {"type": REVOKED_EVENT})
    except Exception:
        logger.warning("could not tell the sockets of a deactivated user", exc_info=True)


def on_logged_out(sender: Any, request: Any = None, **kwargs: Any) -> None:
    """``user_logged_out`` (Django's ``logout``: the API's, the studio's): the session ends."""
    session_key = getattr(getattr(request, "session", None), "session_key", None)
    if session_key:
        credential_revoked(session_credential(session_key))
