"""Providers by name: a small registry the engine asks for the provider of a model.

The HTTP adapters (openai, openrouter, anthropic, google) register their
factories through ``runtime.providers.registry.install``; tests can pin a model
name to a provider instance (``override``) to inspect exactly what it was sent.
"""

from __future__ import annotations

from runtime.core.spec import ModelDefinition
from runtime.providers.base import INVALID_REQUEST, Provider, ProviderError, ProviderFactory
from runtime.providers.test_provider import TestProvider


class ProviderRegistry:
    """Maps a provider name (``model.provider``) to a factory, and model names to overrides."""

    def __init__(self, factories: dict[str, ProviderFactory] | None = None) -> None:
        self._factories: dict[str, ProviderFactory] = {"test": TestProvider.from_model}
        self._factories.update(factories or {})
        self._overrides: dict[str, Provider] = {}

    def register(self, provider_name: str, factory: ProviderFactory) -> None:
        """Serve every model whose ``provider`` is ``provider_name`` with ``factory``."""
        self._factories[provider_name] = factory

    def override(self, model_name: str, provider: Provider) -> None:
        """Serve the model definition named ``model_name`` with this provider instance."""
        self._overrides[model_name] = provider

    def for_model(self, model: ModelDefinition) -> Provider:
        """The provider for a model definition; ``ProviderError`` when none is registered."""
        if model.name in self._overrides:
            return self._overrides[model.name]
        factory = self._factories.get(model.provider)
        if factory is None:
            raise ProviderError(
                f"No provider adapter is installed for '{model.provider}' (model {model.name}).",
                INVALID_REQUEST,
            )
        return factory(model)

    def replays(self, model: ModelDefinition) -> bool:
        """Whether ``model``'s provider reads ``request.sequence``: the scripted ``test``
        provider (and an override, which tests pin); the vendors' adapters never do, so the
        engine does not count a thread's stored responses for them."""
        return model.provider == "test" or model.name in self._overrides


__all__ = ["ProviderRegistry", "TestProvider"]
