"""Per-user and per-key overrides of the request limits, and monthly spend budgets.

The defaults live in settings (``STUDIO_RATE_*``, ``STUDIO_BUDGET_*``); a row here replaces
the default for one user, one API key or one agent. The counting itself is in
``agents_app.services.access.limits`` (the shared cache for requests, the logs for spend).
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from agents_app.models.agents import Agent
from agents_app.models.api_keys import ApiKey


class LimitedAction(models.TextChoices):
    THREAD_CREATE = "thread_create", "Thread creation"
    MESSAGE_POST = "message_post", "Message posts"
    WS_TICKET = "ws_ticket", "WebSocket tickets"
    API_KEY_CREATE = "api_key_create", "API key creation"


class UsageLimit(models.Model):
    """How many ``action`` requests a user (or one of their API keys) may make per period."""

    class Period(models.IntegerChoices):
        MINUTE = 60, "per minute"
        HOUR = 3600, "per hour"
        DAY = 86400, "per day"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="usage_limits"
    )
    api_key = models.ForeignKey(
        ApiKey,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="usage_limits",
        help_text="Empty: the limit counts all of the user's requests (session and every key). "
        "Set: it counts only this key's requests, on top of the user's limit.",
    )
    action = models.CharField(max_length=32, choices=LimitedAction.choices)
    limit = models.PositiveIntegerField(
        null=True, blank=True, help_text="Requests allowed per period. Empty: no limit."
    )
    period = models.PositiveIntegerField(choices=Period.choices, default=Period.MINUTE)

    class Meta:
        verbose_name = "usage limit"
        constraints = [
            models.UniqueConstraint(
                fields=["user", "action"],
                condition=Q(api_key__isnull=True),
                name="usage_limit_one_per_user_action",
                violation_error_message="This user already has a limit for this action.",
            ),
            models.UniqueConstraint(
                fields=["api_key", "action"],
                condition=Q(api_key__isnull=False),
                name="usage_limit_one_per_key_action",
                violation_error_message="This API key already has a limit for this action.",
            ),
        ]

    def __str__(self) -> str:
        scope = f"key {self.api_key}" if self.api_key_id else str(self.user)
        amount = "no limit" if self.limit is None else f"{self.limit} {self.get_period_display()}"
        return f"{self.get_action_display()} for {scope}: {amount}"


# A negative budget would read as "used up" before anything was spent (issue #40 item 6).
NEGATIVE_BUDGET = (
    "A budget cannot be negative. Enter 0 to refuse every new session, "
    "or leave it empty for no budget."
)


class SpendBudget(models.Model):
    """A monthly spend ceiling (USD) for one user's threads or one agent's threads."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="spend_budget",
    )
    agent = models.OneToOneField(
        Agent, on_delete=models.CASCADE, null=True, blank=True, related_name="spend_budget"
    )
    monthly_limit_usd = models.DecimalField(
        "monthly limit (USD)",
        max_digits=12,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="New sessions are refused once this month's spend reaches it. "
        "Empty: no budget (even when a default is set in settings).",
        validators=[MinValueValidator(Decimal("0"), message=NEGATIVE_BUDGET)],
    )

    class Meta:
        verbose_name = "spend budget"
        constraints = [
            models.CheckConstraint(
                condition=Q(user__isnull=False, agent__isnull=True)
                | Q(user__isnull=True, agent__isnull=False),
                name="spend_budget_user_xor_agent",
                violation_error_message="Choose either a user or an agent (exactly one).",
            )
        ]

    def __str__(self) -> str:
        scope = f"user {self.user}" if self.user_id else f"agent {self.agent}"
        amount = "none" if self.monthly_limit_usd is None else f"${self.monthly_limit_usd}"
        return f"Budget for {scope}: {amount}"
