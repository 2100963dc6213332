"""Offboarding: a deactivated account stops acting everywhere at once (issue #52).

Signing in, API keys and login tokens already stop at deactivation; what the person left
running stops here too: their schedules pause, their triggers and webhook subscriptions are
disabled, and their open sockets close. Each keeps the reason, which the studio lists, and
an admin hands it to someone else (``hand_over``); only the new owner's resume (schedules)
or the hand-over itself (triggers, subscriptions) turns it on again. The owner rule
(``services.automation.owner_rights``) refuses an inactive owner at every act as well, so a
deactivation that bypassed this (a bulk ``UPDATE``) still stops everything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from agents_app.models import Schedule, Trigger, WebhookSubscription
from agents_app.services.access.socket_credentials import user_sockets_close


@dataclass(frozen=True)
class Offboarded:
    schedules: int
    triggers: int
    subscriptions: int

    def sentence(self, username: str) -> str:
        return (
            f"{username} is deactivated: {self.schedules} schedule(s) paused, "
            f"{self.triggers} trigger(s) and {self.subscriptions} webhook subscription(s) "
            "disabled. Hand them to someone else under Automation (the Owner field)."
        )


def owner_deactivated(user: Any) -> Offboarded:
    """Stop everything ``user`` left running (idempotent: what is stopped stays as it is)."""
    reason = f"Its owner ({user.get_username()}) was deactivated."
    with transaction.atomic():
        schedules = (
            Schedule.objects.filter(owner=user)
            .exclude(paused=True, paused_reason__gt="")
            .update(paused=True, paused_reason=reason)
        )
        triggers = Trigger.objects.filter(
            owner=user, revoked_at__isnull=True, disabled_reason=""
        ).update(disabled_reason=reason)
        subscriptions = WebhookSubscription.objects.filter(owner=user, active=True).update(
            active=False, disabled_reason=reason
        )
        user_sockets_close(user.pk)
    return Offboarded(schedules, triggers, subscriptions)


def stopped_of(user: Any) -> Offboarded:
    """What of ``user``'s is stopped now (the studio says it when they are deactivated)."""
    return Offboarded(
        Schedule.objects.filter(owner=user, paused=True).exclude(paused_reason="").count(),
        Trigger.objects.filter(owner=user, revoked_at__isnull=True)
        .exclude(disabled_reason="")
        .count(),
        WebhookSubscription.objects.filter(owner=user, active=False)
        .exclude(disabled_reason="")
        .count(),
    )


def on_user_saved(sender: Any, instance: Any, created: bool = False, **kwargs: Any) -> None:
    """``post_save`` of the user model: a save that leaves the account inactive offboards it."""
    if not created and not instance.is_active:
        owner_deactivated(instance)


def hand_over(row: Schedule | Trigger | WebhookSubscription, new_owner: Any, by: Any) -> None:
    """Give ``row`` to ``new_owner`` (an admin's choice in the studio). A schedule's env
    values were the old owner's (possibly their keys) and are dropped, its standing thread
    was theirs and is forgotten, and it stays paused until the new owner resumes it; a
    trigger or subscription acts as the new owner from now on."""
    if isinstance(row, Schedule):
        row.env = {}
        row.standing_thread = None
        row.paused = True
        row.paused_reason = (
            f"Handed to {new_owner.get_username()} by {by.get_username()}: paused until "
            f"{new_owner.get_username()} resumes it."
        )
    elif isinstance(row, Trigger):
        row.disabled_reason = ""
    else:
        row.active, row.disabled_reason = True, ""
    row.owner = new_owner
