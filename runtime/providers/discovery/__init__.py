"""Model discovery (spec 0.15 ``getModels`` / ``getModelsPage`` / ``getModelCapabilities``).

``list_models(provider, client, key, base_url)`` asks the vendor (following its paging);
``models_page(models, query)`` searches and pages a list locally (the service caches the
whole list, so paging a picker costs no vendor request); ``model_capabilities`` finds one
model's hints. No Django: the key comes from the caller, resolved as the adapters do.
"""

from __future__ import annotations

from collections.abc import Iterable

import httpx

from runtime.providers.compatible import catalog as compatible
from runtime.providers.discovery.paging import MAX_PER_PAGE, model_capabilities, models_page
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
    OpenAILister,
    OpenRouterLister,
    TestLister,
)

__all__ = [
    "LISTERS",
    "MAX_PER_PAGE",
    "ModelCapabilityHints",
    "ModelLister",
    "ProviderModelInfo",
    "ProviderModelsPage",
    "ProviderModelsQuery",
    "get_model_capabilities",
    "list_models",
    "can_list",
    "lister",
    "model_capabilities",
    "models_page",
    "usd_per_million",
]


def can_list(provider: str, base_url: str | None = None) -> bool:
    """Whether ``provider``'s models can be listed: a native vendor, the scripted one, or an
    OpenAI-compatible provider whose base URL needs no slot value (Workers AI's account id
    is only known in a thread's env, unless the model's base URL holds it)."""
    if provider in LISTERS:
        return True
    definition = compatible.definitions().get(provider)
    return definition is not None and "{" not in (base_url or definition.base_url)


def lister(
    provider: str,
    client: httpx.AsyncClient,
    base_url: str | None = None,
    *,
    test_models: Iterable[str] = (),
) -> ModelLister:
    """The lister for ``provider``; ``KeyError`` for a provider we cannot list. An
    OpenAI-compatible provider lists through ``GET {base}/models`` (its base URL, or the
    definition's when no ``{slot}`` is left in it)."""
    if not can_list(provider, base_url):
        raise KeyError(provider)
    definition = compatible.definitions().get(provider)
    if definition is not None and provider not in LISTERS:
        attrs = {"provider": provider, "vendor": definition.display}
        compatible_lister = type(f"{provider.title()}Lister", (OpenAILister,), attrs)
        return compatible_lister(client, base_url or definition.base_url)
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
    return await lister(provider, client, base_url, test_models=test_models).get_models(key)


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
