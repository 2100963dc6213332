"""Outbound webhook subscriptions and their deliveries over HTTP (docs/automation.md)."""

from __future__ import annotations

from typing import Any

from ninja import Field, Router, Schema, Status

from agents_app.api.authed import AuthedRequest
from agents_app.api.automation_responses import (
    DeletedOut,
    DeliveriesOut,
    DeliveryOut,
    SubscriptionOut,
    SubscriptionsOut,
)
from agents_app.api.schemas import ERRORS
from agents_app.base.errors import NotFound
from agents_app.models import WebhookDelivery, WebhookSubscription
from agents_app.orchestration.webhook_runner import enqueue
from agents_app.selectors import parse_uuid
from agents_app.services.automation import owner_rights, webhooks

router = Router(tags=["webhooks"])


class SubscriptionIn(Schema):
    url: str = Field(..., min_length=1, max_length=2000)
    secretEnv: str = Field(..., min_length=1, max_length=128)
    events: list[str] = Field(..., min_length=1, max_length=10)
    agent: str | None = Field(None, max_length=128)


def _managed(request: AuthedRequest) -> Any:
    """The subscriptions the user may manage: theirs, or anyone's with
    ``manage_others_webhooksubscription``."""
    rows = WebhookSubscription.objects.select_related("agent", "owner")
    return owner_rights.managed_by(request.auth, "webhooksubscription", rows)


def _subscription(request: AuthedRequest, subscription_id: str) -> WebhookSubscription:
    pk = parse_uuid(subscription_id)
    row = _managed(request).filter(pk=pk).first() if pk else None
    if row is None:
        raise NotFound(f"Webhook not found: {subscription_id}")
    return row


@router.post("", response={201: SubscriptionOut, **ERRORS}, summary="Subscribe")
def webhook_create(request: AuthedRequest, payload: SubscriptionIn) -> Status[dict[str, Any]]:
    row = webhooks.subscription_create(
        owner=request.auth,
        url=payload.url,
        secret_env=payload.secretEnv,
        events=payload.events,
        agent_name=payload.agent,
    )
    return Status(201, webhooks.subscription_wire(row))


@router.get("", response={200: SubscriptionsOut, **ERRORS}, summary="Subscriptions")
def webhook_list(request: AuthedRequest) -> dict[str, Any]:
    return {"webhooks": [webhooks.subscription_wire(r) for r in _managed(request)]}


@router.delete("/{subscription_id}", response={200: DeletedOut, **ERRORS}, summary="Unsubscribe")
def webhook_delete(request: AuthedRequest, subscription_id: str) -> dict[str, Any]:
    _subscription(request, subscription_id).delete()
    return {"deleted": True, "id": subscription_id}


@router.get(
    "/{subscription_id}/deliveries", response={200: DeliveriesOut, **ERRORS}, summary="Deliveries"
)
def delivery_list(request: AuthedRequest, subscription_id: str) -> dict[str, Any]:
    rows = _subscription(request, subscription_id).deliveries.order_by("-created_at")[:100]
    return {"deliveries": [webhooks.delivery_wire(r) for r in rows]}


@router.post(
    "/{subscription_id}/deliveries/{delivery_id}/redeliver",
    response={200: DeliveryOut, **ERRORS},
    summary="Redeliver",
)
def delivery_redeliver(
    request: AuthedRequest, subscription_id: str, delivery_id: str
) -> dict[str, Any]:
    pk = parse_uuid(delivery_id)
    subscription = _subscription(request, subscription_id)
    if pk is None or not WebhookDelivery.objects.filter(pk=pk, subscription=subscription).exists():
        raise NotFound(f"Delivery not found: {delivery_id}")
    row = webhooks.redeliver(str(pk))
    enqueue([str(row.pk)])
    return webhooks.delivery_wire(row)
