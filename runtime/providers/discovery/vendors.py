"""Per-vendor model listings: the request, the paging, and the mapping to ``ProviderModelInfo``.

Each lister follows the vendor's own paging to the end (Anthropic ``after_id`` /
``has_more``, Gemini ``pageToken`` / ``nextPageToken``; OpenAI and OpenRouter answer in
one page) and maps only what the vendor states: OpenAI's list has ids and dates but no
prices or limits, so those stay empty rather than guessed.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, ClassVar

import httpx

from runtime.providers.discovery.fetch import MAX_PAGES, as_int, get_json
from runtime.providers.discovery.paging import model_capabilities, models_page
from runtime.providers.discovery.types import (
    ModelCapabilityHints,
    ProviderModelInfo,
    ProviderModelsPage,
    ProviderModelsQuery,
    usd_per_million,
)

ANTHROPIC_VERSION = "2023-06-01"


class ModelLister:
    """Lists one provider's models over an injected ``httpx.AsyncClient``."""

    provider: ClassVar[str] = ""
    vendor: ClassVar[str] = ""
    default_base_url: ClassVar[str] = ""

    def __init__(self, client: httpx.AsyncClient, base_url: str | None = None) -> None:
        self._client = client
        self.base_url = (base_url or self.default_base_url).rstrip("/")

    def auth_headers(self, key: str | None) -> dict[str, str]:
        raise NotImplementedError

    async def list_models(self, key: str | None) -> list[ProviderModelInfo]:
        raise NotImplementedError

    # The spec's provider interface names (0.15): getModels, getModelsPage, getModelCapabilities.

    async def get_models(self, key: str | None) -> list[ProviderModelInfo]:
        """Every model, sorted by id (one per id)."""
        unique = {m.id: m for m in await self.list_models(key)}
        return [unique[k] for k in sorted(unique)]

    async def get_models_page(
        self, key: str | None, query: ProviderModelsQuery | None = None
    ) -> ProviderModelsPage:
        return models_page(await self.get_models(key), query or ProviderModelsQuery())

    async def get_model_capabilities(
        self, key: str | None, model_id: str
    ) -> ModelCapabilityHints | None:
        return model_capabilities(await self.get_models(key), model_id)

    async def _get(self, path: str, key: str | None, params: dict[str, str] | None = None) -> Any:
        return await get_json(
            self._client,
            self.vendor,
            f"{self.base_url}{path}",
            headers=self.auth_headers(key),
            params=params,
            key=key,
        )


def _rows(payload: dict[str, Any], field: str) -> list[dict[str, Any]]:
    rows = payload.get(field)
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def _obj(row: dict[str, Any], name: str) -> dict[str, Any]:
    value = row.get(name)
    return value if isinstance(value, dict) else {}


def _supported(caps: dict[str, Any], name: str) -> bool | None:
    entry = caps.get(name)
    if isinstance(entry, dict) and isinstance(entry.get("supported"), bool):
        return bool(entry["supported"])
    return None


