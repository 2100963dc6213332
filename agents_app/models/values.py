from __future__ import annotations

from django.db import models

from agents_app.models.threads import Thread
from agents_app.models.timestamps import now_us


class ThreadValue(models.Model):
    """Durable key-value storage of a thread (``state.get_value``/``set_value``); JSON values."""

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="values")
    key = models.CharField(max_length=512)
    value = models.JSONField(null=True)  # as shown: secrets redacted
    # The value as setValue got it, when it held a secret: encrypted JSON (agents_app.base.encryption),
    # so getValue returns it exactly while it is never in clear at rest. Empty: ``value`` is it.
    sealed = models.TextField(blank=True, default="")
    updated_at = models.BigIntegerField(default=now_us)

    class Meta:
        ordering = ["key"]
        constraints = [models.UniqueConstraint(fields=["thread", "key"], name="uniq_thread_value")]

    def __str__(self) -> str:
        return self.key
