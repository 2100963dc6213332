"""``/api/users``: the users admin API (spec 0.2.0 F7) and credential grants (F6).

Accounts (``GET``/``POST /users``, ``PUT``/``DELETE /users/{id}``) and another person's env
(``GET``/``PATCH /users/{id}/env``) need Django's user and env permissions; the rules are in
``services.users.admin``. Grants (``/users/{id}/grants``, ``/users/me/grants``, and the
instance's ``/grants``) are write-only: every answer names and describes a grant, none
carries its secret (``services.users.grants``). Unknown fields are refused by name.
"""

from __future__ import annotations

from typing import Any

from ninja import Field, Router, Schema
from ninja.responses import Status
from pydantic import ConfigDict

from agents_app import selectors
from agents_app.api.account_responses import EnvVariablesOut
from agents_app.api.authed import AuthedRequest
from agents_app.api.env import EnvPatchIn, _patch
from agents_app.api.responses import (
    Bool,
    Int,
    IntOrNull,
    Object,
    Out,
    Str,
    Strings,
    SuccessOut,
    Value,
)
from agents_app.api.schemas import ERRORS, ErrorOut
from agents_app.models import EnvValue
from agents_app.services.env.writes import env_apply
from agents_app.services.users import admin, grants

router = Router(tags=["users"])
instance_grants = Router(tags=["users"])


class UserOut(Out):
    id: Int
    username: Str
    role: Str
    permissions: Strings
    active: Bool
    created_at: IntOrNull


class UserListOut(Out):
    users: list[UserOut]


class UserOneOut(Out):
    user: UserOut


class UserEnvOut(EnvVariablesOut):
    user: Object


class GrantOut(Out):
    name: Str
    kind: Str
    scope: Str
    origins: Strings
    inject: Object
    allow: Value
    metadata: Object
    created_at: Int
    updated_at: Int


class GrantListOut(Out):
    grants: list[GrantOut]


class GrantOneOut(Out):
    grant: GrantOut


class UserCreateIn(Schema):
    model_config = ConfigDict(extra="forbid")

    username: str = Field(..., max_length=150)
    password: str = Field(..., max_length=4096)
    role: str = "user"


class UserUpdateIn(Schema):
    model_config = ConfigDict(extra="forbid")

    username: str | None = Field(None, max_length=150)
    password: str | None = Field(None, max_length=4096)
    role: str | None = None
    permissions: list[str] | None = Field(None, max_length=500)


class UserEnvPatchIn(EnvPatchIn):
    model_config = ConfigDict(extra="forbid")


class GrantAllowIn(Schema):
    model_config = ConfigDict(extra="forbid")

    tools: list[str] = Field(default_factory=list, max_length=200)
    endpoints: list[str] = Field(default_factory=list, max_length=200)
    userEndpoints: list[str] = Field(default_factory=list, max_length=200)  # noqa: N815
    agents: list[str] = Field(default_factory=list, max_length=200)


class GrantIn(Schema):
    model_config = ConfigDict(extra="forbid")

    kind: str
    secret: str | None = Field(
        None,
        max_length=grants.SECRET_MAX,
        description="Write-only. Needed to create a grant, and again to change its kind, "
        "origins or inject; absent: the stored secret is kept.",
    )
    origins: list[str] = Field(..., max_length=grants.ORIGINS_MAX)
    inject: dict[str, str] = Field(default_factory=dict)
    allow: GrantAllowIn | None = Field(None, description="Absent: nobody may use the grant.")
    metadata: dict[str, Any] = Field(default_factory=dict)


# --- accounts --------------------------------------------------------------------------------


@router.get("", response={200: UserListOut, **ERRORS}, summary="List accounts (admin)")
def users_list(request: AuthedRequest) -> dict[str, Any]:
    return {"users": admin.user_list()}


@router.post("", response={201: UserOneOut, **ERRORS}, summary="Create an account (admin)")
def users_create(request: AuthedRequest, payload: UserCreateIn) -> Status:
    user = admin.user_create(
        username=payload.username, password=payload.password, role=payload.role, actor=request.auth
    )
    return Status(201, {"user": admin.user_json(user)})


@router.put("/{user_id}", response={200: UserOneOut, **ERRORS}, summary="Change an account")
def users_update(request: AuthedRequest, user_id: int, payload: UserUpdateIn) -> dict[str, Any]:
    given = payload.model_dump(exclude_unset=True)
    user = admin.user_update(admin.user_get(user_id), actor=request.auth, **given)
    return {"user": admin.user_json(user)}


@router.delete("/{user_id}", response={200: SuccessOut, **ERRORS}, summary="Delete an account")
def users_delete(request: AuthedRequest, user_id: int) -> dict[str, Any]:
    admin.user_delete(admin.user_get(user_id), actor=request.auth)
    return {"success": True}


