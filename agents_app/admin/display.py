"""Small formatting helpers for list columns and read-only fields."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django.contrib import admin
from django.utils.html import format_html


def from_us(microseconds: int | None) -> datetime | None:
    """Message and log times are integer microseconds (the wire format); show them as dates."""
    if microseconds is None:
        return None
    return datetime.fromtimestamp(microseconds / 1_000_000, tz=UTC)


def short_id(value: Any) -> str:
    return str(value)[:8]


def excerpt(text: str | None, length: int = 80) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= length else text[: length - 1] + "…"


def json_excerpt(value: Any, length: int = 80) -> str:
    return excerpt(json.dumps(value, ensure_ascii=False), length)


def json_block(value: Any) -> str:
    """A stored JSON record on a detail page: a code block (what the engine or a tool wrote,
    for whoever debugs it), never running text a person is meant to read."""
    if value in (None, {}, []):
        return "–"
    text = json.dumps(value, ensure_ascii=False, indent=2)
    return format_html('<pre class="studio-log">{}</pre>', text)


def verbatim(text: str) -> str:
    """Words quoted from a conversation (a person's, a model's or a tool's), as they were:
    marked so, since they are not the studio's own words (the page walk's exception)."""
    return format_html("<span data-verbatim>{}</span>", text) if text else "–"


class OrderColumn:
    """For ordered inlines: view-only pages show a row's 1-based "Order" (a form-only field)."""

    @admin.display(description="Order")
    def order(self, obj: Any) -> int | None:
        return obj.position + 1 if obj.pk is not None else None
