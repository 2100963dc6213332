"""Cost of one LLM response from the model definition's prices (USD per million tokens)."""

from __future__ import annotations

from dataclasses import dataclass

from runtime.definitions import ModelDefinition
from runtime.providers.base import Usage

PER_TOKEN = 1_000_000


@dataclass(slots=True)
class Cost:
    """USD amounts, rounded to 12 decimals; ``total`` is their sum."""

    input: float = 0.0
    cached: float = 0.0
    output: float = 0.0

    @property
    def total(self) -> float:
        """Input + cached + output."""
        return round(self.input + self.cached + self.output, 12)


def cost_of(model: ModelDefinition, usage: Usage) -> Cost:
    """Uncached input at the input price, cached input at the cached price (else the
    input price), output (reasoning included) at the output price. No prices, no cost."""
    input_price = model.input_price or 0.0
    cached_price = model.cached_price if model.cached_price is not None else input_price
    uncached = max(usage.input_tokens - usage.cached_tokens, 0)
    return Cost(
        input=round(uncached * input_price / PER_TOKEN, 12),
        cached=round(usage.cached_tokens * cached_price / PER_TOKEN, 12),
        output=round(usage.output_tokens * (model.output_price or 0.0) / PER_TOKEN, 12),
    )
