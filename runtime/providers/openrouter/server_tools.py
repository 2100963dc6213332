"""OpenRouter's web search server tool: sent, recorded, never run here.

``provider:web_search`` goes out as ``{type: "openrouter:web_search", parameters: {max_uses,
search_context_size}}``. OpenRouter answers with ``url_citation`` annotations on the message
(streamed as ``delta.annotations`` before the text) and counts the searches in
``usage.server_tool_use_details``; it does not say the query. The pages become one
``ProviderToolDone`` + ``WebSearchDone`` for the response and ``CitationsFound``; an
annotation with ``start_index == end_index`` cites the page without a span.
"""

from __future__ import annotations

from typing import Any

from runtime.core.provider_tools import (
    Citation,
    CitationsFound,
    ProviderExecutedToolResult,
    ProviderToolChoice,
    ProviderToolDone,
    WebSearchDone,
)
from runtime.providers.base import INVALID_REQUEST, ProviderError, StreamEvent

WEB_SEARCH_TYPE = "openrouter:web_search"
EXCERPT_CHARS = 500  # of a page's text kept as the citation's ``cited_text``


def openrouter_tools(choices: list[ProviderToolChoice]) -> list[dict[str, Any]]:
    """The prompt's provider tools as OpenRouter server tools."""
    out = []
    for choice in choices:
        if choice.name != "web_search":
            raise ProviderError(
                f"OpenRouter does not run a tool named '{choice.name}' (it offers web_search).",
                INVALID_REQUEST,
            )
        tool: dict[str, Any] = {"type": WEB_SEARCH_TYPE}
        if choice.options:
            tool["parameters"] = dict(choice.options)
        out.append(tool)
    return out


class Annotations:
    """Collects a response's ``url_citation`` annotations."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def feed(self, annotations: Any) -> None:
        for item in annotations if isinstance(annotations, list) else []:
            if isinstance(item, dict) and item.get("type") == "url_citation":
                cite = item.get("url_citation") or item  # nested (chat) or flat
                if isinstance(cite, dict) and cite.get("url"):
                    self.items.append(cite)

    def events(self, response_id: str | None, usage: Any) -> list[StreamEvent]:
        """The search record and citations, once the response is complete."""
        details = usage.get("server_tool_use_details") if isinstance(usage, dict) else None
        searches = int((details or {}).get("web_search_requests") or 0)
        if not self.items and not searches:
            return []
        sources = [
            {"type": "url", "url": str(c["url"]), "title": c.get("title") or None}
            for c in self.items
        ]
        tool_id = f"{response_id or 'response'}:web_search"
        action = {"type": "search", "sources": sources}
        record = ProviderExecutedToolResult(
            id=tool_id,
            name="web_search",
            provider="openrouter",
            result={"actions": [action], "results": sources},
            metadata={"web_search_requests": searches} if searches else None,
        )
        events: list[StreamEvent] = [
            ProviderToolDone(record),
            WebSearchDone(tool_id, {"status": "completed", "actions": [action]}),
        ]
        citations = [_citation(c) for c in self.items]
        if citations:
            events.append(CitationsFound(citations))
        return events


def _citation(raw: dict[str, Any]) -> Citation:
    start, end = raw.get("start_index"), raw.get("end_index")
    spans = isinstance(start, int) and isinstance(end, int) and end > start
    excerpt = raw.get("content")
    return Citation(
        url=str(raw["url"]),
        title=raw.get("title") or None,
        start=start if spans else None,
        end=end if spans else None,
        cited_text=str(excerpt)[:EXCERPT_CHARS] if excerpt else None,
    )
