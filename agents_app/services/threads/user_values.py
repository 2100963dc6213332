"""A user's account-wide key-value store (spec 0.2.0 user KV): ``state.get_user_value`` /
``set_user_value`` / ``list_user_values`` in a thread's code act on the thread's owner, and
``/api/users/me/kv`` on the signed-in user. Every read and write names its user: no value
of one account is reachable from another's request or thread.

Values written by a thread's code are redacted like the thread's own values (the shown form
in ``value``, the exact one sealed, ``runtime.state.ThreadState.set_user_value``); what a
person writes over the API is theirs and kept as sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from agents_app.base.encryption import decrypt, encrypt
from agents_app.models import UserValue
from agents_app.models.timestamps import now_us
from agents_app.services.threads.values import serialized

KEY_MAX = 512
LIST_MAX = 500


@dataclass(slots=True)
class UserValuePage:
    """A page of a user's values (shown form: what the API sends)."""

    entries: list[dict[str, Any]]
    total: int


def _now_ms() -> int:
    return now_us() // 1000


def _exact(value: Any, sealed: str) -> Any:
    return json.loads(decrypt(sealed)) if sealed else value


def user_value_get(*, user_id: Any, key: str, exact: bool = True) -> Any:
    """The value under ``key`` (``None`` when unset): exact for code, as shown for the API."""
    row = UserValue.objects.filter(user_id=user_id, key=key).values_list("value", "sealed").first()
    if row is None:
        return None
    return _exact(*row) if exact else row[0]


@transaction.atomic
def user_value_set(*, user_id: Any, key: str, value: Any, exact: Any = None) -> int:
    """Store ``value`` (``None`` deletes); ``exact``: the unredacted form, kept sealed. Returns
    the write's time in ms."""
    updated_at = _now_ms()
    if value is None:
        UserValue.objects.filter(user_id=user_id, key=key).delete()
        return updated_at
    serialized(value)
    sealed = "" if exact is None else encrypt(json.dumps(exact))
    UserValue.objects.update_or_create(
        user_id=user_id,
        key=key,
        defaults={"value": value, "sealed": sealed, "updated_at": updated_at},
    )
    return updated_at


def user_value_page(
    *, user_id: Any, prefix: str = "", limit: int = 100, offset: int = 0, exact: bool = False
) -> UserValuePage:
    """The values whose key starts with ``prefix``, by key: ``{key, value, updated_at}``."""
    rows = UserValue.objects.filter(user_id=user_id, key__startswith=prefix).order_by("key")
    page = rows[offset : offset + limit].values_list("key", "value", "sealed", "updated_at")
    entries = [
        {"key": key, "value": _exact(value, sealed) if exact else value, "updated_at": at}
        for key, value, sealed, at in page
    ]
    return UserValuePage(entries, rows.count())
