"""The dashboard's first screen: where to configure things, and what needs a person now.

"Needs attention" gathers what the data offers cheaply: sessions that failed this week,
schedules that are paused (with the platform's reason), triggers and webhook subscriptions
the platform disabled, spend budgets at 80 % or more of their cap, and failed effects. Each
query is bounded by a LIMIT (or reads a small configuration table), so the page stays cheap
however large the runtime tables grow.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from urllib.parse import urlsplit

from django.db.models import Q
from django.utils import timezone

from agents_app.base.people_format import money, reason_words
from agents_app.models import (
    Agent,
    EnvValue,
    EvalDataset,
    LanguageModel,
    McpServer,
    Prompt,
    Schedule,
    ScheduledEffect,
    SpendBudget,
    ThreadSession,
    Trigger,
    WebhookSubscription,
)
from agents_app.services.access.limits import agent_spend, user_spend

# Attention items shown per kind; the item's link leads to the full, filtered list.
SHOWN = 3
FAILED_SESSIONS_DAYS = 7
# A budget from this share of its cap on is worth a look before it refuses sessions.
NEAR_CAP = Decimal("0.8")
BUDGETS_READ = 20


@dataclass(frozen=True)
class Shortcut:
    """A configure link: what it is, how many there are, where to add one."""

    label: str
    count: int
    list_url: str
    add_url: str | None
    hint: str


@dataclass(frozen=True)
class Item:
    """One thing that needs a person: a sentence, and where to act on it."""

    kind: str  # a CSS hook and a test handle: "session", "schedule", "trigger", …
    text: str
    url: str
    detail: str = ""
    when: datetime | None = None
    code: str = ""  # a name from code (an effect's), shown as code


def shortcuts(url: dict[str, str]) -> list[Shortcut]:
    """The configure shortcuts in the order a new studio is set up; ``url`` maps a model's
    key (``agent``, ``prompt``…) to its changelist and ``<key>_add`` to its add form."""
    rows = (
        ("agent", "Agents", Agent, "what people chat with"),
        ("prompt", "Prompts", Prompt, "instructions and tools"),
        ("languagemodel", "Models", LanguageModel, "the AI services used"),
        ("envvalue", "Env values", EnvValue, "API keys and settings"),
        ("schedule", "Schedules", Schedule, "runs at set times"),
        ("trigger", "Triggers", Trigger, "runs started by other systems"),
        ("webhooksubscription", "Webhooks", WebhookSubscription, "events sent out"),
        ("evaldataset", "Evals", EvalDataset, "test cases for agents"),
        ("mcpserver", "MCP servers", McpServer, "tools from other servers"),
    )
    return [
        Shortcut(label, model.objects.count(), url[key], url.get(f"{key}_add"), hint)
        for key, label, model, hint in rows
        if key in url
    ]


def _failed_sessions(now: datetime) -> tuple[int, list[ThreadSession]]:
    since = now - timedelta(days=FAILED_SESSIONS_DAYS)
    failed = ThreadSession.objects.filter(status=ThreadSession.Status.FAILED, created_at__gte=since)
    latest = list(failed.select_related("thread__agent").order_by("-created_at")[:SHOWN])
    # Counted up to a bound: "50 or more" is as actionable as the exact number.
    return len(failed.values("pk")[:50]), latest


def _near_cap(now: datetime) -> list[tuple[SpendBudget, Decimal]]:
    budgets = SpendBudget.objects.filter(monthly_limit_usd__gt=0).select_related("user", "agent")
    near = []
    for budget in budgets[:BUDGETS_READ]:
        limit = budget.monthly_limit_usd or Decimal(0)
        if budget.agent_id is not None:
            spent = agent_spend(budget.agent_id, now)
        else:
            spent = user_spend(budget.user_id, now)
        if spent >= limit * NEAR_CAP:
            near.append((budget, spent))
    return near


def _agent_title(agent: Agent | None) -> str:
    return (agent.title or agent.name) if agent is not None else "an agent"


def needs_attention(url: dict[str, str], now: datetime | None = None) -> list[Item]:
    """What needs a person, most pressing first; ``url`` as for ``shortcuts`` plus
    ``<key>_change`` templates with ``{pk}``."""
    now = now or timezone.now()
    items: list[Item] = []
    # A kind whose page this person may not open is left out (``url`` holds only those).
    if "thread_change" in url and "threadsession" in url:
        items += _session_items(url, now)
    if "spendbudget_change" in url:
        items += _budget_items(url, now)
    if "schedule_change" in url:
        items += _schedule_items(url)
    if "trigger_change" in url:
        items += _trigger_items(url)
    if "webhooksubscription_change" in url:
        items += _webhook_items(url)
    if "scheduledeffect_change" in url:
        items += _effect_items(url)
    return items


def _session_items(url: dict[str, str], now: datetime) -> list[Item]:
    items = []
    count, latest = _failed_sessions(now)
    for session in latest:
        thread = session.thread
        items.append(
            Item(
                "session",
                f"A session of {_agent_title(thread.agent)} failed",
                url["thread_change"].format(pk=session.thread_id),
                reason_words(session.stop_reason) if session.stop_reason else "",
                session.created_at,
            )
        )
    if count > len(latest):
        more = "50 or more" if count >= 50 else str(count)
        items.append(
            Item(
                "session",
                f"{more} sessions failed in the last {FAILED_SESSIONS_DAYS} days",
                url["threadsession"] + "?status__exact=failed",
            )
        )
    return items


def _budget_items(url: dict[str, str], now: datetime) -> list[Item]:
    items = []
    for budget, spent in _near_cap(now):
        whose = (
            f"the agent {_agent_title(budget.agent)}"
            if budget.agent_id
            else f"the account {budget.user.get_username() if budget.user else '–'}"
        )
        used = "is used up" if spent >= (budget.monthly_limit_usd or 0) else "is nearly used up"
        items.append(
            Item(
                "budget",
                f"The monthly budget of {whose} {used}",
                url["spendbudget_change"].format(pk=budget.pk),
                f"{money(spent)} of {money(budget.monthly_limit_usd)} spent this month",
            )
        )
    return items


def _schedule_items(url: dict[str, str]) -> list[Item]:
    items = []
    paused = Schedule.objects.filter(paused=True).select_related("agent")
    for schedule in paused.order_by("-updated_at")[:SHOWN]:
        items.append(
            Item(
                "schedule",
                f"The schedule {schedule.name or _agent_title(schedule.agent)} is paused",
                url["schedule_change"].format(pk=schedule.pk),
                schedule.paused_reason or "Paused by a person: resume it on its page.",
            )
        )
    return items


def _trigger_items(url: dict[str, str]) -> list[Item]:
    items = []
    disabled = Trigger.objects.filter(revoked_at__isnull=True).exclude(disabled_reason="")
    for trigger in disabled.select_related("agent").order_by("-created_at")[:SHOWN]:
        items.append(
            Item(
                "trigger",
                f"The trigger {trigger.name or _agent_title(trigger.agent)} is turned off",
                url["trigger_change"].format(pk=trigger.pk),
                trigger.disabled_reason,
            )
        )
    return items


def _webhook_items(url: dict[str, str]) -> list[Item]:
    items = []
    hooks = WebhookSubscription.objects.filter(~Q(disabled_reason="") | Q(active=False))
    for hook in hooks.order_by("-pk")[:SHOWN]:
        items.append(
            Item(
                "webhook",
                f"The webhook to {urlsplit(hook.url).netloc or hook.url} is turned off",
                url["webhooksubscription_change"].format(pk=hook.pk),
                hook.disabled_reason or "Turned off by a person.",
            )
        )
    return items


def _effect_items(url: dict[str, str]) -> list[Item]:
    items = []
    failed_effects = ScheduledEffect.objects.filter(status=ScheduledEffect.Status.FAILED)
    for effect in failed_effects.order_by("-due_at")[:SHOWN]:
        items.append(
            Item(
                "effect",
                "A scheduled effect failed:",
                url["scheduledeffect_change"].format(pk=effect.pk),
                (effect.error or "")[:120],
                effect.due_at,
                code=effect.name,
            )
        )
    return items
