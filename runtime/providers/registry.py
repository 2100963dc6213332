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
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import httpx

from runtime.core import egress
from runtime.core.spec import ModelDefinition
from runtime.providers import ProviderRegistry
from runtime.providers.adapter import HTTPAdapter, KeyResolver
from runtime.providers.anthropic.provider import AnthropicProvider
from runtime.providers.base import INVALID_REQUEST, Provider, ProviderFactory, ProviderRequest
from runtime.providers.compatible import catalog as compatible
from runtime.providers.compatible.adapter import CompatibleProvider, slot_lookup_over
from runtime.providers.compatible.definition import ProviderDefinition
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
# The native adapters above; then every OpenAI-compatible provider (the first-party vendors
# and ``define_provider`` definitions), added by ``sync_defined``.
NATIVE: tuple[str, ...] = tuple(ADAPTERS)
KEY_NAMES: dict[str, str] = {name: cls.key_env for name, cls in ADAPTERS.items()}
# A model definition's ``api`` picks another adapter of the same provider (same key).
API_ADAPTERS: dict[tuple[str, str], type[HTTPAdapter]] = {
    ("openai", "responses"): OpenAIResponsesProvider,
}


def sync_defined() -> None:
    """Bring ``ADAPTERS``, ``KEY_NAMES`` and the egress rule's vendor hosts up to date with
    the compatible providers (built-in and defined); a removed definition leaves them."""
    current = compatible.definitions(load=False)
    for name in [n for n in ADAPTERS if n not in NATIVE and n not in current]:
        ADAPTERS.pop(name, None)
        KEY_NAMES.pop(name, None)
        egress.forget_official_hosts(name)
    for name, definition in current.items():
        known = ADAPTERS.get(name)
        if getattr(known, "definition", None) is definition:
            # A definition is frozen: its key name and hosts were taken when it came. Every
            # engine build syncs, so nothing is re-read here (issue #58: 64 calls a start).
            continue
        ADAPTERS[name] = CompatibleProvider.for_definition(definition)
        egress.register_official_hosts(name, definition.hosts)
        if definition.key_env:
            KEY_NAMES[name] = definition.key_env
        else:
            KEY_NAMES.pop(name, None)


def define(definition: ProviderDefinition, origin: str = "") -> ProviderDefinition:
    """Register a ``define_provider`` definition for this process (tests, discovery)."""
    kept = compatible.register(definition, origin)
    sync_defined()
    return kept


def undefine(name: str) -> None:
    compatible.unregister(name)
    sync_defined()


def discover_providers(
    folders: Iterable[str | Path], *, replace: bool = False
) -> list[ProviderDefinition]:
    """Import ``agents/providers/*.py`` of ``folders`` and register what they define
    (``replace``: forget the ones found before, as a reload of the code does)."""
    if replace:
        compatible.clear()
    found = compatible.discover(folders)
    sync_defined()
    return found


def known_providers() -> tuple[str, ...]:
    """Every provider name a model definition may give: native, compatible, ``test``."""
    return (*NATIVE, *compatible.definitions(), "test")


NATIVE_LABELS: dict[str, str] = {
    "openai": "OpenAI",
    "openrouter": "OpenRouter",
    "anthropic": "Anthropic",
    "google": "Google Gemini",
    "test": "Test (scripted, no API key)",
}


def provider_label(name: str) -> str:
    """How people read a provider's name (the name itself when unknown)."""
    definition = compatible.definitions().get(name)
    return definition.display if definition is not None else NATIVE_LABELS.get(name, name)


def provider_env(name: str) -> list[tuple[str, bool, bool, str]]:
    """The env values provider ``name`` reads: ``(env name, secret, required, description)``,
    the key first (the variable scans list them)."""
    definition = compatible.definitions().get(name)
    if definition is None:
        key = KEY_NAMES.get(name)
        return [(key, True, True, "Provider API key")] if key else []
    return [
        (
            slot.default_env,
            slot.type == "secret",
            slot.required and slot.default is None,
            slot.description or ("Provider API key" if slot.name == "api_key" else slot.name),
        )
        for slot in definition.slots
        if slot.default_env
    ]


def provider_env_names() -> set[str]:
    """Every env name any provider reads (keys and config slots)."""
    return {env for name in known_providers() for env, *_ in provider_env(name)}


def provider_definition(name: str) -> ProviderDefinition | None:
    """The compatible provider's definition (``None`` for a native adapter or unknown)."""
    return compatible.definitions().get(name)


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
    name = KEY_NAMES.get(provider, "")
    process_env = os.environ if environ is None else environ

    async def resolve(request: ProviderRequest) -> str | None:
        if not name:
            return None  # a provider that takes no key
        found = await env_lookup(name, request) if env_lookup is not None else None
        value: str | None
        if isinstance(found, EnvEntry):
            value, source = found.value, str(found.source)
        else:
            value, source = found, "thread"
        if not value and name:
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
    compatible.definitions()  # the host's code discovered first (agents/providers/)
    sync_defined()
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
        if issubclass(chosen, CompatibleProvider):
            env = os.environ if environ is None else environ
            wanted = {**wanted, "slot_lookup": slot_lookup_over(env_lookup, env)}
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


sync_defined()
