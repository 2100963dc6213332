"""Recurring schedules of an agent and their runs (docs/automation.md, "Schedules").

The ``Schedule`` row is the schedule: its ``next_run_at`` is claimed by a conditional
UPDATE (``services.automation.schedules``), so no beat entry exists per schedule.
"""

from __future__ import annotations

import json
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from agents_app.models.agents import Agent
from agents_app.models.threads import Thread


class Schedule(models.Model):
    class Target(models.TextChoices):
        NEW_THREAD = "new_thread", "A new thread each time"
        STANDING_THREAD = "standing_thread", "One standing thread"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="schedules")
    # Threads are created for (and budgets charged to) this user.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="schedules"
    )
    name = models.CharField(max_length=200, blank=True)
    cron = models.CharField(max_length=200, blank=True)
    timezone = models.CharField(max_length=64, default="UTC")
    interval_seconds = models.PositiveIntegerField(null=True, blank=True)
    message = models.TextField()
    # The run threads' env values, encrypted like every env value (``env`` reads and writes
    # them); the names alone are kept in clear for the pages and the API.
    env_ciphertext = models.TextField(blank=True, editable=False)
    env_names = models.JSONField(default=list, blank=True, editable=False)
    # Files each run's message carries: [{name, mimeType, data (base64)}] (services.automation.schedules).
    attachments = models.JSONField(default=list, blank=True)
    target = models.CharField(max_length=16, choices=Target.choices, default=Target.NEW_THREAD)
    standing_thread = models.ForeignKey(
        Thread, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    paused = models.BooleanField(default=False)
    # Why the platform paused it (its owner was deactivated; someone else edited it and it
    # waits for its owner to resume it): empty when a person paused it or it runs.
    paused_reason = models.CharField(max_length=300, blank=True)
    # Missed due times (an outage) run at most this many besides the latest one.
    catch_up = models.PositiveIntegerField(default=0)
    next_run_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at"]
        permissions = [("manage_others_schedule", "Can manage other people's schedules")]
        indexes = [
            # The sweep: WHERE NOT paused AND next_run_at <= now.
            models.Index(fields=["next_run_at"], condition=Q(paused=False), name="schedule_due"),
        ]

    def __str__(self) -> str:
        return self.name or f"{self.agent.name} schedule"

    @property
    def env(self) -> dict[str, str]:
        from agents_app.base.encryption import decrypt

        return dict(json.loads(decrypt(self.env_ciphertext))) if self.env_ciphertext else {}

    @env.setter
    def env(self, values: dict[str, str]) -> None:
        from agents_app.base.encryption import encrypt

        self.env_ciphertext = encrypt(json.dumps(values)) if values else ""
        self.env_names = sorted(values or {})


class ScheduleRun(models.Model):
    """One due time of a schedule: claimed with the schedule's ``next_run_at``, then started
    (its thread created and its message posted in one transaction)."""

    class Status(models.TextChoices):
        CLAIMED = "claimed"
        STARTED = "started"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="runs")
    due_at = models.DateTimeField()
    manual = models.BooleanField(default=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CLAIMED)
    claimed_by = models.CharField(max_length=200, blank=True)
    claimed_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    thread = models.ForeignKey(
        Thread, on_delete=models.SET_NULL, null=True, blank=True, related_name="schedule_runs"
    )
    message_id = models.UUIDField(null=True, blank=True)
    # Earlier due times dropped by the catch-up rule when this run was claimed.
    skipped = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-due_at"]
        constraints = [
            # One run per due time, whatever races the claim (manual runs excepted).
            models.UniqueConstraint(
                fields=["schedule", "due_at"], condition=Q(manual=False), name="schedule_run_once"
            ),
        ]
        indexes = [
            # Recovery: WHERE status='claimed' AND claimed_at < stale.
            models.Index(
                fields=["claimed_at"], condition=Q(status="claimed"), name="schedule_run_claimed"
            ),
        ]

    def __str__(self) -> str:
        # Titled in words in the schedule's own zone: "Run of Tue 3 Dec 09:00 (Europe/Paris)".
        from agents_app.base.people_format import zoned

        zone = self.schedule.timezone
        kind = "Run by hand," if self.manual else "Run of"
        return f"{kind} {zoned(self.due_at, zone)} ({zone})"
