from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from agents_app.models.threads import Thread

# Runs that will never run again (retention may delete them once old).
FINISHED = ("completed", "failed", "agent_canceled", "user_canceled")


class ScheduledEffect(models.Model):
    """A scheduled effect run. The database is the source of truth; Celery only executes.

    A run is claimed with ``SELECT … FOR UPDATE SKIP LOCKED`` on due pending rows,
    so a redelivered or duplicated task finds nothing to do.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        PROCESSING = "processing"
        COMPLETED = "completed"
        FAILED = "failed"
        AGENT_CANCELED = "agent_canceled"
        USER_CANCELED = "user_canceled"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="effects")
    name = models.CharField(max_length=200)
    args = models.JSONField(null=True, blank=True)
    due_at = models.DateTimeField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField(default=3)
    error = models.TextField(blank=True)
    claimed_by = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    manual_run = models.BooleanField(default=False)
    manual_run_at = models.DateTimeField(null=True, blank=True)
    replayed_from = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="replays"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["due_at"]
        indexes = [
            # The beat sweep: WHERE status='pending' AND due_at <= now ORDER BY due_at.
            models.Index(
                fields=["due_at"], condition=Q(status="pending"), name="effect_due_pending"
            ),
            models.Index(fields=["thread", "status", "due_at"], name="effect_thread_status"),
            # Recovery: WHERE status='processing' AND heartbeat_at < stale (few rows, any table size).
            models.Index(
                fields=["heartbeat_at"],
                condition=Q(status="processing"),
                name="effect_processing_heartbeat",
            ),
            # Retention: finished runs WHERE completed_at < cutoff ORDER BY completed_at LIMIT n.
            models.Index(
                fields=["completed_at"],
                condition=Q(status__in=FINISHED),
                name="effect_finished_time",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} @ {self.due_at:%Y-%m-%d %H:%M:%S}"
