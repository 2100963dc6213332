"""Inbound triggers: a URL per agent that starts a thread (docs/automation.md, "Triggers")."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from agents_app.models.agents import Agent


class Trigger(models.Model):
    """``POST /api/inbound/<token>`` starts a thread of ``agent`` owned by ``owner``. Only the
    token's SHA-256 is stored; the token is shown once, at creation."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="triggers")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="triggers"
    )
    name = models.CharField(max_length=200, blank=True)
    token_hash = models.CharField(max_length=64, unique=True)
    token_prefix = models.CharField(max_length=12)
    # The message: {{ a.b }} is replaced by the request JSON's field a.b.
    template = models.TextField()
    # Optional: the env value (agent or instance) whose secret signs the sender's requests.
    secret_env = models.CharField(max_length=128, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Set by the platform when the trigger may not act (its owner was deactivated): it
    # answers as a revoked one until an admin hands it to someone else.
    disabled_reason = models.CharField(max_length=300, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        permissions = [("manage_others_trigger", "Can manage other people's triggers")]

    def __str__(self) -> str:
        return f"{self.agent.name} trigger {self.token_prefix}…"
