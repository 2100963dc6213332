"""Provider name → adapter factory, and where each adapter gets its API key.

``install(registry, client, env_lookup=...)`` registers the four HTTP adapters
on the engine's ``ProviderRegistry`` (``test`` is already there and maps to the
scripted ``TestProvider``). Keys are resolved per request, never stored on the
adapter: first through ``env_lookup`` (the engine's thread → agent → prompt →
user → instance chain, e.g. ``store_env_lookup(store)``), then the process
environment.

``key_rule`` (the egress key rule, docs/security.md) is asked with the key's tier before it
goes to a model's base URL; when it gives a reason, nothing is sent and the
step fails with that reason (``vendor_code`` ``key_withheld``).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx

from runtime.core.spec import ModelDefinition
from runtime.providers import ProviderRegistry
from runtime.providers.adapter import HTTPAdapter, KeyResolver
from runtime.providers.anthropic.provider import AnthropicProvider
from runtime.providers.base import INVALID_REQUEST, Provider, ProviderFactory, ProviderRequest
from runtime.providers.errors import AdapterError
from runtime.providers.google.provider import GoogleProvider
from runtime.providers.openai.chat_completions import OpenAIProvider
from runtime.providers.openai.responses import OpenAIResponsesProvider
from runtime.providers.openrouter.provider import OpenRouterProvider
from runtime.providers.test_provider import TestProvider
from runtime.store.protocol import EnvEntry

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


# (env name, request) → the value and its tier, or None; the engine's env chain for the
# request's thread. A plain string counts as the thread's own value.
EnvLookup = Callable[[str, ProviderRequest], Awaitable[EnvEntry | str | None]]
# (provider, the key's tier: thread/agent/prompt/user/instance/process, the model's base URL
# or None for the vendor's default) → why the key must not go there, or None.
KeyRule = Callable[[str, str, str | None], Awaitable[str | None]]

KEY_WITHHELD = "key_withheld"


def key_resolver(
    provider: str,
    env_lookup: EnvLookup | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    base_url: str | None = None,
    key_rule: KeyRule | None = None,
) -> KeyResolver:
    """A per-request key source for ``provider``: the env chain, then the process env;
    ``key_rule`` may withhold it from ``base_url`` (then ``AdapterError``, nothing sent)."""
    name = KEY_NAMES[provider]
    process_env = os.environ if environ is None else environ

    async def resolve(request: ProviderRequest) -> str | None:
        found = await env_lookup(name, request) if env_lookup is not None else None
        value: str | None
        if isinstance(found, EnvEntry):
            value, source = found.value, str(found.source)
        else:
            value, source = found, "thread"
        if not value:
            value, source = process_env.get(name) or None, "process"
        if value and key_rule is not None:
            reason = await key_rule(provider, source, base_url)
            if reason:
                raise AdapterError(
                    reason, INVALID_REQUEST, retryable=False, vendor_code=KEY_WITHHELD
                )
        return value

    return resolve


def store_env_lookup(store: Any) -> EnvLookup:
    """An ``EnvLookup`` over ``Store.resolve_env`` (thread → agent → prompt → user → instance)."""

    async def lookup(name: str, request: ProviderRequest) -> EnvEntry | None:
        thread_id = request.metadata.get("thread_id")
        if not thread_id:
            return None
        entry = await store.resolve_env(thread_id, name, request.metadata.get("prompt_name"))
        if entry is None or not entry.value:
            return None
        return EnvEntry(
            entry.value, getattr(entry, "type", "secret"), getattr(entry, "source", "thread")
        )

    return lookup


def adapter_factories(
    client: httpx.AsyncClient,
    *,
    env_lookup: EnvLookup | None = None,
    environ: Mapping[str, str] | None = None,
    key_rule: KeyRule | None = None,
    **options: Any,
) -> dict[str, ProviderFactory]:
    """A factory per provider name (``options`` go to every adapter, e.g. ``stream=False``)."""
    factories: dict[str, ProviderFactory] = {"test": TestProvider.from_model}
    for name, cls in ADAPTERS.items():
        factories[name] = _factory(name, cls, client, env_lookup, environ, key_rule, options)
    return factories


def _factory(
    provider: str,
    cls: type[HTTPAdapter],
    client: httpx.AsyncClient,
    env_lookup: EnvLookup | None,
    environ: Mapping[str, str] | None,
    key_rule: KeyRule | None,
    options: dict[str, Any],
) -> ProviderFactory:
    def build(model: ModelDefinition) -> Provider:
        chosen = adapter_class(cls, model)
        # The key source knows the model's base URL: the key rule decides per address.
        key = key_resolver(
            provider, env_lookup, environ, base_url=model.base_url, key_rule=key_rule
        )
        caps = model.capabilities
        # A model that says supportsStreaming: false is asked for one whole reply (spec 0.2.0).
        wanted = (
            {**options, "stream": False} if caps and caps.supports_streaming is False else options
        )
        return chosen.for_model(model, client=client, api_key=key, **wanted)

    return build


def install(
    registry: ProviderRegistry,
    client: httpx.AsyncClient,
    *,
    env_lookup: EnvLookup | None = None,
    environ: Mapping[str, str] | None = None,
    key_rule: KeyRule | None = None,
    **options: Any,
) -> ProviderRegistry:
    """Register the HTTP adapters on ``registry``; returns it."""
    for name, factory in adapter_factories(
        client, env_lookup=env_lookup, environ=environ, key_rule=key_rule, **options
    ).items():
        registry.register(name, factory)
    return registry
