from __future__ import annotations

from django.db import models


class RetentionPolicy(models.Model):
    """How long activity is kept: one row (pk 1), edited in the studio.

    Each period is in days; empty means "use the server setting" (``STUDIO_RETENTION_*``),
    0 means keep forever. ``agents_app.services.operations.retention`` applies it; the last
    columns are its bookkeeping, never edited by hand.
    """

    SINGLETON_ID = 1

    thread_days = models.PositiveIntegerField(
        "delete threads idle for (days)",
        null=True,
        blank=True,
        help_text="A thread (with its subagent threads, messages, logs, files and values) "
        "is deleted when none of them had activity for this many days. 0 keeps threads forever.",
    )
    log_days = models.PositiveIntegerField(
        "delete logs older than (days)",
        null=True,
        blank=True,
        help_text="LLM and tool logs, with their token counts and costs. 0 keeps them forever.",
    )
    log_body_days = models.PositiveIntegerField(
        "trim log bodies older than (days)",
        null=True,
        blank=True,
        help_text="Drops request and response bodies and the system prompt of older logs; "
        "tokens, cost and latency stay. 0 keeps bodies as long as their logs.",
    )
    effect_days = models.PositiveIntegerField(
        "delete finished effects older than (days)",
        null=True,
        blank=True,
        help_text="Completed, failed and canceled scheduled effects; pending ones always stay. "
        "0 keeps them forever.",
    )
    memory_days = models.PositiveIntegerField(
        "forget memories unchanged for (days)",
        null=True,
        blank=True,
        help_text="What agents remember about a person (memory:person tools, the chat's "
        "“What the agents remember about you”), forgotten when not told again or changed "
        "for this many days. 0 keeps them until the person or an agent forgets them.",
    )
    # Every log created before this (microseconds) has had its bodies trimmed, so a run
    # starts there instead of re-reading years of trimmed rows.
    log_bodies_trimmed_before = models.BigIntegerField(default=0, editable=False)
    last_run_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_run_summary = models.TextField(blank=True, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "retention policy"
        verbose_name_plural = "retention policy"

    def __str__(self) -> str:
        return "Retention policy"
