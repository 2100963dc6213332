"""Demo stop tool for ``intent_classifier``: records the intent the model chose.

The agent's side A names this tool as its ``stopTool`` with ``stopToolResponseProperty``
``intent``, so calling it ends the turn and ``intent`` is the outcome.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from runtime.extend import define_tool

Intent = Literal["order_status", "refund", "complaint", "product_question", "other"]


class ClassifyArgs(BaseModel):
    intent: Intent = Field(description="The customer's intent.")
    confidence: float = Field(default=1.0, ge=0, le=1, description="How sure you are, 0 to 1.")


@define_tool("Record the intent of the customer's latest message.", ClassifyArgs)
async def classify(state: Any, args: ClassifyArgs) -> dict[str, Any]:
    return {"intent": args.intent, "confidence": args.confidence}
