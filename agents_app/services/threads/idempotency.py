"""Idempotency keys: a retried write (same ``Idempotency-Key`` header) is answered from what
the first one stored, and writes nothing.

Message posts: the service calls ``idempotent_replay`` after it took the lock that serializes
its writes (the thread row), and ``idempotent_record`` in the same transaction as the write:
the key exists exactly when the write committed, and a concurrent duplicate waits for the
lock, then finds the key. The unique constraints on ``IdempotencyKey`` back this up.

Thread creation runs the engine (hooks) outside one transaction, so its key is *reserved*
first (``idempotent_reserve``: a pending row, unique per user), completed with the answer
after the write, or released when the write failed. A duplicate that arrives while the first
is running gets a 409; a reservation left pending longer than ``RESERVATION_STALE`` (its
process died) is taken over by the next retry.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from agents_app.base.errors import Conflict, Invalid, Unprocessable
from agents_app.models import IdempotencyKey, Thread

KEY_MAX = 255
REUSED = "Idempotency-Key was already used with a different request body"
IN_PROGRESS = "A request with this Idempotency-Key is still in progress; retry later"
PENDING = 0  # status_code of a reservation whose write has not finished
RESERVATION_STALE = timedelta(minutes=5)


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


@dataclass(frozen=True)
class Answer:
    """What an idempotent write answers: its own result, or the stored one (``replayed``)."""

    status_code: int
    response: dict[str, Any]
    replayed: bool = False


def idempotency_request(user: Any, header: str | None, body: Any) -> IdempotencyRequest | None:
    """The request's key (``None`` without the header); ``Invalid`` for a malformed key."""
    if header is None:
        return None
    key = header.strip()
    if not key or len(key) > KEY_MAX or not key.isascii() or not key.isprintable():
        raise Invalid(f"Idempotency-Key must be 1 to {KEY_MAX} printable ASCII characters")
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    # Keyed: a body may hold secrets (thread env), and a plain hash of a guess would confirm it.
    digest = hmac.new(settings.SECRET_KEY.encode(), canonical.encode(), hashlib.sha256)
    return IdempotencyRequest(user.pk, key, digest.hexdigest())


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


def idempotent_reserve(request: IdempotencyRequest, *, operation: str) -> Replay | None:
    """Reserve a user-wide key before a write that cannot share its transaction.

    ``None``: reserved, run the write, then ``idempotent_complete`` (or ``_release``).
    A ``Replay`` when it ran before; ``Conflict`` while it runs; ``Unprocessable`` when the
    key came with another body.
    """
    mine = {"user_id": request.user_id, "thread": None, "key": request.key}
    with transaction.atomic():
        try:
            with transaction.atomic():
                IdempotencyKey.objects.create(
                    **mine,
                    operation=operation,
                    fingerprint=request.fingerprint,
                    status_code=PENDING,
                    response={},
                )
            return None
        except IntegrityError:
            row = IdempotencyKey.objects.select_for_update().get(**mine)
        if row.fingerprint != request.fingerprint:
            raise Unprocessable(REUSED)
        if row.status_code != PENDING:
            return Replay(row.status_code, dict(row.response))
        if row.created_at > timezone.now() - RESERVATION_STALE:
            raise Conflict(IN_PROGRESS)
        row.created_at = timezone.now()  # its process died: this retry takes it over
        row.save(update_fields=["created_at"])
        return None


def idempotent_complete(
    request: IdempotencyRequest, *, status_code: int, response: dict[str, Any]
) -> None:
    IdempotencyKey.objects.filter(
        user_id=request.user_id, thread=None, key=request.key, status_code=PENDING
    ).update(status_code=status_code, response=response)


def idempotent_release(request: IdempotencyRequest) -> None:
    """The write failed: forget the reservation, so a retry runs it again."""
    IdempotencyKey.objects.filter(
        user_id=request.user_id, thread=None, key=request.key, status_code=PENDING
    ).delete()


def idempotency_keys_purge() -> int:
    """Forget keys older than ``STUDIO_IDEMPOTENCY_KEY_HOURS`` (a retry comes much sooner)."""
    cutoff = timezone.now() - timedelta(hours=settings.STUDIO_IDEMPOTENCY_KEY_HOURS)
    # In batches: a sweep never holds a long delete.
    old = IdempotencyKey.objects.filter(created_at__lt=cutoff).values_list("pk", flat=True)
    deleted, _ = IdempotencyKey.objects.filter(pk__in=list(old[:5000])).delete()
    return deleted
