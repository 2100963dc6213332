"""Schemas shared by the routers."""

from __future__ import annotations

from typing import Any

from ninja import Schema
from ninja.params import HeaderEx, P


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


# The ``Idempotency-Key`` request header of writes a client may retry (docs/api.md).
IdempotencyKey = HeaderEx[
    str | None,
    P(
        alias="Idempotency-Key",
        description="1-255 printable ASCII characters (e.g. a UUID): a retry with the same key "
        "gets the first answer and writes nothing.",
    ),
]
