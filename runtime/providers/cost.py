"""Cost of one response from the model definition's prices (USD per million tokens).

Reference §4.8: uncached prompt tokens at the input price, cached tokens at the
cached price (the input price when the model has none), completion tokens
(reasoning included: adapters report it inside ``output_tokens``) at the output
price; every amount rounded to 12 decimals. When the vendor reports what it
billed (OpenRouter ``usage.cost``) that figure is the total.

``runtime.pricing.cost_of`` applies the same rules for the engine's log rows;
this module adds the vendor-reported total and works from bare prices.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.definitions import ModelDefinition
from runtime.providers.base import Usage

PER_MILLION = 1_000_000
DECIMALS = 12


@dataclass(frozen=True, slots=True)
class Prices:
    """USD per million tokens; ``cached=None`` means cached tokens cost the input price."""

    input: float = 0.0
    output: float = 0.0
    cached: float | None = None

    @classmethod
    def of(cls, model: ModelDefinition) -> Prices:
        return cls(model.input_price or 0.0, model.output_price or 0.0, model.cached_price)


@dataclass(frozen=True, slots=True)
class CostBreakdown:
    """Amounts in USD; ``total`` is the vendor-reported cost when there is one, else the sum."""

    input: float
    cached: float
    output: float
    total: float
    reported: bool = False


def compute_cost(
    usage: Usage, prices: Prices, reported_total: float | None = None
) -> CostBreakdown:
    """The cost of ``usage`` at ``prices``."""
    cached_price = prices.cached if prices.cached is not None else prices.input
    cached_tokens = min(usage.cached_tokens, usage.input_tokens)
    uncached = usage.input_tokens - cached_tokens
    amounts = (
        round(uncached * prices.input / PER_MILLION, DECIMALS),
        round(cached_tokens * cached_price / PER_MILLION, DECIMALS),
        round(usage.output_tokens * prices.output / PER_MILLION, DECIMALS),
    )
    if reported_total is not None:
        return CostBreakdown(*amounts, round(reported_total, DECIMALS), reported=True)
    return CostBreakdown(*amounts, round(sum(amounts), DECIMALS))


def model_cost(
    model: ModelDefinition, usage: Usage, reported_total: float | None = None
) -> CostBreakdown:
    """``compute_cost`` with the model definition's prices."""
    return compute_cost(usage, Prices.of(model), reported_total)
