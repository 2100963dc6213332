"""Remote A2A agents (``a2a:<name>`` tools) as definitions over the API: ``GET``/``POST
/api/a2a-agents``, ``GET``/``PUT``/``DELETE /api/a2a-agents/{name}`` (docs/api.md, "The A2A
client"). The studio's model permissions on A2A agents decide who may do what, and a write
follows the studio form's rules (``services/definitions/a2a_writes.py``)."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest
from ninja import Router, Status

from agents_app.api.authed import AuthedRequest
from agents_app.api.definition_responses import RejectedOut
from agents_app.api.responses import Bool, Int, Object, Out, Str, StrOrNull, Value
from agents_app.api.schemas import ERRORS
from agents_app.base.errors import Invalid
from agents_app.services.definitions.a2a_writes import (
    RemoteRejected,
    remote_delete,
    remote_get,
    remote_list,
    remote_wire,
    remote_write,
)

router = Router(tags=["a2a-agents"])


class A2aAgentOut(Out):
    name: Str
    url: Str
    description: Str
    headers: Object
    timeoutMs: Int
    enabled: Bool
    card: Value
    cardFetchedAt: StrOrNull
    lastError: Str
    createdAt: Str
    updatedAt: Str


class A2aAgentsOut(Out):
    a2aAgents: list[A2aAgentOut]


class A2aAgentOneOut(Out):
    a2aAgent: A2aAgentOut


class A2aAgentDeletedOut(Out):
    success: Bool
    deleted: Str


WRITTEN: dict[int, Any] = {**ERRORS, 200: A2aAgentOneOut, 201: A2aAgentOneOut, 400: RejectedOut}


def _body(request: HttpRequest) -> dict[str, Any]:
    try:
        data = json.loads(request.body or b"{}")
    except ValueError:
        raise Invalid("Invalid JSON body") from None
    if not isinstance(data, dict):
        raise Invalid("Invalid request: body must be an object")
    return data


def _rejected(exc: RemoteRejected) -> Any:
    return Status(400, {"error": "Validation failed", "fieldErrors": exc.field_errors})


@router.get("", response={**ERRORS, 200: A2aAgentsOut}, summary="List remote A2A agents")
def a2a_agent_list(request: HttpRequest) -> Any:
    return {"a2aAgents": [remote_wire(row) for row in remote_list()]}


@router.post("", response=WRITTEN, summary="Create a remote A2A agent")
def a2a_agent_create(request: AuthedRequest) -> Any:
    try:
        row = remote_write(_body(request), actor=request.auth, author=request.auth)
    except RemoteRejected as exc:
        return _rejected(exc)
    return Status(201, {"a2aAgent": remote_wire(row)})


@router.get("/{name}", response={**ERRORS, 200: A2aAgentOneOut}, summary="A remote A2A agent")
def a2a_agent_get(request: HttpRequest, name: str) -> Any:
    return {"a2aAgent": remote_wire(remote_get(name))}


@router.put("/{name}", response=WRITTEN, summary="Update a remote A2A agent")
def a2a_agent_update(request: AuthedRequest, name: str) -> Any:
    try:
        row = remote_write(_body(request), actor=request.auth, name=name, author=request.auth)
    except RemoteRejected as exc:
        return _rejected(exc)
    return {"a2aAgent": remote_wire(row)}


@router.delete(
    "/{name}", response={**ERRORS, 200: A2aAgentDeletedOut}, summary="Delete a remote A2A agent"
)
def a2a_agent_delete(request: HttpRequest, name: str) -> Any:
    remote_delete(name)
    return {"success": True, "deleted": name}
