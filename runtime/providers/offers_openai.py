"""The tools OpenAI runs itself for a model (the spec's ``getTools``), by API.

Filled in with the Responses adapter; the registry of every vendor's offers reads
``openai_offers``.
"""

from __future__ import annotations

from runtime.definitions import ModelDefinition
from runtime.provider_tools import ProviderToolOffer


def openai_offers(model: ModelDefinition) -> dict[str, ProviderToolOffer]:
    """The provider tools OpenAI runs for ``model`` (none until the adapters send them)."""
    return {}
