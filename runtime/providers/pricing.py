"""Cost of one LLM response from the model definition's prices (USD per million tokens).

Reference §4.8: uncached prompt tokens at the input price, cached tokens at the
cached price (the input price when the model has none), completion tokens
(reasoning included: adapters report it inside ``output_tokens``) at the output
price; every amount rounded to 12 decimals. When the vendor reports what it
billed (OpenRouter ``usage.cost``) that figure is the total.

This is the one implementation: every attempt's log row gets its cost from
``cost_of``, and a thread's cost is the sum of its log rows (``thread_cost``).
``runtime.providers.cost`` re-exports it for the adapters' tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from runtime.core.spec import ModelDefinition
from runtime.providers.base import Usage
from runtime.store.protocol import LogQuery, LogRecord, Store

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
        """The prices of a model definition (missing prices are 0)."""
        return cls(model.input_price or 0.0, model.output_price or 0.0, model.cached_price)


@dataclass(frozen=True, slots=True)
class Cost:
    """Amounts in USD; ``total`` is the vendor-reported cost when there is one, else the sum."""

    input: float = 0.0
    cached: float = 0.0
    output: float = 0.0
    total: float = 0.0
    reported: bool = False


def compute_cost(usage: Usage, prices: Prices, reported_total: float | None = None) -> Cost:
    """The cost of ``usage`` at ``prices`` (``reported_total`` replaces the sum)."""
    cached_price = prices.cached if prices.cached is not None else prices.input
    cached_tokens = min(usage.cached_tokens, usage.input_tokens)
    uncached = usage.input_tokens - cached_tokens
    amounts = (
        round(uncached * prices.input / PER_MILLION, DECIMALS),
        round(cached_tokens * cached_price / PER_MILLION, DECIMALS),
        round(usage.output_tokens * prices.output / PER_MILLION, DECIMALS),
    )
    if reported_total is not None:
        return Cost(*amounts, round(reported_total, DECIMALS), reported=True)
    return Cost(*amounts, round(sum(amounts), DECIMALS))


def cost_of(model: ModelDefinition, usage: Usage, reported_total: float | None = None) -> Cost:
    """``compute_cost`` with the model definition's prices. No prices, no cost."""
    return compute_cost(usage, Prices.of(model), reported_total)


def total_cost(logs: Iterable[LogRecord]) -> float:
    """The sum of ``cost_total`` over log rows (every attempt counts, failed ones too)."""
    return round(sum(log.cost_total for log in logs), DECIMALS)


async def thread_cost(store: Store, thread_id: str) -> float:
    """What a thread cost so far: the sum of its LLM log rows."""
    return total_cost(await store.list_logs(thread_id, LogQuery(limit=None, kind="llm")))
