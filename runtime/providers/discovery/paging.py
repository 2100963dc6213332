"""Search and paging over a model list (the listing is fetched whole, then paged here)."""

from __future__ import annotations

from runtime.providers.discovery.types import (
    ModelCapabilityHints,
    ProviderModelInfo,
    ProviderModelsPage,
    ProviderModelsQuery,
)

MAX_PER_PAGE = 200


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
