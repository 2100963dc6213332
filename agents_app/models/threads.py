from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from agents_app.models.agents import Agent


class Thread(models.Model):
    """A conversation: the durable context that sessions of an agent run on.

    ``id`` is a UUID4 from ``os.urandom`` (spec §2.1: cryptographically unique).
    """

    class ChildStatus(models.TextChoices):
        RUNNING = "running"
        IDLE = "idle"
        FAILED = "failed"
        TERMINATED = "terminated"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="threads")
    # The agent at creation; handoffs change ``agent`` but never this.
    origin_agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="origin_threads")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="threads",
    )
    tags = models.JSONField(default=list, blank=True)

    # Subagent children: the parent, the child's display name (subagent_create ``name``),
    # the relationship name the parent's model uses and the registry status.
    parent = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="children"
    )
    display_name = models.CharField(max_length=120, blank=True)
    relationship = models.CharField(max_length=200, blank=True)
    child_status = models.CharField(max_length=64, blank=True)
    # Schema: runtime subagent config snapshot (blocking, resumable, owner side, arguments).
    subagent_config = models.JSONField(null=True, blank=True)

    # The persistent stop flag: set by POST …/stop, cleared by a user message or continue.
    stopped = models.BooleanField(default=False)
    terminated_at = models.DateTimeField(null=True, blank=True)
    # Durable execution state across sessions (session turn counters per side, …).
    # Schema: runtime.core.progress.ThreadExecutionState.
    execution_state = models.JSONField(default=dict, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)
    last_activity_at = models.DateTimeField(auto_now_add=True)
    last_message_at = models.DateTimeField(null=True, blank=True)
    last_message_preview = models.CharField(max_length=160, blank=True)

    class Meta:
        ordering = ["-last_activity_at"]
        indexes = [
            # "My threads, newest activity first" (chat page, GET /api/threads).
            models.Index(fields=["owner", "-last_activity_at"], name="thread_owner_activity"),
            models.Index(fields=["-last_activity_at"], name="thread_activity"),
            models.Index(fields=["agent", "-last_activity_at"], name="thread_agent_activity"),
        ]

    def __str__(self) -> str:
        return f"{self.agent.name} · {str(self.id)[:8]}"
