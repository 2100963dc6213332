"""The reference studio's editor writes: ``POST /api/{agents|prompts|models}``,
``PUT``/``DELETE …/{name}`` (staff only). Same services and validation as the admin."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest
from ninja import Router, Status

from agents_app.api import catalog
from agents_app.api.authed import AuthedRequest
from agents_app.api.definition_responses import (
    DefinitionDeletedOut,
    DefinitionWrittenOut,
    RejectedOut,
)
from agents_app.api.schemas import ERRORS
from agents_app.base.errors import Invalid
from agents_app.services.definitions.writes import (
    DefinitionRejected,
    Kind,
    definition_delete,
    definition_write,
)

_SINGULAR = {"agents": "agent", "prompts": "prompt", "models": "model"}


def _shape(kind: Kind, name: str) -> dict[str, Any]:
    if kind == "agents":
        return catalog.agent_get_data(name)
    if kind == "prompts":
        return catalog.prompt_get_data(name)
    return catalog.model_get_data(name)


def _body(request: HttpRequest) -> dict[str, Any]:
    try:
        data = json.loads(request.body or b"{}")
    except ValueError:
        raise Invalid("Invalid JSON body") from None
    if not isinstance(data, dict):
        raise Invalid("Invalid request: body must be an object")
    return data


def _create(request: AuthedRequest, kind: Kind) -> Any:
    try:
        written = definition_write(kind, _body(request), author=request.auth)
    except DefinitionRejected as exc:
        return Status(400, {"error": "Validation failed", "fieldErrors": exc.field_errors})
    return Status(
        201, {"success": True, _SINGULAR[kind]: _shape(kind, written.name), "filePath": None}
    )


def _update(request: AuthedRequest, kind: Kind, name: str) -> Any:
    try:
        written = definition_write(
            kind,
            _body(request),
            name=name,
            author=request.auth,
        )
    except DefinitionRejected as exc:
        return Status(400, {"error": "Validation failed", "fieldErrors": exc.field_errors})
    answer: dict[str, Any] = {
        "success": True,
        _SINGULAR[kind]: _shape(kind, written.name),
        "filePath": None,
    }
    if written.renamed is not None:
        answer["renamed"] = {"from": written.renamed.old, "to": written.renamed.new}
        answer["updatedPrompts"] = written.renamed.prompts
        if kind != "models":
            answer["updatedAgents"] = written.renamed.agents
    return Status(200, answer)


def _delete(request: HttpRequest, kind: Kind, name: str) -> dict[str, Any]:
    definition_delete(kind, name)
    return {"success": True, "deleted": name, "filePath": None}


RESPONSES: dict[int, Any] = {
    **ERRORS,
    200: DefinitionWrittenOut,
    201: DefinitionWrittenOut,
    400: RejectedOut,
}
DELETED: dict[int, Any] = {**ERRORS, 200: DefinitionDeletedOut}


def register(router: Router) -> None:
    """Add the write operations to ``router``, the catalog's: ninja serves one path from
    one router, so ``POST /prompts`` must live beside ``GET /prompts``."""

    @router.post("/agents", response=RESPONSES, summary="Create an agent (staff)")
    def agent_create(request: AuthedRequest) -> Any:
        return _create(request, "agents")

    @router.put("/agents/{name}", response=RESPONSES, summary="Update an agent (staff)")
    def agent_update(request: AuthedRequest, name: str) -> Any:
        return _update(request, "agents", name)

    @router.delete("/agents/{name}", response=DELETED, summary="Delete an agent (staff)")
    def agent_delete(request: HttpRequest, name: str) -> Any:
        return _delete(request, "agents", name)

    @router.post("/prompts", response=RESPONSES, summary="Create a prompt (staff)")
    def prompt_create(request: AuthedRequest) -> Any:
        return _create(request, "prompts")

    @router.put("/prompts/{name}", response=RESPONSES, summary="Update a prompt (staff)")
    def prompt_update(request: AuthedRequest, name: str) -> Any:
        return _update(request, "prompts", name)

    @router.delete("/prompts/{name}", response=DELETED, summary="Delete a prompt (staff)")
    def prompt_delete(request: HttpRequest, name: str) -> Any:
        return _delete(request, "prompts", name)

    @router.post("/models", response=RESPONSES, summary="Create a model (staff)")
    def model_create(request: AuthedRequest) -> Any:
        return _create(request, "models")

    @router.put("/models/{name}", response=RESPONSES, summary="Update a model (staff)")
    def model_update(request: AuthedRequest, name: str) -> Any:
        return _update(request, "models", name)

    @router.delete("/models/{name}", response=DELETED, summary="Delete a model (staff)")
    def model_delete(request: HttpRequest, name: str) -> Any:
        return _delete(request, "models", name)
