"""The tools Anthropic runs itself for a model (the spec's ``getTools``).

``web_search`` is the ``web_search_20250305`` server tool, ``code_execution`` the
``code_execution_20260120`` one (bash and file tools in a sandbox container); both are
sent with the prompt's options in the Messages API's own names
(``runtime.providers.anthropic.server_tools``).
"""

from __future__ import annotations

from runtime.core.provider_tools import ProviderToolOffer
from runtime.core.spec import ModelDefinition

_DOMAINS = {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1}

WEB_SEARCH = ProviderToolOffer(
    name="web_search",
    description="Anthropic searches the web and cites its sources (web_search_20250305).",
    options_schema={
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "max_uses": {"type": "integer", "minimum": 1, "description": "Searches per request."},
            "allowed_domains": {**_DOMAINS, "description": "Only search these domains."},
            "blocked_domains": {**_DOMAINS, "description": "Never search these domains."},
            "user_location": {
                "type": "object",
                "additionalProperties": False,
                "description": "Where the user is, to localise results.",
                "properties": {
                    "type": {"const": "approximate"},
                    "city": {"type": "string"},
                    "region": {"type": "string"},
                    "country": {"type": "string", "minLength": 2, "maxLength": 2},
                    "timezone": {"type": "string"},
                },
            },
        },
        "not": {"required": ["allowed_domains", "blocked_domains"]},
    },
)

CODE_EXECUTION = ProviderToolOffer(
    name="code_execution",
    description="Anthropic runs code in a sandbox container (code_execution_20260120).",
    options_schema={"type": "object", "additionalProperties": False, "properties": {}},
)


def anthropic_offers(model: ModelDefinition) -> dict[str, ProviderToolOffer]:
    """The provider tools Anthropic runs for ``model`` (every current Claude model)."""
    return {WEB_SEARCH.name: WEB_SEARCH, CODE_EXECUTION.name: CODE_EXECUTION}
