"""The tools a vendor runs itself for a model (``GET /api/providers/{name}/tools``).

The reference's ``getTools(modelId)``: each tool's name, description and ``tenvs`` (the
values it needs; none of ours needs any), plus our ``options_schema``, the JSON Schema of
the options a prompt's ``provider:<name>`` entry may set.
"""

from __future__ import annotations

from typing import Any

from agents_app.base.errors import DomainError, Invalid, NotFound
from agents_app.models import LanguageModel
from agents_app.services.definitions.rows import model_definition
from agents_app.services.operations.instance_info import is_provider
from runtime.core.spec import ModelDefinition
from runtime.providers.offers import allowed_offers, provider_offers


def provider_tools(provider: str, model: str | None = None) -> list[dict[str, Any]]:
    """The tools ``provider`` runs for ``model``: a model definition's name (narrowed to its
    ``providerTools`` when it lists any) or the vendor's model id; none: any model."""
    if not is_provider(provider):
        raise NotFound(f"Provider not found: {provider}")
    row = LanguageModel.objects.filter(name=model).first() if model else None
    if row is not None:
        if row.provider != provider:
            raise Invalid(
                f"Model '{model}' is served by provider '{row.provider}', not '{provider}'. "
                f"Ask /api/providers/{row.provider}/tools?model={model}."
            )
        offers = allowed_offers(model_definition(row))
    else:
        stub = ModelDefinition(name=model or provider, provider=provider, model=model or "")  # type: ignore[arg-type]
        offers = provider_offers(stub)
    return [
        {
            "name": offer.name,
            "description": offer.description,
            "tenvs": [],
            "options_schema": offer.options_schema,
        }
        for offer in offers.values()
    ]


def options_by_model() -> dict[str, dict[str, Any]]:
    """For each model (by primary key) whose vendor runs tools itself: each tool's options
    schema, for the studio's options form (``static/studio/provider_options.js``)."""
    out: dict[str, dict[str, Any]] = {}
    for row in LanguageModel.objects.exclude(provider="test").only("pk", "name", "provider"):
        try:
            tools = provider_tools(row.provider, row.name)
        except DomainError:
            continue
        out[str(row.pk)] = {t["name"]: t["options_schema"] for t in tools}
    return out
