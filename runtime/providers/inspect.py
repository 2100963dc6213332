"""A logged request shown as another provider would have sent it (the log inspector's
"view as"). Pure: takes the stored request body, returns a vendor body or a reason.

A log keeps either the neutral request (providers without a wire format, ``test``) or
the exact vendor request plus a summary. The neutral form renders into any provider; a
vendor request is shown as it was for its own provider only: it cannot be translated
back without losing what the vendor format does not carry.
"""

from __future__ import annotations

from typing import Any, cast

import httpx

from runtime.core.spec import ReasoningConfig
from runtime.providers.adapter import strip_inline_data
from runtime.providers.base import ProviderRequest, ToolSchema
from runtime.providers.registry import ADAPTERS


class CannotRender(ValueError):
    """The logged request cannot be shown in the requested provider's format."""


def _neutral(body: dict[str, Any]) -> ProviderRequest:
    reasoning = body.get("reasoning")
    return ProviderRequest(
        model=str(body.get("model") or ""),
        system=str(body.get("system") or ""),
        messages=list(body.get("messages") or []),
        tools=[
            ToolSchema(
                name=str(t.get("name")),
                description=str(t.get("description") or ""),
                parameters=t.get("parameters") or {"type": "object", "properties": {}},
            )
            for t in body.get("tools") or []
            if isinstance(t, dict)
        ],
        tool_choice=body.get("tool_choice") or "auto",
        parallel_tool_calls=body.get("parallel_tool_calls"),
        reasoning=ReasoningConfig.model_validate(reasoning)
        if isinstance(reasoning, dict)
        else None,
    )


def render_as(provider: str, logged_provider: str, body: Any) -> dict[str, Any]:
    """The request ``body`` of a ``logged_provider`` log in ``provider``'s native format."""
    if provider not in ADAPTERS and provider != "test":
        raise CannotRender(f"Unknown provider: {provider}")
    if not isinstance(body, dict):
        raise CannotRender("This log has no request body")
    is_vendor = isinstance(body.get("summary"), dict) and "body" in body
    if is_vendor:
        if provider != logged_provider:
            raise CannotRender(
                f"This request was sent to {logged_provider}; it can only be shown in that format"
            )
        vendor: dict[str, Any] = body["body"]
        return vendor
    if provider == "test":
        return body
    # Building a request never touches the client: no connection is opened.
    adapter = ADAPTERS[provider](cast(httpx.AsyncClient, None), None, None)
    prepared = adapter.build_request(_neutral(body))
    rendered: dict[str, Any] = strip_inline_data(prepared.body)
    return rendered
