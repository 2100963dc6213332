from __future__ import annotations

from django.conf import settings
from django.db import models

from agents_app.models.timestamps import now_us


def _now_ms() -> int:
    return now_us() // 1000


class UserValue(models.Model):
    """An account-wide value of one user (spec 0.2.0 user KV: ``state.set_user_value``,
    ``/api/users/me/kv``): what agents remember about a person across their threads.
    Times in milliseconds, as the reference's ``user_values`` table."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="user_values"
    )
    key = models.CharField(max_length=512)
    value = models.JSONField(null=True)  # as shown: secrets redacted
    # The value as set_user_value got it, when it held a secret: encrypted JSON
    # (agents_app.base.encryption), as ThreadValue.sealed. Empty: ``value`` is it.
    sealed = models.TextField(blank=True, default="")
    created_at = models.BigIntegerField(default=_now_ms)
    updated_at = models.BigIntegerField(default=_now_ms)

    class Meta:
        ordering = ["key"]
        # Also serves the reads: one user's values, by key.
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="uniq_user_value")]

    def __str__(self) -> str:
        return self.key
