"""Cost of one LLM response from the model definition's prices (USD per million tokens).

Reference §4.8: uncached prompt tokens at the input price, cached tokens at the
cached price (the input price when the model has none), completion tokens
(reasoning included: adapters report it inside ``output_tokens``) at the output
price; every amount rounded to 12 decimals. When the vendor reports what it
billed (OpenRouter ``usage.cost``) that figure is the total.

A model without prices (spec 0.2.0 pricing fallback): the vendor-reported total first, then
the kept table (``price_table.json``, with long-context tiers), else the cost is unknown
(``Cost.known`` false; the log row says so and sums count only what is known). Never a
silent $0. The scripted ``test`` provider is free.

This is the one implementation: every attempt's log row gets its cost from
``cost_of``, and a thread's cost is the sum of its log rows (``thread_cost``).
``runtime.providers.cost`` re-exports it for the adapters' tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from runtime.core.spec import ModelDefinition
from runtime.providers import price_table
from runtime.providers.base import Usage
from runtime.store.protocol import LogQuery, LogRecord, Store

PER_MILLION = 1_000_000
DECIMALS = 12


@dataclass(frozen=True, slots=True)
class Prices:
    """USD per million tokens; ``cached=None`` means cached tokens cost the input price.
    Above ``long_threshold`` input tokens the whole request is billed at the ``long_*``
    prices (those left unset keep the normal price)."""

    input: float = 0.0
    output: float = 0.0
    cached: float | None = None
    long_threshold: int | None = None
    long_input: float | None = None
    long_output: float | None = None
    long_cached: float | None = None

    @classmethod
    def of(cls, model: ModelDefinition) -> Prices:
        """The prices of a model definition (missing prices are 0)."""
        return cls(model.input_price or 0.0, model.output_price or 0.0, model.cached_price)

    @classmethod
    def from_table(cls, entry: dict[str, Any]) -> Prices:
        return cls(
            float(entry.get("input_price") or 0.0),
            float(entry.get("output_price") or 0.0),
            entry.get("cached_price"),
            entry.get("long_context_threshold"),
            entry.get("long_input_price"),
            entry.get("long_output_price"),
            entry.get("long_cached_price"),
        )

    def tier(self, usage: Usage) -> Prices:
        """The prices that apply to ``usage`` (the long-context tier above the threshold)."""
        if self.long_threshold is None or usage.input_tokens <= self.long_threshold:
            return self
        return Prices(
            self.input if self.long_input is None else self.long_input,
            self.output if self.long_output is None else self.long_output,
            self.cached if self.long_cached is None else self.long_cached,
        )


def has_prices(model: ModelDefinition) -> bool:
    """Whether the definition states any price (then missing ones are 0, as before)."""
    return any(p is not None for p in (model.input_price, model.output_price, model.cached_price))


def model_prices(model: ModelDefinition) -> tuple[Prices | None, str]:
    """The prices for ``model`` and where they come from: ``model`` (its definition),
    ``table`` (the kept table), ``free`` (the scripted provider), or ``(None, "unknown")``."""
    if has_prices(model):
        return Prices.of(model), "model"
    if model.provider == "test":
        return Prices(), "free"
    entry = price_table.lookup(model.provider, model.model)
    if entry is not None:
        return Prices.from_table(entry), "table"
    return None, "unknown"


@dataclass(frozen=True, slots=True)
class Cost:
    """Amounts in USD; ``total`` is the vendor-reported cost when there is one, else the sum."""

    input: float = 0.0
    cached: float = 0.0
    output: float = 0.0
    total: float = 0.0
    reported: bool = False
    # False: no price was known for the model and the vendor reported none (the amounts
    # are 0 only because nothing could be computed; shown as unknown, never as $0).
    known: bool = True


def compute_cost(usage: Usage, prices: Prices, reported_total: float | None = None) -> Cost:
    """The cost of ``usage`` at ``prices`` (``reported_total`` replaces the sum)."""
    prices = prices.tier(usage)
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
    """``compute_cost`` with the model's prices: its definition's, else what the vendor
    reported, else the kept table's; none of those, an unknown cost (unless nothing was
    used, which costs nothing)."""
    prices, _source = model_prices(model)
    if prices is None and reported_total is None:
        used = usage.input_tokens or usage.output_tokens or usage.cached_tokens
        return Cost(known=not used)
    return compute_cost(usage, prices or Prices(), reported_total)


def total_cost(logs: Iterable[LogRecord]) -> float:
    """The sum of ``cost_total`` over log rows (every attempt counts, failed ones too)."""
    return round(sum(log.cost_total for log in logs), DECIMALS)


async def thread_cost(store: Store, thread_id: str) -> float:
    """What a thread cost so far: the sum of its LLM log rows."""
    return total_cost(await store.list_logs(thread_id, LogQuery(limit=None, kind="llm")))
