"""Instance-level routes the reference studio calls: ``/config``, ``/providers`` (+ icons),
``/diagnostics``. ``/auth/config`` lives in ``auth``; thread diagnostics in ``logs``."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import Router

from agents_app.api.instance_responses import (
    InstanceConfigOut,
    ProvidersOut,
    ProviderToolsOut,
    WarningsOut,
)
from agents_app.api.schemas import ERRORS
from agents_app.base.errors import NotFound
from agents_app.services.definitions.provider_tools import provider_tools
from agents_app.services.operations import instance_info

router = Router(tags=["instance"])

# A neutral badge: the provider's initial on a rounded square (we ship no vendor logos).
_ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32" width="32" height="32">'
    '<rect width="32" height="32" rx="6" fill="#4b5563"/>'
    '<text x="16" y="21" font-family="sans-serif" font-size="16" fill="#fff" '
    'text-anchor="middle">{letter}</text></svg>'
)


@router.get(
    "/config", auth=None, response={200: InstanceConfigOut}, summary="Instance configuration"
)
def config(request: HttpRequest) -> dict[str, Any]:
    return instance_info.instance_config()


@router.get("/providers", response={200: ProvidersOut, **ERRORS}, summary="Providers")
def provider_list(request: HttpRequest) -> dict[str, Any]:
    return {"providers": instance_info.providers()}


@router.get(
    "/providers/{name}/icon",
    auth=None,
    summary="A provider's icon (SVG)",
    openapi_extra={"responses": {"200": {"description": "OK", "content": {"image/svg+xml": {}}}}},
)
def provider_icon(request: HttpRequest, name: str) -> HttpResponse:
    if not instance_info.is_provider(name):
        raise NotFound(f"Provider not found: {name}")
    response = HttpResponse(_ICON.format(letter=name[:1].upper()), content_type="image/svg+xml")
    response["Cache-Control"] = "public, max-age=86400"
    response["X-Content-Type-Options"] = "nosniff"
    return response


@router.get(
    "/providers/{name}/tools", response={200: ProviderToolsOut, **ERRORS}, summary="Provider tools"
)
def provider_tool_list(request: HttpRequest, name: str, model: str | None = None) -> dict[str, Any]:
    """The tools the vendor runs itself for ``model`` (a model definition name or the
    vendor's model id), usable in prompts as ``provider:<name>``."""
    return {"tools": provider_tools(name, model)}


@router.get("/diagnostics", response={200: WarningsOut, **ERRORS}, summary="Definition warnings")
def diagnostics(request: HttpRequest) -> dict[str, Any]:
    return {"warnings": instance_info.warnings()}
