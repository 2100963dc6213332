"""Cost from a model's prices and a vendor-reported total: ``runtime.providers.pricing``, re-exported.

There is one implementation (``runtime.providers.pricing``); these names stay for the
adapters and their tests. ``CostBreakdown`` is ``runtime.providers.pricing.Cost``.
"""

from __future__ import annotations

from runtime.providers.pricing import DECIMALS, PER_MILLION, Cost, Prices, compute_cost, cost_of

CostBreakdown = Cost
model_cost = cost_of

__all__ = ["DECIMALS", "PER_MILLION", "CostBreakdown", "Prices", "compute_cost", "model_cost"]
