"""The tools OpenRouter runs itself for a model (the spec's ``getTools``): its
``openrouter:web_search`` server tool, sent as ``{type, parameters}``."""

from __future__ import annotations

from runtime.core.provider_tools import ProviderToolOffer
from runtime.core.spec import ModelDefinition

WEB_SEARCH = ProviderToolOffer(
    name="web_search",
    description="OpenRouter searches the web for any model and cites the pages it used.",
    options_schema={
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "max_uses": {"type": "integer", "minimum": 1, "description": "Searches per request."},
            "search_context_size": {
                "enum": ["low", "medium", "high"],
                "description": "How much of each page the model reads.",
            },
        },
    },
)


def openrouter_offers(model: ModelDefinition) -> dict[str, ProviderToolOffer]:
    """The provider tools OpenRouter runs for ``model`` (any model it routes)."""
    return {WEB_SEARCH.name: WEB_SEARCH}
