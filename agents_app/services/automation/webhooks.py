"""Outbound webhooks: subscriptions, the events that make deliveries, signing, claims and
attempts (docs/automation.md, "Webhooks").

A delivery is a row first (one per subscription, event and subject: an event recorded
twice is delivered once); attempts claim it with a conditional UPDATE
(``pending`` and due → ``delivering``), so one attempt is in flight at a time whoever
sends it (the task enqueued on commit, the retry sweep, a redeliver). Failed attempts
wait with exponential backoff until ``STUDIO_WEBHOOK_GIVE_UP_SECONDS`` after creation.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q, Sum
from django.utils import timezone

from agents_app.base.errors import Invalid, NotFound
from agents_app.models import (
    Agent,
    EnvValue,
    Log,
    Message,
    Schedule,
    Thread,
    WebhookDelivery,
    WebhookSubscription,
)
from agents_app.models.webhooks import EVENTS
from agents_app.selectors import is_offered
from agents_app.services.automation import owner_rights
from runtime.core import egress

SIGNATURE_HEADER = "Webhook-Signature"
TIMESTAMP_HEADER = "Webhook-Timestamp"
ID_HEADER = "Webhook-Id"
EVENT_HEADER = "Webhook-Event"


def check_url(url: str) -> str:
    """http(s) with a host, no credentials, and an address the egress policy allows
    (runtime/core/egress.py: loopback, private, link-local and metadata addresses only when
    ``STUDIO_EGRESS_ALLOW`` lists them). Each delivery is checked again when sent (names
    can move)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:  # unbalanced brackets, no IP address inside them
        raise Invalid(f"url: not a well-formed URL ({exc})") from None
    try:
        port = parts.port  # parsed only when asked for
    except ValueError:
        port = 0
    if port == 0:
        raise Invalid("url: the port must be a number from 1 to 65535")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Invalid("url: an http(s) URL with a host")
    if any(c.isspace() or not c.isprintable() for c in parts.hostname):
        raise Invalid("url: the host has spaces or control characters")
    if parts.username or parts.password:
        raise Invalid("url: no credentials in the URL (sign with the secret instead)")
    refused = egress.refusal(url.strip())
    if refused:
        raise Invalid(f"url: {refused}")
    return url.strip()


def subscription_create(
    *,
    owner: Any,
    url: str,
    secret_env: str,
    events: list[str],
    agent_name: str | None = None,
) -> WebhookSubscription:
    """A subscription of ``owner``: its deliveries carry only what they may read."""
    unknown = sorted(set(events) - set(EVENTS))
    if not events or unknown:
        raise Invalid(
            f"events: choose from {', '.join(EVENTS)}" + (f" (not {unknown})" if unknown else "")
        )
    agent = None
    if agent_name:
        agent = Agent.objects.filter(name=agent_name).first()
        if agent is None or not is_offered(owner, agent.pk):
            raise NotFound(f"Agent not found: {agent_name}")
    if not secret_env.strip():
        raise Invalid("secretEnv: the name of the env value holding the signing secret")
    subscription = WebhookSubscription(
        owner=owner,
        agent=agent,
        url=check_url(url),
        secret_env=secret_env.strip(),
        events=sorted(set(events)),
    )
    secret_of(subscription)  # refused now rather than at every delivery
    subscription.save()
    return subscription


def secret_of(subscription: WebhookSubscription) -> bytes:
    """The signing secret: the agent's env value of that name, else the instance's."""
    rows = EnvValue.objects.filter(key=subscription.secret_env)
    scoped = Q(scope=EnvValue.Scope.INSTANCE)
    if subscription.agent_id:
        scoped |= Q(scope=EnvValue.Scope.AGENT, agent_id=subscription.agent_id)
    found = sorted(rows.filter(scoped), key=lambda r: r.scope != EnvValue.Scope.AGENT)
    if not found:
        raise Invalid(f"secretEnv: no env value named {subscription.secret_env}")
    return found[0].value.encode()


def sign(secret: bytes, timestamp: int, body: bytes) -> str:
    """``v1=`` HMAC-SHA256 (hex) of ``"<timestamp>.<body>"``."""
    digest = hmac.new(secret, str(timestamp).encode() + b"." + body, hashlib.sha256)
    return "v1=" + digest.hexdigest()


# --- events --------------------------------------------------------------------------------


