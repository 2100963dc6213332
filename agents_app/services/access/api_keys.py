"""API keys for programs: created once, shown once, stored only as a SHA-256 hash.

A key is ``agtbldr_`` + 64 hex characters (256 random bits). Authentication hashes
the presented key and looks the hash up, so no stored secret is ever compared
byte by byte (the comparison that could leak timing happens on a hash the caller
cannot steer).
"""

from __future__ import annotations

import functools
import hashlib
import secrets
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q
from django.utils import timezone

from agents_app.db.raw_sql import model_columns, model_from_row, prepared_cursor
from agents_app.models import ApiKey
from agents_app.services.access.socket_credentials import credential_revoked, key_credential

KEY_PREFIX = "agtbldr_"
_KEY_LENGTH = len(KEY_PREFIX) + 64
NAME_MAX_LENGTH = 100
# last_used_at is for humans ("used 3 minutes ago"); writing it on every request would
# turn each authenticated read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class ApiKeyNameInvalid(ValueError):
    pass


def _hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def api_key_create(*, user: Any, name: str) -> tuple[ApiKey, str]:
    """Create a key for ``user``; returns the row and the raw key, which is never stored."""
    name = name.strip()
    if not 1 <= len(name) <= NAME_MAX_LENGTH:
        raise ApiKeyNameInvalid(f"The key name must be 1 to {NAME_MAX_LENGTH} characters.")
    raw = KEY_PREFIX + secrets.token_hex(32)
    key = ApiKey.objects.create(
        user=user, name=name, key_prefix=KEY_PREFIX, last_five=raw[-5:], key_hash=_hash(raw)
    )
    return key, raw


def api_key_authenticate(raw: str) -> Any | None:
    """The active user owning the unrevoked key ``raw``, or None."""
    key = api_key_in_use(raw)
    return key.user if key is not None else None


@functools.cache
def _key_sql() -> str:
    """A fixed statement: every request with a key runs it (issue #21)."""
    user = get_user_model()
    columns = model_columns(ApiKey, "k") + model_columns(user, "u")
    return (
        f"SELECT {', '.join(columns)} FROM {ApiKey._meta.db_table} k "
        f"JOIN {user._meta.db_table} u ON u.{user._meta.pk.column} = k.user_id "  # type: ignore[union-attr]
        "WHERE k.key_hash = %s AND k.revoked_at IS NULL"
    )


def api_key_in_use(raw: str) -> ApiKey | None:
    """The unrevoked key ``raw`` of an active user (its ``user`` loaded), or None."""
    if not isinstance(raw, str) or len(raw) != _KEY_LENGTH or not raw.startswith(KEY_PREFIX):
        return None
    with prepared_cursor() as cursor:
        cursor.execute(_key_sql(), [_hash(raw)])
        row = cursor.fetchone()
    if row is None:
        return None
    width = len(ApiKey._meta.concrete_fields)
    key: ApiKey = model_from_row(ApiKey, row[:width])
    key.user = model_from_row(get_user_model(), row[width:])
    if not key.user.is_active:
        return None
    now = timezone.now()
    # The row just read says whether the stamp is due: most requests skip the write.
    if key.last_used_at is None or key.last_used_at < now - LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
        ).update(last_used_at=now)
    return key


def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    """Revoke a key; it stops authenticating at once, and the sockets opened with it close
    (``socket_credentials``). Revoking twice keeps the first time."""
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    credential_revoked(key_credential(api_key.pk))
    return api_key