def _iso_seconds(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None


class OpenAILister(ModelLister):
    """``GET /v1/models`` → ``{object: "list", data: [{id, object, created, owned_by}]}``."""

    provider = "openai"
    vendor = "OpenAI"
    default_base_url = "https://api.openai.com/v1"

    def auth_headers(self, key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"} if key else {}

    async def list_models(self, key: str | None) -> list[ProviderModelInfo]:
        payload = await self._get("/models", key)
        return [
            ProviderModelInfo(
                id=str(row["id"]),
                name=str(row["id"]),
                created=as_int(row.get("created")),
                icon_id=self.provider,
            )
            for row in _rows(payload, "data")
            if row.get("id")
        ]


class AnthropicLister(ModelLister):
    """``GET /v1/models?limit=&after_id=`` → ``{data, has_more, first_id, last_id}``; a model
    is ``{type, id, display_name, created_at}`` plus, in newer answers, ``max_input_tokens``,
    ``max_tokens`` and ``capabilities.{image_input,structured_outputs,thinking}.supported``."""

    provider = "anthropic"
    vendor = "Anthropic"
    default_base_url = "https://api.anthropic.com/v1"
    page_size = 1000  # the documented maximum

    def auth_headers(self, key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if key:
            headers["x-api-key"] = key
        return headers

    async def list_models(self, key: str | None) -> list[ProviderModelInfo]:
        found: list[ProviderModelInfo] = []
        params = {"limit": str(self.page_size)}
        for _ in range(MAX_PAGES):
            payload = await self._get("/models", key, params)
            found.extend(self._model(row) for row in _rows(payload, "data") if row.get("id"))
            last = payload.get("last_id")
            if not payload.get("has_more") or not isinstance(last, str) or not last:
                break
            params = {"limit": str(self.page_size), "after_id": last}
        return found

    def _model(self, row: dict[str, Any]) -> ProviderModelInfo:
        caps = _obj(row, "capabilities")
        return ProviderModelInfo(
            id=str(row["id"]),
            name=str(row.get("display_name") or row["id"]),
            context_length=as_int(row.get("max_input_tokens")),
            max_output_tokens=as_int(row.get("max_tokens")),
            capabilities=ModelCapabilityHints(
                vision=_supported(caps, "image_input"),
                structured_outputs=_supported(caps, "structured_outputs"),
                reasoning=_supported(caps, "thinking"),
            ),
            created=_iso_seconds(row.get("created_at")),
            icon_id=self.provider,
        )


class GoogleLister(ModelLister):
    """``GET /v1beta/models?pageSize=&pageToken=`` → ``{models, nextPageToken}``. Only models
    that can ``generateContent`` are chat models (the list also has embeddings, Imagen, Veo)."""

    provider = "google"
    vendor = "Google"
    default_base_url = "https://generativelanguage.googleapis.com/v1beta"
    page_size = 1000

    def auth_headers(self, key: str | None) -> dict[str, str]:
        # A header, not ?key=: URLs end up in logs and exception texts.
        return {"x-goog-api-key": key} if key else {}

    async def list_models(self, key: str | None) -> list[ProviderModelInfo]:
        found: list[ProviderModelInfo] = []
        params = {"pageSize": str(self.page_size)}
        for _ in range(MAX_PAGES):
            payload = await self._get("/models", key, params)
            found.extend(
                self._model(row)
                for row in _rows(payload, "models")
                if row.get("name")
                and "generateContent" in (row.get("supportedGenerationMethods") or [])
            )
            token = payload.get("nextPageToken")
            if not isinstance(token, str) or not token:
                break
            params = {"pageSize": str(self.page_size), "pageToken": token}
        return found

    def _model(self, row: dict[str, Any]) -> ProviderModelInfo:
        model_id = str(row["name"]).removeprefix("models/")
        thinking = row.get("thinking")
        return ProviderModelInfo(
            id=model_id,
            name=str(row.get("displayName") or model_id),
            description=row.get("description") or None,
            context_length=as_int(row.get("inputTokenLimit")),
            max_output_tokens=as_int(row.get("outputTokenLimit")),
            capabilities=ModelCapabilityHints(
                reasoning=thinking if isinstance(thinking, bool) else None
            ),
            icon_id=self.provider,
        )


class OpenRouterLister(ModelLister):
    """``GET /api/v1/models`` → ``{data: [{id, name, description, context_length,
    architecture.input_modalities, pricing.{prompt,completion,input_cache_read} (USD per
    token, strings), top_provider.max_completion_tokens, supported_parameters}]}``."""

    provider = "openrouter"
    vendor = "OpenRouter"
    default_base_url = "https://openrouter.ai/api/v1"

    def auth_headers(self, key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"} if key else {}

    async def list_models(self, key: str | None) -> list[ProviderModelInfo]:
        payload = await self._get("/models", key)
        return [self._model(row) for row in _rows(payload, "data") if row.get("id")]

    def _model(self, row: dict[str, Any]) -> ProviderModelInfo:
        pricing = _obj(row, "pricing")
        arch = _obj(row, "architecture")
        top = _obj(row, "top_provider")
        raw_params = row.get("supported_parameters")
        stated = isinstance(raw_params, list)
        params: list[Any] = raw_params if isinstance(raw_params, list) else []
        inputs = arch.get("input_modalities")
        return ProviderModelInfo(
            id=str(row["id"]),
            name=str(row.get("name") or row["id"]),
            description=row.get("description") or None,
            context_length=as_int(row.get("context_length")) or as_int(top.get("context_length")),
            max_output_tokens=as_int(top.get("max_completion_tokens")),
            input_price=usd_per_million(pricing.get("prompt")),
            output_price=usd_per_million(pricing.get("completion")),
            cached_price=usd_per_million(pricing.get("input_cache_read")),
            capabilities=ModelCapabilityHints(
                vision=("image" in inputs) if isinstance(inputs, list) else None,
                function_calling=("tools" in params) if stated else None,
                structured_outputs=("structured_outputs" in params) if stated else None,
                reasoning=("reasoning" in params) if stated else None,
            ),
            icon_id=self.provider,
            slug=str(row["id"]),
            created=as_int(row.get("created")),
        )

    async def endpoints(self, key: str | None, slug: str) -> list[dict[str, Any]]:
        """``GET /models/{author}/{slug}/endpoints``: the upstream providers serving a model,
        each with its own prices (per million here) and limits."""
        payload = await self._get(f"/models/{slug}/endpoints", key)
        data = _obj(payload, "data")
        out = []
        for row in _rows(data, "endpoints"):
            pricing = _obj(row, "pricing")
            out.append(
                {
                    "name": row.get("name"),
                    "providerName": row.get("provider_name"),
                    "tag": row.get("tag"),
                    "contextLength": as_int(row.get("context_length")),
                    "maxOutputTokens": as_int(row.get("max_completion_tokens")),
                    "inputPrice": usd_per_million(pricing.get("prompt")),
                    "outputPrice": usd_per_million(pricing.get("completion")),
                    "cachedPrice": usd_per_million(pricing.get("input_cache_read")),
                    "quantization": row.get("quantization"),
                    "status": row.get("status"),
                    "supportedParameters": list(row.get("supported_parameters") or []),
                }
            )
        return out


class TestLister(ModelLister):
    """The scripted ``test`` provider: no network, no key; it lists the model ids it is
    given (the test-provider model definitions), and costs nothing."""

    provider = "test"
    vendor = "Test"

    def __init__(
        self,
        client: httpx.AsyncClient | None = None,
        base_url: str | None = None,
        model_ids: Iterable[str] = (),
    ) -> None:
        self.base_url = ""
        self.model_ids = sorted(set(model_ids)) or ["test-model"]

    def auth_headers(self, key: str | None) -> dict[str, str]:
        return {}

    async def list_models(self, key: str | None) -> list[ProviderModelInfo]:
        every = ModelCapabilityHints(vision=True, function_calling=True, structured_outputs=True)
        return [
            ProviderModelInfo(
                id=model_id,
                name=model_id,
                description="Answers from its script; no API key, no network.",
                input_price=0.0,
                output_price=0.0,
                capabilities=every,
                icon_id=self.provider,
            )
            for model_id in self.model_ids
        ]


LISTERS: dict[str, type[ModelLister]] = {
    cls.provider: cls
    for cls in (OpenAILister, AnthropicLister, GoogleLister, OpenRouterLister, TestLister)
}