@router.get("/{user_id}/env", response={200: UserEnvOut, **ERRORS}, summary="A person's env")
def users_env(request: AuthedRequest, user_id: int) -> dict[str, Any]:
    user = admin.user_get(user_id)
    return {
        "variables": selectors.env_variables(EnvValue.Scope.USER, user=user),
        "user": {"id": user.pk, "username": user.get_username()},
    }


@router.patch("/{user_id}/env", response={200: SuccessOut, **ERRORS}, summary="Patch their env")
def users_env_patch(
    request: AuthedRequest, user_id: int, payload: UserEnvPatchIn
) -> dict[str, Any]:
    user = admin.user_get(user_id)
    env_apply(scope=EnvValue.Scope.USER, patch=_patch(payload), user=user, actor=request.auth)
    return {"success": True}


# --- the user event stream: a WebSocket (agents_app.sockets.user_stream) ---------------------

WEBSOCKET_ONLY = "This endpoint only supports WebSocket connections"
_STREAM_ERRORS: dict[int, Any] = {426: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut}


@router.get("/me/stream", response=_STREAM_ERRORS, summary="Your user events (WebSocket only)")
def my_stream_http(request: AuthedRequest) -> Status:
    # The reference answers a plain GET here with 426 Upgrade Required.
    return Status(426, {"error": WEBSOCKET_ONLY})


@router.get("/{user_id}/stream", response=_STREAM_ERRORS, summary="Their user events (WebSocket)")
def user_stream_http(request: AuthedRequest, user_id: int) -> Status:
    admin.user_get(user_id)
    return Status(426, {"error": WEBSOCKET_ONLY})


# --- grants ----------------------------------------------------------------------------------


def _put(
    request: AuthedRequest, user_id: int | None, name: str, payload: GrantIn
) -> dict[str, Any]:
    settings = payload.model_dump(exclude={"kind", "secret"}, exclude_unset=True)
    view = grants.grant_put(
        user_id=user_id,
        name=name,
        kind=payload.kind,
        secret=payload.secret,
        settings=settings,
        actor=request.auth,
    )
    return {"grant": view.as_json()}


def _list(user_id: int | None) -> dict[str, Any]:
    return {"grants": [g.as_json() for g in grants.grant_list(user_id=user_id)]}


@router.get("/me/grants", response={200: GrantListOut, **ERRORS}, summary="My grants")
def my_grants(request: AuthedRequest) -> dict[str, Any]:
    return _list(request.auth.pk)


@router.put("/me/grants/{name}", response={200: GrantOneOut, **ERRORS}, summary="Set my grant")
def my_grant_put(request: AuthedRequest, name: str, payload: GrantIn) -> dict[str, Any]:
    return _put(request, request.auth.pk, name, payload)


@router.delete("/me/grants/{name}", response={200: SuccessOut, **ERRORS}, summary="Drop my grant")
def my_grant_delete(request: AuthedRequest, name: str) -> dict[str, Any]:
    grants.grant_delete(user_id=request.auth.pk, name=name)
    return {"success": True}


@router.get("/{user_id}/grants", response={200: GrantListOut, **ERRORS}, summary="Their grants")
def user_grants(request: AuthedRequest, user_id: int) -> dict[str, Any]:
    return _list(admin.user_get(user_id).pk)


@router.put(
    "/{user_id}/grants/{name}", response={200: GrantOneOut, **ERRORS}, summary="Set their grant"
)
def user_grant_put(
    request: AuthedRequest, user_id: int, name: str, payload: GrantIn
) -> dict[str, Any]:
    return _put(request, admin.user_get(user_id).pk, name, payload)


@router.delete(
    "/{user_id}/grants/{name}", response={200: SuccessOut, **ERRORS}, summary="Drop their grant"
)
def user_grant_delete(request: AuthedRequest, user_id: int, name: str) -> dict[str, Any]:
    grants.grant_delete(user_id=admin.user_get(user_id).pk, name=name)
    return {"success": True}


@instance_grants.get("", response={200: GrantListOut, **ERRORS}, summary="Instance grants")
def instance_grant_list(request: AuthedRequest) -> dict[str, Any]:
    return _list(None)


@instance_grants.put("/{name}", response={200: GrantOneOut, **ERRORS}, summary="Set one")
def instance_grant_put(request: AuthedRequest, name: str, payload: GrantIn) -> dict[str, Any]:
    return _put(request, None, name, payload)


@instance_grants.delete("/{name}", response={200: SuccessOut, **ERRORS}, summary="Drop one")
def instance_grant_delete(request: AuthedRequest, name: str) -> dict[str, Any]:
    grants.grant_delete(user_id=None, name=name)
    return {"success": True}
