"""Outbound webhooks: subscriptions and their deliveries (docs/automation.md, "Webhooks")."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from agents_app.models.agents import Agent

EVENTS = (
    "session.finished",
    "session.failed",
    "message.completed",
    "tool.waiting_approval",
    "schedule.run_failed",
)


class WebhookSubscription(models.Model):
    """Events of one agent (or of every agent: ``agent`` empty) POSTed to ``url``, signed
    with the env value named ``secret_env`` (never stored here)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(
        Agent, on_delete=models.CASCADE, null=True, blank=True, related_name="webhooks"
    )
    # Deliveries carry only what this user may read, while their account is active.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="webhook_subscriptions",
    )
    url = models.URLField(max_length=2000)
    secret_env = models.CharField(max_length=128)
    events = models.JSONField(default=list)
    active = models.BooleanField(default=True)
    # Why the platform turned it off (its owner was deactivated): empty otherwise.
    disabled_reason = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        permissions = [
            ("manage_others_webhooksubscription", "Can manage other people's webhook subscriptions")
        ]

    def __str__(self) -> str:
        return f"{self.agent.name if self.agent else 'instance'} → {self.url}"


class WebhookDelivery(models.Model):
    """One event for one subscription; its id is the ``Webhook-Id`` header of every attempt."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERING = "delivering"
        DELIVERED = "delivered"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    subscription = models.ForeignKey(
        WebhookSubscription, on_delete=models.CASCADE, related_name="deliveries"
    )
    event = models.CharField(max_length=64)
    # What the event is about (a session id, a schedule run id): one delivery per subscription.
    subject = models.CharField(max_length=200)
    payload = models.JSONField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    response_code = models.IntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    next_attempt_at = models.DateTimeField()
    claimed_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["subscription", "event", "subject"], name="webhook_delivery_once"
            ),
        ]
        indexes = [
            # The retry sweep: WHERE status='pending' AND next_attempt_at <= now.
            models.Index(
                fields=["next_attempt_at"], condition=Q(status="pending"), name="webhook_due"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} {self.subject}"
