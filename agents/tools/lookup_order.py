"""Demo tool for ``support_agent``: look up an order in a small built-in table.

A real tool would call the shop's API (with a key from ``state.env``); the demo keeps
its data here so the support demo runs with no services.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from runtime.extend import define_tool

DEMO_ORDERS: dict[str, dict[str, Any]] = {
    "A-1001": {
        "order_id": "A-1001",
        "status": "shipped",
        "items": ["Blue ceramic teapot", "2 × stoneware mug"],
        "carrier": "ParcelPost",
        "tracking_number": "PP-55821",
        "shipped_on": "2025-03-03",
        "estimated_delivery": "2025-03-06",
    },
    "A-1002": {
        "order_id": "A-1002",
        "status": "processing",
        "items": ["Loose-leaf sampler"],
        "estimated_dispatch": "2025-03-07",
    },
}


class LookupOrderArgs(BaseModel):
    order_id: str = Field(description="The order number, for example A-1001.")


@define_tool(
    "Look up an order by its number: status, items, carrier and delivery estimate.",
    LookupOrderArgs,
)
async def lookup_order(state: Any, args: LookupOrderArgs) -> dict[str, Any]:
    order = DEMO_ORDERS.get(args.order_id.strip().upper())
    if order is None:
        # Said to the model as a result, not raised: it should tell the customer, not retry.
        return {"found": False, "message": f"No order {args.order_id} exists."}
    return {"found": True, **order}
