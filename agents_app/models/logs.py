from __future__ import annotations

import uuid

from django.db import models

from agents_app.models.threads import Thread
from agents_app.models.timestamps import now_us


class Log(models.Model):
    """One LLM request attempt, one tool call, a runtime event or one side handler call."""

    class Kind(models.TextChoices):
        LLM = "llm", "LLM request"
        TOOL = "tool", "Tool call"
        SYSTEM = "system", "Runtime event"
        HANDLER = "handler_execution", "Side handler call"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: ``log_thread_time`` (thread, created_at) serves lookups by thread,
    # and one index fewer is one write fewer on the engine's hot path.
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="logs", db_index=False
    )
    # The message that started the turn (the reference's "root" message id); plain id to avoid a cycle.
    message_id = models.UUIDField(null=True, blank=True)
    kind = models.CharField(max_length=32, choices=Kind.choices, default=Kind.LLM)
    parent = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="children"
    )
    retry_of = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    provider = models.CharField(max_length=32, blank=True)
    model = models.CharField(max_length=128, blank=True, help_text="Model definition name.")
    model_id = models.CharField(max_length=200, blank=True, help_text="The provider's model id.")
    prompt_name = models.CharField(max_length=128, blank=True)
    attempt = models.PositiveSmallIntegerField(default=1)
    tool_name = models.CharField(max_length=200, blank=True)
    tool_call_id = models.CharField(max_length=200, blank=True)

    # Summaries with secrets redacted and base64 stripped; the exact vendor body for "inspect".
    request_body = models.JSONField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)
    system_prompt = models.TextField(blank=True)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    finish_reason = models.CharField(max_length=32, blank=True)

    input_tokens = models.PositiveIntegerField(default=0)
    cached_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    reasoning_tokens = models.PositiveIntegerField(default=0)
    total_tokens = models.PositiveIntegerField(default=0)
    cost_input = models.DecimalField(max_digits=18, decimal_places=12, default=0)
    cost_cached = models.DecimalField(max_digits=18, decimal_places=12, default=0)
    cost_output = models.DecimalField(max_digits=18, decimal_places=12, default=0)
    cost_total = models.DecimalField(max_digits=18, decimal_places=12, default=0)
    # False: the model had no prices, the vendor reported none and the kept table has no
    # entry (runtime.providers.pricing); the amounts above are then 0 for want of a price,
    # shown as "unknown" and counted as nothing in sums (docs/providers.md "Cost").
    cost_known = models.BooleanField(default=True, db_default=True)

    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    time_to_first_token_ms = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    error_type = models.CharField(max_length=64, blank=True)
    # spec 0.2.0 ErrorOrigin: runtime, provider:<name>, tool:<name>, hook:<id> (a tool name
    # is at most 200 characters, a hook id as long as a tool's; "" without an error).
    error_origin = models.CharField(max_length=255, blank=True, default="")
    is_complete = models.BooleanField(default=False)
    # Which definition versions the request ran on: {"agents/<name>": 3, "prompts/<name>": 2,
    # "models/<name>": 1} ("draft" for a draft being tried). Null when not recorded.
    definition_versions = models.JSONField(null=True, blank=True)
    created_at = models.BigIntegerField(default=now_us)

    class Meta:
        ordering = ["created_at"]
        indexes = [
            models.Index(fields=["thread", "created_at"], name="log_thread_time"),
            # Retention: WHERE created_at < cutoff ORDER BY created_at LIMIT n (delete and
            # trim old logs in bounded batches; without it every batch scans the table).
            models.Index(fields=["created_at"], name="log_time"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.model or self.tool_name}"