def _subscribers(agent_id: Any, event: str) -> list[WebhookSubscription]:
    rows = (
        WebhookSubscription.objects.filter(active=True, owner__is_active=True)
        .filter(Q(agent_id=agent_id) | Q(agent__isnull=True))
        .select_related("owner")
    )
    return [r for r in rows if event in r.events]


def readable(owner: Any, event: str, payload: dict[str, Any]) -> bool:
    """Whether ``owner`` may read what a delivery of ``event`` carries, as they are now: a
    thread's events need that thread (``owner_rights.may_read``); a schedule's failure needs
    the schedule (theirs, or ``manage_others_schedule``)."""
    if owner is None or not owner.is_active:
        return False
    if "threadId" in payload:
        thread_owner = Thread.objects.filter(pk=payload["threadId"]).values_list(
            "owner_id", flat=True
        )
        return bool(thread_owner) and owner_rights.may_read(owner, thread_owner_id=thread_owner[0])
    if "scheduleId" in payload:
        schedule_owner = Schedule.objects.filter(pk=payload["scheduleId"]).values_list(
            "owner_id", flat=True
        )
        return bool(schedule_owner) and owner_rights.may_manage(
            owner, "schedule", schedule_owner[0]
        )
    return False


def record_event(agent_id: Any, event: str, subject: str, payload: dict[str, Any]) -> list[str]:
    """Deliveries for the subscribers of ``event`` whose owner may read it; ids of the new
    ones (an event recorded again for the same subject makes none)."""
    made = []
    for subscription in _subscribers(agent_id, event):
        if not readable(subscription.owner, event, payload):
            continue
        row = WebhookDelivery(
            subscription=subscription,
            event=event,
            subject=subject,
            payload={},
            next_attempt_at=timezone.now(),
        )
        row.payload = {"id": str(row.pk), "event": event, "createdAt": int(time.time()), **payload}
        try:
            with transaction.atomic():
                row.save(force_insert=True)
        except IntegrityError:
            continue
        made.append(str(row.pk))
    return made


def any_active() -> bool:
    """Whether any subscription is active: one indexed query."""
    return WebhookSubscription.objects.filter(active=True).exists()


def session_events(
    *, thread_id: str, session_id: str, agent_id: Any, agent: str, status: str, error: str
) -> list[str]:
    """The events of a session's end (``status`` as released): finished (and its final
    message completed), failed, or parked on a tool call waiting for approval. The caller
    asks ``any_active`` first (most instances subscribe to nothing)."""
    base: dict[str, Any] = {
        "agent": agent,
        "threadId": thread_id,
        "sessionId": session_id,
        "status": status,
    }
    cost = Log.objects.filter(thread_id=thread_id).aggregate(c=Sum("cost_total"))["c"]
    base["costUsd"] = float(cost or Decimal(0))
    final = (
        Message.objects.filter(thread_id=thread_id, role="assistant", status="completed")
        .exclude(content="")
        .order_by("-created_at")
        .first()
    )
    text = final.content if final else None
    made: list[str] = []
    if status == "completed":
        made += record_event(agent_id, "session.finished", session_id, {**base, "message": text})
        if final is not None:
            made += record_event(
                agent_id,
                "message.completed",
                str(final.pk),
                {**base, "messageId": str(final.pk), "message": text},
            )
    elif status == "failed":
        made += record_event(agent_id, "session.failed", session_id, {**base, "error": error})
    elif status == "parked":
        made += record_event(agent_id, "tool.waiting_approval", session_id, base)
    return made


# --- attempts ------------------------------------------------------------------------------


def claim(delivery_id: str, now: datetime | None = None) -> WebhookDelivery | None:
    """Take a due pending delivery for one attempt, or ``None`` (not due, in flight, done)."""
    now = now or timezone.now()
    taken = WebhookDelivery.objects.filter(
        pk=delivery_id, status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now
    ).update(status=WebhookDelivery.Status.DELIVERING, claimed_at=now)
    if taken != 1:
        return None
    row = WebhookDelivery.objects.select_related("subscription__owner").get(pk=delivery_id)
    # A retry a day later acts as the owner is then: one who may no longer read it (or whose
    # account was deactivated) gets nothing more.
    subscription = row.subscription
    if not subscription.active or not readable(subscription.owner, row.event, row.payload):
        WebhookDelivery.objects.filter(pk=row.pk).update(
            status=WebhookDelivery.Status.FAILED,
            error="Not sent: the subscription's owner may no longer read this event.",
        )
        return None
    return row


