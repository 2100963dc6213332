"""Which tools each vendor runs itself for a model (the spec's ``getTools``), by provider.

Validation reads this to refuse a ``provider:<name>`` tool no model of the chain offers,
the catalog API lists it (``GET /api/providers/{name}/tools``), and a prompt's options
for a tool are checked against the offer's JSON Schema (``option_errors``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from runtime.core.provider_tools import ProviderToolOffer
from runtime.core.spec import ModelDefinition
from runtime.providers.anthropic.offers import anthropic_offers
from runtime.providers.google.offers import google_offers
from runtime.providers.openai.offers import openai_offers
from runtime.providers.openrouter.offers import openrouter_offers

OfferLookup = Callable[[ModelDefinition], dict[str, ProviderToolOffer]]

_BY_PROVIDER: dict[str, OfferLookup] = {
    "openai": openai_offers,
    "anthropic": anthropic_offers,
    "google": google_offers,
    "openrouter": openrouter_offers,
}


def provider_offers(model: ModelDefinition) -> dict[str, ProviderToolOffer]:
    """The provider tools ``model``'s vendor runs for it (none for the ``test`` provider)."""
    lookup = _BY_PROVIDER.get(model.provider)
    return lookup(model) if lookup is not None else {}


def allowed_offers(model: ModelDefinition) -> dict[str, ProviderToolOffer]:
    """What a prompt on ``model`` may use: the vendor's offers, narrowed to the model's
    ``providerTools`` when it lists any."""
    offers = provider_offers(model)
    if model.provider_tools is None:
        return offers
    return {name: offer for name, offer in offers.items() if name in model.provider_tools}


def option_errors(offer: ProviderToolOffer, options: dict[str, Any]) -> list[str]:
    """What is wrong with ``options`` for ``offer``, in plain words (empty: fine)."""
    from jsonschema import Draft202012Validator  # on use (runtime.tools.toolset says why)

    validator = Draft202012Validator(offer.options_schema or {"type": "object"})
    out = []
    for error in sorted(validator.iter_errors(options), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(p) for p in error.absolute_path)
        if error.validator == "additionalProperties":
            known = ", ".join(sorted(offer.options_schema.get("properties") or {})) or "none"
            out.append(f"{error.message}. Options '{offer.name}' takes: {known}.")
        elif error.validator == "not" and isinstance(error.validator_value, dict):
            both = " or ".join(error.validator_value.get("required") or []) or "these options"
            out.append(f"Give {both}, not both.")
        else:
            out.append(f"{where}: {error.message}" if where else error.message)
    return out
