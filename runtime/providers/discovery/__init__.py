"""Model discovery (spec 0.15 ``getModels`` / ``getModelsPage`` / ``getModelCapabilities``).

``list_models(provider, client, key, base_url)`` asks the vendor (following its paging);
``models_page(models, query)`` searches and pages a list locally (the service caches the
whole list, so paging a picker costs no vendor request); ``model_capabilities`` finds one
model's hints. No Django: the key comes from the caller, resolved as the adapters do.
"""

from __future__ import annotations

from collections.abc import Iterable

import httpx

from runtime.providers.discovery.types import (
    ModelCapabilityHints,
    ProviderModelInfo,
    ProviderModelsPage,
    ProviderModelsQuery,
    usd_per_million,
)
from runtime.providers.discovery.vendors import (
    LISTERS,
    ModelLister,
    OpenRouterLister,
    TestLister,
)

__all__ = [
    "LISTERS",
    "ModelCapabilityHints",
    "ModelLister",
    "ProviderModelInfo",
    "ProviderModelsPage",
    "ProviderModelsQuery",
    "get_model_capabilities",
    "list_models",
    "lister",
    "model_capabilities",
    "models_page",
    "usd_per_million",
]

MAX_PER_PAGE = 200


def lister(
    provider: str,
    client: httpx.AsyncClient,
    base_url: str | None = None,
    *,
    test_models: Iterable[str] = (),
) -> ModelLister:
    """The lister for ``provider``; ``KeyError`` for a provider we cannot list."""
    cls = LISTERS[provider]
    if cls is TestLister:
        return TestLister(model_ids=test_models)
    return cls(client, base_url)


async def list_models(
    provider: str,
    client: httpx.AsyncClient,
    key: str | None,
    base_url: str | None = None,
    *,
    test_models: Iterable[str] = (),
) -> list[ProviderModelInfo]:
    """Every model ``provider`` lists, sorted by id (raises ``AdapterError``)."""
    found = await lister(provider, client, base_url, test_models=test_models).list_models(key)
    unique = {m.id: m for m in found}
    return [unique[k] for k in sorted(unique)]


def models_page(models: list[ProviderModelInfo], query: ProviderModelsQuery) -> ProviderModelsPage:
    """The ``query.page``-th page of the models whose id, name or description contains every
    word of ``query.search`` (case-insensitive)."""
    words = query.search.lower().split()
    matched = [
        m
        for m in models
        if all(w in f"{m.id} {m.name} {m.description or ''}".lower() for w in words)
    ]
    per_page = max(1, min(query.per_page, MAX_PER_PAGE))
    page = max(1, query.page)
    start = (page - 1) * per_page
    return ProviderModelsPage(matched[start : start + per_page], page, per_page, len(matched))


def model_capabilities(
    models: list[ProviderModelInfo], model_id: str
) -> ModelCapabilityHints | None:
    """``model_id``'s hints from a listing (``None``: not listed)."""
    bare = model_id.removeprefix("models/")
    for m in models:
        if m.id == bare:
            return m.capabilities
    return None


async def get_model_capabilities(
    provider: str,
    client: httpx.AsyncClient,
    key: str | None,
    model_id: str,
    base_url: str | None = None,
) -> ModelCapabilityHints | None:
    """The spec's ``getModelCapabilities(modelId)``: one listing, then a lookup."""
    return model_capabilities(await list_models(provider, client, key, base_url), model_id)


async def openrouter_endpoints(
    client: httpx.AsyncClient, key: str | None, slug: str, base_url: str | None = None
) -> list[dict[str, object]]:
    """The upstream endpoints OpenRouter routes ``slug`` to (the reference's
    ``/models/endpoints``)."""
    rows = await OpenRouterLister(client, base_url).endpoints(key, slug)
    return list(rows)
