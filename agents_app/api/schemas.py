"""Schemas shared by the routers."""

from __future__ import annotations

from typing import Any

from ninja import Schema


class ErrorOut(Schema):
    """Every error body: ``{"error": "<sentence>"}``."""

    error: str


ERRORS: dict[int, Any] = {
    400: ErrorOut,
    401: ErrorOut,
    403: ErrorOut,
    404: ErrorOut,
    409: ErrorOut,
    413: ErrorOut,
    423: ErrorOut,
    429: ErrorOut,
}


def id_list(raw: str | None) -> list[str] | None:
    """``a,b,c`` → ``['a', 'b', 'c']`` (``None`` when absent)."""
    if raw is None:
        return None
    return [part.strip() for part in raw.split(",") if part.strip()]
