"""A thread's durable key-value store (``state.get_value``/``set_value``) over HTTP.

Keys that hold server-managed state are reserved: clients get 403 for them (the
reference's list, plus the engine's ``_runtime.`` prefix for child-thread ids).
"""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction

from agents_app.base.errors import Forbidden, Invalid
from agents_app.broadcast.events import send_thread_frames
from agents_app.models import Thread, ThreadValue
from agents_app.models.timestamps import now_us
from agents_app.services.env.redaction import redact_for_thread
from runtime.store.events import event

KEY_MAX = 512
VALUE_MAX = 1024 * 1024
RESERVED = frozenset({"execution_owner", "approvals", "bg_processes", "lines_capacity_cache"})
RESERVED_PREFIXES = ("approval_", "_runtime.")


def clean_key(key: Any) -> str:
    if not isinstance(key, str) or not 1 <= len(key) <= KEY_MAX or "\x00" in key:
        raise Invalid(f"key must be a string of 1 to {KEY_MAX} characters")
    if key in RESERVED or key.startswith(RESERVED_PREFIXES):
        raise Forbidden("Key is reserved for server-managed state")
    return key


def serialized(value: Any) -> str:
    """The JSON text of a value; ``Invalid`` when it is not JSON (NaN, cycles, NUL)."""
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise Invalid(f"value must be JSON: {exc}") from None
    if "\\u0000" in text or "\x00" in text or len(text) > VALUE_MAX:
        raise Invalid("value is too large or contains NUL characters")
    return text


def _announce(thread: Thread, key: str, deleted: bool, updated_at: int) -> None:
    frame = event("kv_changed", {"key": key, "deleted": deleted, "updated_at": updated_at})
    transaction.on_commit(lambda: send_thread_frames(str(thread.pk), [frame]))


@transaction.atomic
def value_set(
    *, thread: Thread, key: str, value: Any, previous_key: str | None = None
) -> dict[str, Any]:
    """Store ``value`` (``None`` deletes); a different ``previous_key`` renames."""
    key = clean_key(key)
    if previous_key is not None:
        previous_key = clean_key(previous_key)
    updated_at = now_us()
    deleted = value is None
    if deleted:
        ThreadValue.objects.filter(thread=thread, key=key).delete()
    else:
        serialized(value)
        value = redact_for_thread(str(thread.pk), value)  # a typed secret is never kept in clear
        # ``sealed`` cleared: a tool's earlier exact value must not outlive this write.
        ThreadValue.objects.update_or_create(
            thread=thread,
            key=key,
            defaults={"value": value, "sealed": "", "updated_at": updated_at},
        )
    _announce(thread, key, deleted, updated_at)
    if previous_key and previous_key != key:
        ThreadValue.objects.filter(thread=thread, key=previous_key).delete()
        _announce(thread, previous_key, True, updated_at)
    return {"key": key, "value": value, "previousKey": previous_key, "deleted": deleted}


@transaction.atomic
def value_delete(*, thread: Thread, key: str) -> None:
    key = clean_key(key)
    ThreadValue.objects.filter(thread=thread, key=key).delete()
    _announce(thread, key, True, now_us())
