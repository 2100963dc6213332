"""Inbound triggers over HTTP: manage them (``/triggers``) and fire one
(``POST /inbound/<token>``, no sign-in: the token is the credential). docs/automation.md."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Field, Router, Schema, Status

from agents_app.api.authed import AuthedRequest
from agents_app.api.automation_responses import (
    TriggerOut,
    TriggersOut,
)
from agents_app.api.responses import TriggerFiredOut
from agents_app.api.schemas import ERRORS, ErrorOut
from agents_app.base.errors import NotFound
from agents_app.models import Trigger
from agents_app.orchestration.trigger_fire import fire
from agents_app.selectors import parse_uuid
from agents_app.services.automation import owner_rights, triggers

router = Router(tags=["triggers"])
inbound = Router(tags=["triggers"])


class TriggerIn(Schema):
    agent: str = Field(..., min_length=1, max_length=128)
    template: str = Field(..., min_length=1, max_length=100_000)
    name: str = Field("", max_length=200)
    secretEnv: str = Field("", max_length=128)


@router.post(
    "", response={201: TriggerOut, **ERRORS}, summary="Create a trigger (token shown once)"
)
def trigger_create(request: AuthedRequest, payload: TriggerIn) -> Status[dict[str, Any]]:
    row, token = triggers.trigger_create(
        owner=request.auth,
        agent_name=payload.agent,
        template=payload.template,
        name=payload.name,
        secret_env=payload.secretEnv,
    )
    return Status(201, triggers.trigger_wire(row, token))


def _managed(request: AuthedRequest) -> Any:
    """The triggers the user may manage: theirs, or anyone's with ``manage_others_trigger``."""
    return owner_rights.managed_by(
        request.auth, "trigger", Trigger.objects.select_related("agent", "owner")
    )


@router.get("", response={200: TriggersOut, **ERRORS}, summary="Triggers")
def trigger_list(request: AuthedRequest) -> dict[str, Any]:
    return {"triggers": [triggers.trigger_wire(r) for r in _managed(request)]}


@router.delete("/{trigger_id}", response={200: TriggerOut, **ERRORS}, summary="Revoke")
def trigger_revoke(request: AuthedRequest, trigger_id: str) -> dict[str, Any]:
    pk = parse_uuid(trigger_id)
    if pk is None:
        raise NotFound(f"Trigger not found: {trigger_id}")
    return triggers.trigger_wire(triggers.trigger_revoke(pk, _managed(request)))


@inbound.post(
    "/{token}",
    auth=None,
    response={202: TriggerFiredOut, 415: ErrorOut, **ERRORS},
    summary="Fire a trigger",
)
def trigger_fire(request: HttpRequest, token: str) -> Status[dict[str, Any]]:
    return Status(202, fire(token, request.headers, request.body))
