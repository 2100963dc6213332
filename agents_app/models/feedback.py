from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from agents_app.models.agents import Agent
from agents_app.models.messages import Message


class Feedback(models.Model):
    """One person's rating of one assistant reply (services.threads.feedback; docs/observability.md).

    Kept with the agent and the definition versions that produced the reply (copied from
    the reply's request log), so the dashboard can compare versions after they change. It
    reaches its thread through the message (no key of its own to the thread: retention's
    batched delete orders a thread's dependents by who points at whom)."""

    class Score(models.IntegerChoices):
        UP = 1, "👍"
        DOWN = -1, "👎"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="feedback")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.SET_NULL, null=True, related_name="+")
    score = models.SmallIntegerField(choices=Score.choices)
    reason = models.CharField(max_length=100, blank=True)
    comment = models.TextField(blank=True)
    # {"agents/<name>": 3, "prompts/<name>": 2, …} of the reply's request (Log.definition_versions).
    definition_versions = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["message", "user"], name="uniq_feedback_per_user")
        ]
        indexes = [models.Index(fields=["agent", "-created_at"], name="feedback_agent_time")]
        verbose_name_plural = "feedback"

    def __str__(self) -> str:
        return f"{self.get_score_display()} on {self.message_id}"
