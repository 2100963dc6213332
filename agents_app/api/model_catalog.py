"""Model discovery routes (staff, like the rest of the catalog).

- ``GET /providers/{name}/models?search=&page=&perPage=&refresh=&model=``: one page of the
  provider's models in the spec's ``ProviderModelInfo`` shape (camelCase).
- The reference studio's helpers: ``POST /models/available``, ``POST /models/capabilities``,
  ``POST /models/endpoints`` (reference shapes, docs/api.md).

``model`` names a model definition whose base URL is used (a proxy or a compatible
server); raw URLs are not taken here, so the API never sends a key to an address no
model definition names. Vendor failures answer 502 with the reason in plain words.
"""

from __future__ import annotations

from typing import Any

from ninja import Field, Query, Router, Schema

from agents_app.api.authed import AuthedRequest
from agents_app.api.definition_responses import (
    CapabilitiesOut,
    EndpointsOut,
    ModelOptionsOut,
    ProviderModelsOut,
)
from agents_app.api.schemas import ERRORS, ErrorOut
from agents_app.base.errors import Invalid
from agents_app.services.definitions import model_catalog as catalog
from runtime.providers.discovery import ModelCapabilityHints, ProviderModelInfo

router = Router(tags=["catalog"])
RESPONSES: dict[int, Any] = {**ERRORS, 502: ErrorOut}


def _answers(body: Any) -> dict[int, Any]:
    return {200: body, **RESPONSES}


class ModelsQuery(Schema):
    search: str = Field("", max_length=200)
    page: int = Field(1, ge=1, le=10_000)
    per_page: int = Field(50, ge=1, le=200, alias="perPage")
    refresh: bool = False
    model: str | None = Field(None, max_length=128)


@router.get(
    "/providers/{name}/models",
    response=_answers(ProviderModelsOut),
    summary="A provider's models (staff)",
)
def provider_models(
    request: AuthedRequest, name: str, params: Query[ModelsQuery]
) -> dict[str, Any]:
    page = catalog.provider_models_page(
        name,
        user=request.auth,
        base_url=catalog.model_base_url(params.model, name),
        search=params.search,
        page=params.page,
        per_page=params.per_page,
        refresh=params.refresh,
    )
    return {"provider": name, **page.dump()}


class AvailableIn(Schema):
    provider: str = Field(..., max_length=32)
    search: str | None = Field(None, max_length=200)
    filter: str | None = Field(None, max_length=200)
    page: int = Field(1, ge=1, le=10_000)
    per_page: int = Field(50, ge=1, le=200, alias="perPage")
    refresh: bool = False
    model: str | None = Field(None, max_length=128)


def _option(m: ProviderModelInfo) -> dict[str, Any]:
    """One picker option in the reference's shape (``value``/``label`` + snake_case extras)."""
    item = {
        "value": m.id,
        "label": m.name,
        "description": m.description,
        "slug": m.slug,
        "iconId": m.icon_id,
        "input_price": m.input_price,
        "output_price": m.output_price,
        "cached_price": m.cached_price,
        "context_length": m.context_length,
        "max_output_tokens": m.max_output_tokens,
        "capabilities": _reference_capabilities(m.capabilities, m) or None,
    }
    return {k: v for k, v in item.items() if v is not None}


def _reference_capabilities(
    caps: ModelCapabilityHints, model: ProviderModelInfo | None = None
) -> dict[str, Any]:
    """Capability hints under the reference's names (only what the vendor stated)."""
    out = {
        "supportsImages": caps.vision,
        "supportsToolCalls": caps.function_calling,
        "supportsJsonMode": caps.structured_outputs,
        "maxContextTokens": model.context_length if model else None,
        "maxOutputTokens": model.max_output_tokens if model else None,
    }
    return {k: v for k, v in out.items() if v is not None}


@router.post(
    "/models/available", response=_answers(ModelOptionsOut), summary="Models to pick from (staff)"
)
def models_available(request: AuthedRequest, payload: AvailableIn) -> dict[str, Any]:
    page = catalog.provider_models_page(
        payload.provider,
        user=request.auth,
        base_url=catalog.model_base_url(payload.model, payload.provider),
        search=payload.search or payload.filter or "",
        page=payload.page,
        per_page=payload.per_page,
        refresh=payload.refresh,
    )
    return {
        "models": [_option(m) for m in page.models],
        "hasNextPage": page.has_next_page,
        "page": page.page,
        "total": page.total,
    }


class CapabilitiesIn(Schema):
    provider: str = Field(..., max_length=32)
    model_id: str = Field(..., min_length=1, max_length=200, alias="modelId")
    model: str | None = Field(None, max_length=128)


@router.post(
    "/models/capabilities", response=_answers(CapabilitiesOut), summary="One model's capabilities"
)
def models_capabilities(request: AuthedRequest, payload: CapabilitiesIn) -> dict[str, Any]:
    base_url = catalog.model_base_url(payload.model, payload.provider)
    models = catalog.list_provider_models(
        payload.provider,
        user=request.auth,
        base_url=base_url,
    )
    found = next((m for m in models if m.id == payload.model_id.removeprefix("models/")), None)
    if found is None:
        return {"capabilities": None}
    return {"capabilities": _reference_capabilities(found.capabilities, found)}


class EndpointsIn(Schema):
    provider: str = Field(..., max_length=32)
    model_slug: str = Field(..., min_length=1, max_length=200, alias="modelSlug")
    model: str | None = Field(None, max_length=128)


@router.post(
    "/models/endpoints", response=_answers(EndpointsOut), summary="OpenRouter upstreams of a model"
)
def models_endpoints(request: AuthedRequest, payload: EndpointsIn) -> dict[str, Any]:
    if payload.provider != "openrouter":
        raise Invalid("Only OpenRouter routes a model to several upstream endpoints.")
    rows = catalog.openrouter_endpoints(
        payload.model_slug,
        user=request.auth,
        base_url=catalog.model_base_url(payload.model, "openrouter"),
    )
    return {"endpoints": rows}
