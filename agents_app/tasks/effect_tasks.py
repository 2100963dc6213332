"""Celery tasks for scheduled effects (thin: the work is in ``agents_app.orchestration.effect_runner``).

Beat sends ``effects_tick`` every ``STUDIO_EFFECT_SWEEP_MS``. A tick claims due runs
in the database and runs them for about one interval; nothing is ever sent with a
countdown or an eta (see docs/effects.md for why). A tick is not acknowledged late:
a lost or duplicated tick is harmless, because the next one, or the row claims,
decide what runs.
"""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from agents_app.base.task_names import WEBHOOK_DELIVER


@shared_task(name="agents_app.effects_tick", acks_late=False, ignore_result=True)
def effects_tick() -> int:
    """Claim and run due effects for about one sweep interval; how many runs it claimed."""
    from agents_app.orchestration.effect_runner import drain_for

    return drain_for(settings.STUDIO_EFFECT_SWEEP_MS / 1000)


@shared_task(name="agents_app.schedules_tick", acks_late=False, ignore_result=True)
def schedules_tick() -> int:
    """Claim and start due schedule runs for about one sweep interval (docs/automation.md)."""
    from agents_app.orchestration.schedule_runner import drain_for

    return drain_for(settings.STUDIO_SCHEDULE_SWEEP_MS / 1000)


@shared_task(name=WEBHOOK_DELIVER, acks_late=False, ignore_result=True)
def webhook_deliver(delivery_id: str) -> str | None:
    """One attempt of a webhook delivery (docs/automation.md, "Webhooks")."""
    from agents_app.orchestration.webhook_runner import deliver

    return deliver(delivery_id)


@shared_task(name="agents_app.webhooks_tick", acks_late=False, ignore_result=True)
def webhooks_tick() -> int:
    """Send the webhook deliveries whose retry is due."""
    from agents_app.orchestration.periodic import AUTOMATION

    return AUTOMATION["agents_app.webhooks_tick"]()  # type: ignore[no-any-return]
