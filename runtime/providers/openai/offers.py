"""The tools OpenAI runs itself for a model (the spec's ``getTools``), by API, and their
native request forms.

- Responses API models (``ModelDefinition.api == "responses"``): ``web_search``,
  ``code_interpreter``, ``file_search``, ``image_generation`` (each a ``tools[]`` entry
  ``{"type": name, ...options}``; code interpreter's options go in its ``container``).
- Chat Completions models: only the search models (``*-search-preview``, ``*-search-api``)
  search, through the top-level ``web_search_options`` (fixture
  ``openai/chat_nonstream_web_search_citations.yaml``); other chat models offer nothing.

Each offer's options are a JSON Schema object (closed: an unknown option is refused at
save time rather than dropped). The registry of every vendor's offers reads
``openai_offers``.
"""

from __future__ import annotations

import re
from typing import Any

from runtime.core.provider_tools import ProviderToolChoice, ProviderToolOffer
from runtime.core.spec import ModelDefinition


def _closed(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


_STRINGS = {"type": "array", "items": {"type": "string", "minLength": 1}}
_CONTEXT_SIZE = {
    "type": "string",
    "enum": ["low", "medium", "high"],
    "description": "How much of the pages found goes into the model's context.",
}
_USER_LOCATION = _closed(
    {
        "type": {"const": "approximate"},
        "country": {"type": "string", "description": "Two-letter ISO country code."},
        "city": {"type": "string"},
        "region": {"type": "string"},
        "timezone": {"type": "string", "description": "IANA time zone, e.g. Europe/Paris."},
    }
)

WEB_SEARCH = ProviderToolOffer(
    "web_search",
    "OpenAI searches the web and cites its sources.",
    _closed(
        {
            "search_context_size": _CONTEXT_SIZE,
            "user_location": _USER_LOCATION,
            "filters": _closed(
                {"allowed_domains": {**_STRINGS, "maxItems": 100, "description": "Only these."}}
            ),
        }
    ),
)
CHAT_WEB_SEARCH = ProviderToolOffer(
    "web_search",
    "The search model searches the web and cites its sources.",
    _closed({"search_context_size": _CONTEXT_SIZE, "user_location": _USER_LOCATION}),
)
CODE_INTERPRETER = ProviderToolOffer(
    "code_interpreter",
    "OpenAI runs Python in a sandbox container it creates for the request.",
    _closed({"file_ids": {**_STRINGS, "description": "OpenAI file ids put in the container."}}),
)
FILE_SEARCH = ProviderToolOffer(
    "file_search",
    "OpenAI searches your OpenAI vector stores.",
    _closed(
        {
            "vector_store_ids": {**_STRINGS, "minItems": 1, "maxItems": 2},
            "max_num_results": {"type": "integer", "minimum": 1, "maximum": 50},
        },
        required=["vector_store_ids"],
    ),
)
IMAGE_GENERATION = ProviderToolOffer(
    "image_generation",
    "OpenAI generates images; they are stored as thread files.",
    _closed(
        {
            "size": {"type": "string", "enum": ["auto", "1024x1024", "1024x1536", "1536x1024"]},
            "quality": {"type": "string", "enum": ["auto", "low", "medium", "high"]},
            "background": {"type": "string", "enum": ["auto", "opaque", "transparent"]},
            "output_format": {"type": "string", "enum": ["png", "jpeg", "webp"]},
        }
    ),
)
RESPONSES_OFFERS = (WEB_SEARCH, CODE_INTERPRETER, FILE_SEARCH, IMAGE_GENERATION)


_SEARCH_MODEL = re.compile(r"search-(preview|api)")


def is_search_model(model_id: str) -> bool:
    """A Chat Completions model that searches the web (``gpt-4o-mini-search-preview`` …)."""
    return bool(_SEARCH_MODEL.search(model_id))


def openai_offers(model: ModelDefinition) -> dict[str, ProviderToolOffer]:
    """The provider tools OpenAI runs for ``model``: the Responses tools for a Responses
    model, web search for a Chat search model, nothing for other chat models."""
    if model.api == "responses":
        return {offer.name: offer for offer in RESPONSES_OFFERS}
    if is_search_model(model.model):
        return {"web_search": CHAT_WEB_SEARCH}
    return {}


# --- native forms ------------------------------------------------------------------------


def _options(choice: ProviderToolChoice, offer: ProviderToolOffer) -> dict[str, Any]:
    """The choice's options this offer defines (validated at save time; others dropped)."""
    known = offer.options_schema.get("properties") or {}
    return {k: v for k, v in choice.options.items() if k in known}


def responses_tool(choice: ProviderToolChoice) -> dict[str, Any] | None:
    """A chosen provider tool as a Responses ``tools[]`` entry (``None``: not offered)."""
    offer = {o.name: o for o in RESPONSES_OFFERS}.get(choice.name)
    if offer is None:
        return None
    options = _options(choice, offer)
    if isinstance(options.get("user_location"), dict):  # the API requires the type
        options["user_location"] = {"type": "approximate", **options["user_location"]}
    if choice.name == "code_interpreter":
        return {"type": "code_interpreter", "container": {"type": "auto", **options}}
    return {"type": choice.name, **options}


def responses_includes(choices: list[ProviderToolChoice]) -> list[str]:
    """What the chosen tools need in ``include`` so their results come back."""
    names = {c.name for c in choices}
    wanted = {
        "web_search": "web_search_call.action.sources",
        "code_interpreter": "code_interpreter_call.outputs",
        "file_search": "file_search_call.results",
    }
    return [include for name, include in wanted.items() if name in names]


def chat_web_search_options(choices: list[ProviderToolChoice]) -> dict[str, Any] | None:
    """Chat Completions ``web_search_options`` for a chosen ``web_search`` (else ``None``)."""
    for choice in choices:
        if choice.name == "web_search":
            options = _options(choice, CHAT_WEB_SEARCH)
            location = options.get("user_location")
            if isinstance(location, dict):  # Chat nests the place under ``approximate``
                place = {k: v for k, v in location.items() if k != "type"}
                options["user_location"] = {"type": "approximate", "approximate": place}
            return options
    return None
