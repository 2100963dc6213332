"""Small formatting helpers for list columns and read-only fields."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django.contrib import admin


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


class OrderColumn:
    """For ordered inlines: view-only pages show a row's 1-based "Order" (a form-only field)."""

    @admin.display(description="Order")
    def order(self, obj: Any) -> int | None:
        return obj.position + 1 if obj.pk is not None else None
