"""Idempotency keys: a retried write (same ``Idempotency-Key`` header) is answered from what
the first one stored, and writes nothing.

The write's service calls ``idempotent_replay`` after it took the lock that serializes its
writes (for a message post, the thread row), and ``idempotent_record`` in the same
transaction as the write: the key exists exactly when the write committed, and a concurrent
duplicate waits for the lock, then finds the key. The unique constraints on
``IdempotencyKey`` back this up if a caller forgets the lock.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from agents_app.errors import Invalid, Unprocessable
from agents_app.models import IdempotencyKey, Thread

KEY_MAX = 255
REUSED = "Idempotency-Key was already used with a different request body"


@dataclass(frozen=True)
class IdempotencyRequest:
    """One request's key: who sent it, the key, and the fingerprint of its body."""

    user_id: Any
    key: str
    fingerprint: str


@dataclass(frozen=True)
class Replay:
    status_code: int
    response: dict[str, Any]


def idempotency_request(user: Any, header: str | None, body: Any) -> IdempotencyRequest | None:
    """The request's key (``None`` without the header); ``Invalid`` for a malformed key."""
    if header is None:
        return None
    key = header.strip()
    if not key or len(key) > KEY_MAX or not key.isascii() or not key.isprintable():
        raise Invalid(f"Idempotency-Key must be 1 to {KEY_MAX} printable ASCII characters")
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return IdempotencyRequest(user.pk, key, hashlib.sha256(canonical.encode()).hexdigest())


def idempotent_replay(request: IdempotencyRequest, *, thread: Thread | None) -> Replay | None:
    """The stored answer for this key, ``None`` if new; ``Unprocessable`` if the key came
    with another body. Hold the lock that serializes the protected writes."""
    row = IdempotencyKey.objects.filter(
        user_id=request.user_id, thread=thread, key=request.key
    ).first()
    if row is None:
        return None
    if row.fingerprint != request.fingerprint:
        raise Unprocessable(REUSED)
    return Replay(row.status_code, dict(row.response))


def idempotent_record(
    request: IdempotencyRequest,
    *,
    thread: Thread | None,
    operation: str,
    status_code: int,
    response: dict[str, Any],
) -> None:
    """Store the answer, in the transaction of the write it belongs to."""
    IdempotencyKey.objects.create(
        user_id=request.user_id,
        thread=thread,
        key=request.key,
        operation=operation,
        fingerprint=request.fingerprint,
        status_code=status_code,
        response=response,
    )


def idempotency_keys_purge() -> int:
    """Forget keys older than ``STUDIO_IDEMPOTENCY_KEY_HOURS`` (a retry comes much sooner)."""
    cutoff = timezone.now() - timedelta(hours=settings.STUDIO_IDEMPOTENCY_KEY_HOURS)
    # In batches: a sweep never holds a long delete.
    old = IdempotencyKey.objects.filter(created_at__lt=cutoff).values_list("pk", flat=True)
    deleted, _ = IdempotencyKey.objects.filter(pk__in=list(old[:5000])).delete()
    return deleted
