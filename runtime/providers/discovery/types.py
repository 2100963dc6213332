"""The spec's model-discovery types (0.15: ``ProviderModelInfo``, ``ProviderModelsQuery``,
``ProviderModelsPage``), as plain dataclasses.

Prices are USD per million tokens (the unit of ``ModelDefinition.inputPrice``), whatever
unit the vendor used; a field the vendor did not give stays ``None`` (never guessed), so a
picker fills only what is known. ``dump()`` gives the camelCase JSON the API returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class ModelCapabilityHints:
    """Capability flags the vendor's listing states (``None``: the listing does not say).

    The first three are the spec's ``ModelCapabilities``; ``reasoning`` is what the
    reference's ``reasoningLevels`` hint grows from (thinking / reasoning models).
    """

    vision: bool | None = None
    function_calling: bool | None = None
    structured_outputs: bool | None = None
    reasoning: bool | None = None

    def dump(self) -> dict[str, Any]:
        out = {
            "vision": self.vision,
            "functionCalling": self.function_calling,
            "structuredOutputs": self.structured_outputs,
            "reasoning": self.reasoning,
        }
        return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True, slots=True)
class ProviderModelInfo:
    """One model as its provider lists it."""

    id: str
    name: str
    description: str | None = None
    context_length: int | None = None
    max_output_tokens: int | None = None
    input_price: float | None = None
    output_price: float | None = None
    cached_price: float | None = None
    capabilities: ModelCapabilityHints = field(default_factory=ModelCapabilityHints)
    icon_id: str | None = None
    slug: str | None = None
    created: int | None = None  # Unix seconds, when the vendor says

    def dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "contextLength": self.context_length,
            "maxOutputTokens": self.max_output_tokens,
            "inputPrice": self.input_price,
            "outputPrice": self.output_price,
            "cachedPrice": self.cached_price,
            "capabilities": self.capabilities.dump(),
            "iconId": self.icon_id,
            "slug": self.slug,
            "created": self.created,
        }
        return {k: v for k, v in out.items() if v is not None}

    @classmethod
    def load(cls, data: dict[str, Any]) -> ProviderModelInfo:
        """The inverse of ``dump`` (the service caches dumped lists)."""
        caps = data.get("capabilities") or {}
        return cls(
            id=data["id"],
            name=data.get("name") or data["id"],
            description=data.get("description"),
            context_length=data.get("contextLength"),
            max_output_tokens=data.get("maxOutputTokens"),
            input_price=data.get("inputPrice"),
            output_price=data.get("outputPrice"),
            cached_price=data.get("cachedPrice"),
            capabilities=ModelCapabilityHints(
                vision=caps.get("vision"),
                function_calling=caps.get("functionCalling"),
                structured_outputs=caps.get("structuredOutputs"),
                reasoning=caps.get("reasoning"),
            ),
            icon_id=data.get("iconId"),
            slug=data.get("slug"),
            created=data.get("created"),
        )

    def with_icon(self, icon_id: str) -> ProviderModelInfo:
        return self if self.icon_id else replace(self, icon_id=icon_id)


@dataclass(frozen=True, slots=True)
class ProviderModelsQuery:
    """What a picker asks for: a search text and a page (1-based)."""

    search: str = ""
    page: int = 1
    per_page: int = 50


@dataclass(frozen=True, slots=True)
class ProviderModelsPage:
    """One page of a provider's models."""

    models: list[ProviderModelInfo]
    page: int
    per_page: int
    total: int

    @property
    def has_next_page(self) -> bool:
        return self.page * self.per_page < self.total

    def dump(self) -> dict[str, Any]:
        return {
            "models": [m.dump() for m in self.models],
            "page": self.page,
            "perPage": self.per_page,
            "total": self.total,
            "hasNextPage": self.has_next_page,
        }


def usd_per_million(per_token: Any) -> float | None:
    """A per-token price (number or decimal string, OpenRouter's unit) in USD per million
    tokens; ``None`` for a missing, unreadable or negative value (OpenRouter uses ``-1``
    for "varies" on routers)."""
    try:
        value = float(per_token)
    except (TypeError, ValueError):
        return None
    if value < 0:
        return None
    # round() keeps 0.000003 * 1e6 from printing as 2.9999999999999996.
    return round(value * 1_000_000, 6)
