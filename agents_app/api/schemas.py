"""Schemas shared by the routers."""

from __future__ import annotations

from typing import Any

from ninja import Schema
from ninja.params import HeaderEx, P

from agents_app.base.errors import Invalid


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


def refuse_unsupported(values: dict[str, Any], reasons: dict[str, str]) -> None:
    """A 400 naming the first field of ``reasons`` that ``values`` sets.

    The reference accepts some fields and drops them; we refuse them instead of accepting
    configuration we then ignore. An empty value (``None``, ``{}``, ``[]``) configures
    nothing and passes, so clients that always send the key keep working.
    """
    for field, reason in reasons.items():
        value = values.get(field)
        if value is not None and value != {} and value != []:
            raise Invalid(f"Invalid request: {field}: {reason}")
