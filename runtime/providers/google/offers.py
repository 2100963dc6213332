"""The tools Gemini runs itself for a model (the spec's ``getTools``): Google Search
grounding (``googleSearch``) and code execution (``codeExecution``), neither with options."""

from __future__ import annotations

from runtime.core.provider_tools import ProviderToolOffer
from runtime.core.spec import ModelDefinition

_NO_OPTIONS = {"type": "object", "additionalProperties": False, "properties": {}}

GOOGLE_SEARCH = ProviderToolOffer(
    name="google_search",
    description="Gemini grounds its answer in Google Search results and cites them.",
    options_schema=_NO_OPTIONS,
)
CODE_EXECUTION = ProviderToolOffer(
    name="code_execution",
    description="Gemini writes and runs Python code in Google's sandbox.",
    options_schema=_NO_OPTIONS,
)


def google_offers(model: ModelDefinition) -> dict[str, ProviderToolOffer]:
    """The provider tools Gemini runs for ``model``."""
    return {GOOGLE_SEARCH.name: GOOGLE_SEARCH, CODE_EXECUTION.name: CODE_EXECUTION}
