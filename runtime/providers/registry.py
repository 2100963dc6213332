"""Provider name → adapter factory, and where each adapter gets its API key.

``install(registry, client, env_lookup=...)`` registers the four HTTP adapters
on the engine's ``ProviderRegistry`` (``test`` is already there and maps to the
scripted ``TestProvider``). Keys are resolved per request, never stored on the
adapter: first through ``env_lookup`` (the engine's thread → agent → prompt →
user → instance chain, e.g. ``store_env_lookup(store)``), then the process
environment.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx

from runtime.definitions import ModelDefinition
from runtime.providers import ProviderRegistry
from runtime.providers.adapter import HTTPAdapter, KeyResolver
from runtime.providers.anthropic import AnthropicProvider
from runtime.providers.base import Provider, ProviderFactory, ProviderRequest
from runtime.providers.google import GoogleProvider
from runtime.providers.openai import OpenAIProvider
from runtime.providers.openai_responses import OpenAIResponsesProvider
from runtime.providers.openrouter import OpenRouterProvider
from runtime.providers.test_provider import TestProvider

ADAPTERS: dict[str, type[HTTPAdapter]] = {
    "openai": OpenAIProvider,
    "openrouter": OpenRouterProvider,
    "anthropic": AnthropicProvider,
    "google": GoogleProvider,
}
KEY_NAMES: dict[str, str] = {name: cls.key_env for name, cls in ADAPTERS.items()}
# A model definition's ``api`` picks another adapter of the same provider (same key).
API_ADAPTERS: dict[tuple[str, str], type[HTTPAdapter]] = {
    ("openai", "responses"): OpenAIResponsesProvider,
}


def adapter_class(cls: type[HTTPAdapter], model: ModelDefinition) -> type[HTTPAdapter]:
    """The adapter serving ``model``: its provider's, or the one its ``api`` names. No
    ``api`` keeps Chat Completions for OpenAI (models stored before the choice existed)."""
    if model.api is None:
        return cls
    return API_ADAPTERS.get((model.provider, model.api), cls)


# (env name, request) → value or None; the engine's env chain for the request's thread.
EnvLookup = Callable[[str, ProviderRequest], Awaitable[str | None]]


def key_resolver(
    provider: str, env_lookup: EnvLookup | None = None, environ: Mapping[str, str] | None = None
) -> KeyResolver:
    """A per-request key source for ``provider``: the env chain, then the process env."""
    name = KEY_NAMES[provider]
    process_env = os.environ if environ is None else environ

    async def resolve(request: ProviderRequest) -> str | None:
        value = await env_lookup(name, request) if env_lookup is not None else None
        return value or process_env.get(name) or None

    return resolve


def store_env_lookup(store: Any) -> EnvLookup:
    """An ``EnvLookup`` over ``Store.resolve_env`` (thread → agent → prompt → user → instance)."""

    async def lookup(name: str, request: ProviderRequest) -> str | None:
        thread_id = request.metadata.get("thread_id")
        if not thread_id:
            return None
        entry = await store.resolve_env(thread_id, name, request.metadata.get("prompt_name"))
        return entry.value if entry is not None else None

    return lookup


def adapter_factories(
    client: httpx.AsyncClient,
    *,
    env_lookup: EnvLookup | None = None,
    environ: Mapping[str, str] | None = None,
    **options: Any,
) -> dict[str, ProviderFactory]:
    """A factory per provider name (``options`` go to every adapter, e.g. ``stream=False``)."""
    factories: dict[str, ProviderFactory] = {"test": TestProvider.from_model}
    for name, cls in ADAPTERS.items():
        factories[name] = _factory(cls, client, key_resolver(name, env_lookup, environ), options)
    return factories


def _factory(
    cls: type[HTTPAdapter], client: httpx.AsyncClient, key: KeyResolver, options: dict[str, Any]
) -> ProviderFactory:
    def build(model: ModelDefinition) -> Provider:
        chosen = adapter_class(cls, model)
        return chosen.for_model(model, client=client, api_key=key, **options)

    return build


def install(
    registry: ProviderRegistry,
    client: httpx.AsyncClient,
    *,
    env_lookup: EnvLookup | None = None,
    environ: Mapping[str, str] | None = None,
    **options: Any,
) -> ProviderRegistry:
    """Register the HTTP adapters on ``registry``; returns it."""
    for name, factory in adapter_factories(
        client, env_lookup=env_lookup, environ=environ, **options
    ).items():
        registry.register(name, factory)
    return registry
