"""The log view's provider tools and sources: what the vendor ran for this request (search
queries, code, status) and the pages the answer cites, as a numbered list of links.

Only http(s) URLs become links (a vendor's ``javascript:`` URL stays text); every value is
escaped by ``format_html``.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

NONE = "–"


def _body(response: Any, key: str) -> list[dict[str, Any]]:
    items = response.get(key) if isinstance(response, dict) else None
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _summary(tool: dict[str, Any]) -> str:
    found = tool.get("result")
    result: dict[str, Any] = found if isinstance(found, dict) else {}
    queries = [a.get("query") for a in result.get("actions") or [] if isinstance(a, dict)]
    queries = [q for q in queries if q]
    if queries:
        return "searched: " + "; ".join(str(q) for q in queries)
    given = result.get("input")
    return json.dumps(given, ensure_ascii=False)[:300] if given else ""


def provider_tools_html(response: Any) -> SafeString | str:
    """One line per provider-run tool: name, vendor, status and what it was given."""
    tools = _body(response, "provider_tools")
    if not tools:
        return NONE
    rows = (
        (t.get("name", "?"), t.get("provider", "?"), t.get("status", "?"), _summary(t))
        for t in tools
    )
    return format_html(
        '<ul class="studio-provider-tools">{}</ul>',
        format_html_join("", "<li><code>{}</code> ({}, {}) {}</li>", rows),
    )


def _link(url: str, label: str) -> SafeString:
    if urlsplit(url).scheme in ("http", "https"):
        return format_html(
            '<a href="{}" target="_blank" rel="noopener noreferrer nofollow">{}</a>', url, label
        )
    return format_html("{} (not a web link: {})", label, url)


def sources_html(response: Any) -> SafeString | str:
    """The answer's sources, numbered in order of first citation, with the cited spans."""
    citations = _body(response, "citations")
    if not citations:
        return NONE
    order: dict[str, list[dict[str, Any]]] = {}
    for cite in citations:
        if cite.get("url"):
            order.setdefault(str(cite["url"]), []).append(cite)
    items = []
    for url, cites in order.items():
        spans = ", ".join(f"{c['start']}–{c['end']}" for c in cites if c.get("start") is not None)
        label = cites[0].get("title") or url
        items.append(
            format_html("<li>{} {}</li>", _link(url, label), f"[{spans}]" if spans else "")
        )
    return format_html(
        '<ol class="studio-sources">{}</ol>', format_html_join("", "{}", ((i,) for i in items))
    )