def request_of(row: WebhookDelivery) -> tuple[bytes, dict[str, str]]:
    """The body and headers of an attempt (signed now: a fresh timestamp each attempt)."""
    body = json.dumps(row.payload, separators=(",", ":"), sort_keys=True).encode()
    stamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        ID_HEADER: str(row.pk),
        EVENT_HEADER: row.event,
        TIMESTAMP_HEADER: str(stamp),
        SIGNATURE_HEADER: sign(secret_of(row.subscription), stamp, body),
    }
    return body, headers


def backoff(attempts: int) -> timedelta:
    seconds = settings.STUDIO_WEBHOOK_RETRY_BASE_SECONDS * 2 ** max(0, attempts - 1)
    return timedelta(seconds=min(seconds, settings.STUDIO_WEBHOOK_RETRY_MAX_SECONDS))


def attempt_done(row: WebhookDelivery, *, code: int | None, error: str = "") -> WebhookDelivery:
    """Record an attempt: 2xx delivered; else pending again after the backoff, or failed once
    the give-up time has passed."""
    now = timezone.now()
    row.attempts += 1
    row.response_code = code
    row.error = error[:2000]
    if code is not None and 200 <= code < 300:
        row.status, row.delivered_at = WebhookDelivery.Status.DELIVERED, now
    else:
        retry_at = now + backoff(row.attempts)
        give_up = row.created_at + timedelta(seconds=settings.STUDIO_WEBHOOK_GIVE_UP_SECONDS)
        if retry_at > give_up:
            row.status = WebhookDelivery.Status.FAILED
        else:
            row.status, row.next_attempt_at = WebhookDelivery.Status.PENDING, retry_at
    WebhookDelivery.objects.filter(pk=row.pk, status=WebhookDelivery.Status.DELIVERING).update(
        attempts=row.attempts,
        response_code=code,
        error=row.error,
        status=row.status,
        delivered_at=row.delivered_at,
        next_attempt_at=row.next_attempt_at,
    )
    return row


def due_deliveries(now: datetime, batch: int = 50) -> list[str]:
    """Pending deliveries due now, and ones stuck ``delivering`` (their sender died)."""
    stale = now - timedelta(seconds=settings.STUDIO_WEBHOOK_TIMEOUT_SECONDS * 3)
    WebhookDelivery.objects.filter(
        status=WebhookDelivery.Status.DELIVERING, claimed_at__lt=stale
    ).update(status=WebhookDelivery.Status.PENDING)
    rows = WebhookDelivery.objects.filter(
        status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now
    ).order_by("next_attempt_at")
    return [str(pk) for pk in rows.values_list("pk", flat=True)[:batch]]


def redeliver(delivery_id: str) -> WebhookDelivery:
    """Send a finished (delivered or failed) delivery again, same id, from now."""
    now = timezone.now()
    updated = WebhookDelivery.objects.filter(
        pk=delivery_id,
        status__in=[WebhookDelivery.Status.DELIVERED, WebhookDelivery.Status.FAILED],
    ).update(status=WebhookDelivery.Status.PENDING, next_attempt_at=now, created_at=now)
    row = WebhookDelivery.objects.filter(pk=delivery_id).first()
    if row is None:
        raise NotFound(f"Delivery not found: {delivery_id}")
    if not updated and row.status != WebhookDelivery.Status.PENDING:
        raise Invalid("The delivery is being sent; redeliver it when it has finished")
    return row


def delivery_wire(row: WebhookDelivery) -> dict[str, Any]:
    return {
        "id": str(row.pk),
        "subscriptionId": str(row.subscription_id),
        "event": row.event,
        "status": row.status,
        "attempts": row.attempts,
        "responseCode": row.response_code,
        "error": row.error or None,
        "createdAt": row.created_at.isoformat(),
        "deliveredAt": row.delivered_at.isoformat() if row.delivered_at else None,
        "nextAttemptAt": row.next_attempt_at.isoformat()
        if row.status == WebhookDelivery.Status.PENDING
        else None,
    }


def subscription_wire(row: WebhookSubscription) -> dict[str, Any]:
    return {
        "id": str(row.pk),
        "agent": row.agent.name if row.agent else None,
        "url": row.url,
        "secretEnv": row.secret_env,  # the name; the value never leaves the env store
        "events": row.events,
        "active": row.active,
        "disabledReason": row.disabled_reason or None,
        "owner": row.owner.get_username() if row.owner else None,
    }
