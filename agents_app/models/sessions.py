from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from agents_app.models.threads import Thread


class ThreadSession(models.Model):
    """One session (autonomous run) of a thread, and who owns it right now.

    Ownership lives here, not in the broker: a worker claims the row with a
    conditional update and keeps ``heartbeat_at`` fresh; a sweep resumes sessions
    whose heartbeat stopped, from ``progress``. At most one active session per thread
    (a partial unique constraint).
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        COMPLETED = "completed"
        STOPPED = "stopped"
        FAILED = "failed"
        # A tool call waits for approval or the client; no worker holds it, the sweep leaves
        # it alone, and the decision (``services.sessions.tool_waits``) queues it again.
        PARKED = "parked"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="sessions")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    side = models.CharField(max_length=1, default="a")
    root_message_id = models.UUIDField(null=True, blank=True)
    owner = models.CharField(max_length=200, blank=True, help_text="The worker that runs it.")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Schema: runtime.core.progress.SessionProgress (side, per-side step counts, turns, stop reason).
    progress = models.JSONField(default=dict, blank=True)
    stop_reason = models.CharField(max_length=64, blank=True)
    # The definition versions this session runs on, fixed when it starts (so an edit made
    # while it runs applies from the next session): {"agents": {name: number}, "prompts":
    # {...}, "models": {...}, "drafts": {"prompts/<name>": draft id}}. services.definitions.versions.
    definition_versions = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["thread"],
                condition=Q(status__in=["queued", "running"]),
                name="one_active_session_per_thread",
            )
        ]
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="session_status_heartbeat")]

    def __str__(self) -> str:
        return f"session {str(self.id)[:8]} ({self.status})"
