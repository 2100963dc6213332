"""Sample side handler: an order desk that answers by rule, with no model.

An agent whose side is ``{"handler": "order_desk"}`` hands each message that side receives
to ``answer`` (once); the text it returns is the side's reply. Try it with
``docs/definitions.md``'s handler example (a person on side B). A real handler would read
the shop's API (with a key from ``state.env``); the sample keeps its data here.
"""

from __future__ import annotations

import re
from typing import Any

from runtime.extend import define_handler

ORDERS = {
    "A-1001": "shipped on 3 March with ParcelPost (tracking PP-55821)",
    "A-1002": "being packed; it leaves the warehouse by 7 March",
}
ORDER_NUMBER = re.compile(r"\bA-\d{4}\b")


def answer(state: Any, message: Any) -> str:
    """The status of every order number in the message, or a request for one."""
    numbers = ORDER_NUMBER.findall((message.content or "").upper())
    if not numbers:
        return "Please send your order number (it looks like A-1001)."
    return " ".join(
        f"Order {n} is {ORDERS[n]}." if n in ORDERS else f"I cannot find order {n}."
        for n in dict.fromkeys(numbers)
    )


order_desk = define_handler(
    name="order_desk",
    description="Answers order-status questions by rule (order numbers like A-1001): no model.",
    execute=answer,
)
