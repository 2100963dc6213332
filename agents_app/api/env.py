"""Instance env (staff) and the caller's own env; secrets are write-only.

``GET`` lists names, types and times (and the value of ``text`` entries only);
``PATCH`` takes the reference's ``env_patch`` / ``env_type_patch`` / ``env_delete``.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Field, Router, Schema

from agents_app import selectors
from agents_app.api.account_responses import EnvVariablesOut
from agents_app.api.authed import AuthedRequest
from agents_app.api.responses import SuccessOut
from agents_app.api.schemas import ERRORS
from agents_app.models import EnvValue
from agents_app.services.env.writes import EnvPatch, env_apply

router = Router(tags=["env"])


class EnvPatchIn(Schema):
    env_patch: dict[str, str] | None = None
    env_type_patch: dict[str, str] | None = None
    env_delete: list[str] | None = Field(None, max_length=1000)


def _patch(payload: EnvPatchIn) -> EnvPatch:
    return EnvPatch(
        patch=payload.env_patch or {},
        type_patch=payload.env_type_patch or {},
        delete=payload.env_delete or [],
    )


@router.get(
    "/envs/instance", response={200: EnvVariablesOut, **ERRORS}, summary="Instance env (staff)"
)
def instance_env(request: HttpRequest) -> dict[str, Any]:
    return {"variables": selectors.env_variables(EnvValue.Scope.INSTANCE)}


@router.patch("/envs/instance", response={200: SuccessOut, **ERRORS}, summary="Patch instance env")
def instance_env_patch(request: AuthedRequest, payload: EnvPatchIn) -> dict[str, Any]:
    env_apply(scope=EnvValue.Scope.INSTANCE, patch=_patch(payload), actor=request.auth)
    return {"success": True}


@router.get("/users/me/env", response={200: EnvVariablesOut, **ERRORS}, summary="My env")
def my_env(request: AuthedRequest) -> dict[str, Any]:
    user = request.auth
    return {"variables": selectors.env_variables(EnvValue.Scope.USER, user=user)}


@router.patch("/users/me/env", response={200: SuccessOut, **ERRORS}, summary="Patch my env")
def my_env_patch(request: AuthedRequest, payload: EnvPatchIn) -> dict[str, Any]:
    user = request.auth
    env_apply(scope=EnvValue.Scope.USER, patch=_patch(payload), user=user, actor=user)
    return {"success": True}
