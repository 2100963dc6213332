from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from agents_app.models.messages import Message
from agents_app.models.threads import Thread


class EvalDataset(models.Model):
    """A named list of cases an agent version is measured on (services.evals.checks)."""

    name = models.CharField(max_length=128, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class EvalCase(models.Model):
    """One case: the conversation to send and the checks its answer must pass.

    ``messages``: [{role: "user" | "assistant", content}], the last one the user's (sent as a
    post; the others stored first as the thread's history). ``checks``: a list of
    ``services.evals.checks.Check`` objects (contains, matches, json_schema, tool_called,
    tool_not_called, stop_reason, judge)."""

    dataset = models.ForeignKey(EvalDataset, on_delete=models.CASCADE, related_name="cases")
    name = models.CharField(max_length=200)
    messages = models.JSONField(default=list)
    env = models.JSONField(default=dict, blank=True)
    checks = models.JSONField(default=list, blank=True)
    notes = models.TextField(blank=True)
    # The reply it was made from ("make a case from this reply"), when it was.
    source_message = models.ForeignKey(
        Message,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        db_constraint=False,
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset", "id"]

    def __str__(self) -> str:
        return self.name


class EvalRun(models.Model):
    """An agent, pinned at definition versions, run over a dataset on the workers."""

    class Status(models.TextChoices):
        RUNNING = "running"
        COMPLETED = "completed"
        CANCELLED = "cancelled"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    dataset = models.ForeignKey(EvalDataset, on_delete=models.CASCADE, related_name="runs")
    agent = models.CharField(max_length=128)
    # {"agents/<name>": 3, "prompts/<name>": 5, …}: versions asked for (the rest: newest at start).
    versions = models.JSONField(default=dict, blank=True)
    # The pins every case's session runs on (services.definitions.versions.Pins.as_json()).
    pins = models.JSONField(default=dict, blank=True)
    label = models.CharField(max_length=200, blank=True)
    concurrency = models.PositiveSmallIntegerField(default=4)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.label or f"{self.agent} on {self.dataset}"


class EvalResult(models.Model):
    """One case of one run: its thread, whether it passed each check, cost and time."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        JUDGING = "judging"
        PASSED = "passed"
        FAILED = "failed"
        ERROR = "error"
        CANCELLED = "cancelled"

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    case = models.ForeignKey(EvalCase, on_delete=models.CASCADE, related_name="results")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    thread = models.ForeignKey(
        Thread, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    judge_thread = models.ForeignKey(
        Thread, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    score = models.FloatField(null=True, blank=True)
    # [{check, passed, detail}] per check of the case.
    checks = models.JSONField(default=list, blank=True)
    answer = models.TextField(blank=True)
    cost = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    latency_ms = models.IntegerField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "case_id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "case"], name="uniq_eval_result_per_case")
        ]
        indexes = [models.Index(fields=["run", "status"], name="eval_result_run_status")]

    def __str__(self) -> str:
        return f"{self.case} in {self.run}: {self.status}"
