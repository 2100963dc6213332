"""The caller's API keys: list, create (the key is shown once), delete.

Only a signed-in person creates keys (the session cookie, or a login token from
``POST /api/auth/login``): a key that could mint keys would keep a leaked key alive
past its own revocation, through the keys it made."""

from __future__ import annotations

from typing import Any

from ninja import Field, Router, Schema
from ninja.responses import Status

from agents_app import wire
from agents_app.api.account_responses import ApiKeyCreatedOut, ApiKeyListOut
from agents_app.api.authed import AuthedRequest
from agents_app.api.limits import limited
from agents_app.api.responses import SuccessOut
from agents_app.api.schemas import ERRORS
from agents_app.base.errors import Invalid, NotFound
from agents_app.models import ApiKey
from agents_app.services.access.api_keys import ApiKeyNameInvalid, api_key_create, api_key_revoke

router = Router(tags=["api-keys"])


class KeyIn(Schema):
    name: str = Field(..., max_length=100)


def _key(row: ApiKey) -> dict[str, Any]:
    return {
        "id": str(row.pk),
        "name": row.name,
        "key_prefix": row.key_prefix,
        "last_five": row.last_five,
        "source": "local",
        "created_at": wire.seconds(row.created_at),
        "last_used_at": wire.seconds(row.last_used_at),
    }


@router.get("", response={200: ApiKeyListOut, **ERRORS}, summary="My API keys")
def key_list(request: AuthedRequest) -> dict[str, Any]:
    rows = ApiKey.objects.filter(user=request.auth, revoked_at__isnull=True)
    return {"keys": [_key(r) for r in rows.order_by("-created_at")]}


@router.post(
    "", response={201: ApiKeyCreatedOut, **ERRORS}, summary="Create an API key (shown once)"
)
@limited("api_key_create")
def key_create(request: AuthedRequest, payload: KeyIn) -> Status:
    # An API key never gets here: the route's rule is InPerson (agents_app.base.permissions).
    try:
        row, raw = api_key_create(user=request.auth, name=payload.name)
    except ApiKeyNameInvalid as exc:
        raise Invalid(str(exc)) from None
    data = _key(row)
    data.pop("last_used_at")
    data.pop("source")
    return Status(201, {"key": raw, **data})


@router.delete("/{key_id}", response={200: SuccessOut, **ERRORS}, summary="Delete one of my keys")
def key_delete(request: AuthedRequest, key_id: str) -> dict[str, Any]:
    row = (
        ApiKey.objects.filter(pk=int(key_id), user=request.auth, revoked_at__isnull=True).first()
        if key_id.isdigit() and len(key_id) < 18
        else None
    )
    if row is None:
        raise NotFound("API key not found")
    api_key_revoke(api_key=row)
    return {"success": True}
