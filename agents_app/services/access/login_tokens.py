"""Short-lived bearer tokens from a username/password login (the reference studio's sign-in).

A token is a Django session that no cookie carries: ``agtuser_<session key>``. It
lives ``STUDIO_LOGIN_TOKEN_SECONDS`` (12 h by default), is revoked by
``POST /api/auth/logout`` with it, and stops working when the password changes (the
session auth hash is checked on every use, as Django does for cookie sessions) or the
account is deactivated. Only sessions created here are accepted as bearer tokens, so a
stolen-looking cookie value cannot be replayed through the header (which skips CSRF).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.base import SessionBase
from django.utils.crypto import constant_time_compare

from agents_app.services.access.socket_credentials import credential_revoked, session_credential

TOKEN_PREFIX = "agtuser_"
_MARK = "_login_token"


def _store(session_key: str | None = None) -> SessionBase:
    engine = import_module(settings.SESSION_ENGINE)
    return engine.SessionStore(session_key)  # type: ignore[no-any-return]


def _session_key(raw: str) -> str | None:
    if not isinstance(raw, str) or not raw.startswith(TOKEN_PREFIX) or len(raw) > 100:
        return None
    return raw[len(TOKEN_PREFIX) :] or None


def token_session_key(raw: str) -> str | None:
    """The session key a token ``raw`` names (whether or not the session still exists)."""
    return _session_key(raw)


def login_token_create(user: Any) -> str:
    """A new bearer token for ``user`` (already authenticated)."""
    store = _store()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = getattr(user, "backend", settings.AUTHENTICATION_BACKENDS[0])
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store[_MARK] = True
    store.set_expiry(settings.STUDIO_LOGIN_TOKEN_SECONDS)
    store.create()
    return TOKEN_PREFIX + str(store.session_key)


def login_token_user(raw: str) -> Any | None:
    """The active user of an unexpired, unrevoked token ``raw``, or None."""
    key = _session_key(raw)
    if key is None:
        return None
    data = _store(key).load()  # {} when unknown or expired
    if not data.get(_MARK):
        return None
    user_pk = data.get(SESSION_KEY)
    if not isinstance(user_pk, str):
        return None
    user = get_user_model().objects.filter(pk=user_pk, is_active=True).first()
    if user is None or not constant_time_compare(
        str(data.get(HASH_SESSION_KEY, "")), user.get_session_auth_hash()
    ):
        return None
    return user


def login_token_revoke(raw: str) -> bool:
    """Delete the token's session and close the sockets opened with it; True when it existed."""
    key = _session_key(raw)
    if key is None:
        return False
    store = _store(key)
    if not store.load().get(_MARK):
        return False
    store.delete(key)
    credential_revoked(session_credential(key))
    return True
