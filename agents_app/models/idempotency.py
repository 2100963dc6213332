from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from agents_app.models.threads import Thread


class IdempotencyKey(models.Model):
    """A client's ``Idempotency-Key`` and the answer its first request got.

    Stored in the transaction of the write it protects, so a key exists exactly when that
    write committed; a retry with the same key gets the stored answer and writes nothing.
    One key per user and thread (message posts), or per user alone (thread creation).
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    key = models.CharField(max_length=255)
    operation = models.CharField(max_length=32)
    # sha256 of the request's canonical JSON: the same key with another body is refused.
    fingerprint = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField()
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "thread", "key"],
                condition=Q(thread__isnull=False),
                name="idempotency_key_per_user_thread",
            ),
            models.UniqueConstraint(
                fields=["user", "key"],
                condition=Q(thread__isnull=True),
                name="idempotency_key_per_user",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.operation} {self.key}"
